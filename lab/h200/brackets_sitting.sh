#!/usr/bin/env bash
# Issue 39's first H200 sitting for the capacity as a bracket: vllm-server on the Qwen3-8B shape (random weights),
# the fixed shape with no shared prefix (lab/h200/brackets.yaml), one background queue (lab/h200/README.md,
# "The brackets sitting"). The vLLM bundle only.
#
#   bash lab/h200/brackets_sitting.sh start [SECONDS]  # first call (carrying .gpu/vllm/c01 and .lca-commit)
#   bash lab/h200/brackets_sitting.sh poll [S]         # later calls: wait up to S s, copy what is done to $OUT
#
# The queue, in order: start A of the closed loop (concurrency 8, 32, 128 and the search's bisection to 1.25x);
# the open loop (Poisson 16 and 32 req/s sustained 60 s each, and the search between them: brackets-open.yaml);
# starts B and C of the closed loop (each a fresh server: three runs of one setup, merged with --merge-starts, so
# the capacity is the median start's). What the deadline cuts is resumed by the same line with --resume.
set -uo pipefail
mode=${1:?usage: brackets_sitting.sh start [seconds] | poll [seconds]}
source lab/h200/queue_lib.sh  # nparts, staged, install_bundle, study, bound, sitting_*

if [ "$mode" = poll ]; then sitting_poll "${2:-0}" "h200-b39-*.tgz"; exit $?; fi
[ "$mode" = start ] || { echo "usage: brackets_sitting.sh start [seconds] | poll [seconds]"; exit 2; }
sitting_start "${2:-1710}"

queue() {
  closed() {  # one engine start of the closed loop, its own run
    study 420 "h200-b39-closed-$1" vllm-server --workload-file lab/h200/brackets.yaml \
      --python vllm-server=/tmp/py-vllm
  }
  until staged vllm && staged qwen3-8b-shape 1; do sleep 5; done
  bash lab/h200/unpack_model.sh qwen3-8b-shape > /dev/null
  install_bundle vllm; echo "== $(date -u +%T) vllm installed"
  closed a
  study 540 h200-b39-open vllm-server --workload-file lab/h200/brackets-open.yaml --python vllm-server=/tmp/py-vllm
  closed b
  closed c
}

sitting_launch
