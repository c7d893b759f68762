#!/usr/bin/env bash
# Issue 41's H200 trace sittings: how much of Mooncake's real chat traffic (lab/h200/trace-conversation.yaml) one GPU
# holds on each stack and configuration, the capacity search over the time scale, each engine start its own run
# (merged with --merge-starts: the capacity is the median start's). Qwen3-8B shape, random weights, 32,768 positions.
#
#   bash lab/h200/trace_sitting.sh start 1|2|3|4 [SECONDS]  # first call (carrying .gpu/vllm/c01, .gpu/traces/t01,
#                                                           # .lca-commit)
#   bash lab/h200/trace_sitting.sh poll [S]                 # later calls: wait up to S s, copy what is done to $OUT
#
# Here, once: mkdir -p .gpu/traces/t01 && cp ../shared/traces/mooncake-conversation.jsonl.gz .gpu/traces/t01/
# (0.8 MB; it rides with vLLM's c01). There the queue copies it to /tmp/shared/traces, where the workload file's
# path (the shared folder beside the checkout) finds it from /tmp/lca-repo.
# Session 1: vllm-server, starts a, b and c (c with what the deadline leaves).
# Session 2: vllm-server@fp8 (lab/h200/variants/fp8.yaml), starts a, b and c.
# Session 3: sglang-server@fp8, starts a, b and c; both bundles (SGLang borrows jsonschema from vLLM's /tmp/site),
# every SGLang part. Session 4: sglang-server (bf16), starts a, b and c; both bundles.
# Not run yet: a start's length is an estimate (a server start ~2 min, levels of 120 s and 60 s, two searched
# levels, warm-ups: ~530 s), each run is bounded by 560 s, and a cut run's records stay whole up to its cut.
set -uo pipefail
source lab/h200/queue_lib.sh  # nparts, staged, install_bundle, study, bound, sitting_*

sitting_args trace_sitting.sh '1|2|3|4' "h[0-9]*-t41-*.tgz" -- "$@"  # a poll ends here; a start sets SESSION
mkdir -p /tmp/shared/traces && cp .gpu/traces/t01/*.jsonl.gz /tmp/shared/traces/ \
  || { echo "no trace carried: carry .gpu/traces/t01 with the first call"; exit 2; }
sitting_start "${3:-1710}"

queue() {
  replay() {  # one engine start of one column ($1: the backend, $2: the start's letter, $3: its interpreter)
    local gpu; gpu=$(gpu_tag)
    study 560 "$gpu-t41-${1//@/-}-$2" "$1" --workload-file lab/h200/trace-conversation.yaml \
      --variants-file lab/h200/variants/fp8.yaml --python "${1%@*}=/tmp/$3" --max-model-len 32768 "${@:4}"
  }
  until staged vllm && staged qwen3-8b-shape 1; do sleep 5; done
  bash lab/h200/unpack_model.sh qwen3-8b-shape > /dev/null
  install_bundle vllm; echo "== $(date -u +%T) vllm installed"
  if [ "$SESSION" -ge 3 ]; then
    until staged sglang; do sleep 5; done
    install_bundle sglang; echo "== $(date -u +%T) sglang installed"
  fi
  local backend py=py-vllm
  case $SESSION in
    1) backend=vllm-server ;;
    2) backend=vllm-server@fp8 ;;
    3) backend=sglang-server@fp8 py=py-sgl ;;
    *) backend=sglang-server py=py-sgl ;;
  esac
  replay "$backend" a "$py"; replay "$backend" b "$py"; replay "$backend" c "$py"
}

sitting_launch
