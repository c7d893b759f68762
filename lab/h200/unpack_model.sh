#!/usr/bin/env bash
# Unpack a model folder that travelled in parts (staged by stage.sh into /tmp/stage-NAME/m01, m02, ...)
# into the model cache the studies use (LCA_CACHE=/tmp/lca-cache). Made here by pack_model.sh NAME:
#   tar cf - -C "$LCA_CACHE" FOLDER | gzip > NAME.tgz; split (one part per folder mNN,
#   sha256 of the whole in m01/SHA256). bash unpack_model.sh qwen3-8b-shape (or smollm2)
set -euo pipefail
name=${1:?usage: unpack_model.sh NAME}
stage=/tmp/stage-$name
mkdir -p /tmp/lca-cache
cat "$stage"/m[0-9][0-9]/*.part* > "/tmp/$name.tgz"
(cd /tmp && sha256sum -c "$stage/m01/SHA256")
tar xzf "/tmp/$name.tgz" -C /tmp/lca-cache && rm -f "/tmp/$name.tgz"
ls -la /tmp/lca-cache/*
