#!/usr/bin/env bash
# Copy one carried bundle part (.gpu/BUNDLE/PART) to /tmp/stage-BUNDLE/ on the device machine.
set -euo pipefail
bundle=${1:?usage: stage.sh vllm|sglang PART}; part=${2:?usage: stage.sh vllm|sglang PART}
mkdir -p "/tmp/stage-$bundle"
cp -r ".gpu/$bundle/$part" "/tmp/stage-$bundle/"
touch "/tmp/stage-$bundle/$part.done"   # the copy is complete (a sitting's queue installs when all parts are)
ls -la "/tmp/stage-$bundle"; df -h /tmp | tail -1; nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv,noheader
