#!/usr/bin/env bash
# Issue 42's H200 sittings: one call taken apart on every stack, what the KV cache costs as context grows, and the
# reference's own conversation at its size, on the Qwen3-8B shape (random weights). Each backend its own run (the
# page merges them: lab/h200/README.md, "The anatomy sittings"), 32,768 positions (--max-model-len 32768).
#
#   bash lab/h200/anatomy_sitting.sh start 1|2|3 [SECONDS]  # first call (carrying .gpu/vllm/c01, .lca-commit)
#   bash lab/h200/anatomy_sitting.sh poll [S]             # later calls: wait up to S s, copy what is done to $OUT
#
# Session 1: vLLM in process and vllm-server (lab/h200/anatomy.yaml: the sweep to N = 32,704, the fixed shape at
# N = 4,096, 16,384 and 32,704 with 1-32 requests in flight; and the built-in conversation), then HF eager on the
# conversation and the built-in sweep (its long context ran on 2026-12-03: lab/results/long-context-h200-2026-12-03).
# Session 2: SGLang in process and sglang-server, the same workloads; both bundles (SGLang borrows jsonschema from
# vLLM's /tmp/site), every SGLang part (fewer leave it on triton attention).
# Session 3: session 1's runs, the server first (vllm-server, then HF, then vLLM in process), each named -b: after a
# session 1 whose server run was cut, on the same GPU kind, a short sitting finishes the server's levels and HF
# first, and its runs are a second engine start of each (the page merges them with --merge-starts).
# A run's name starts with the GPU it ran on (h200-, or h100- where the lent machine was an H100).
# Session 1 ran on 2026-12-07 on an H100 with 930 s (lab/results/anatomy-h100-2026-12-07): vLLM in process whole in
# ~8 min, vllm-server cut inside load-kv-16k by the deadline, HF not started. A session has ~1,700 s for all three.
# Run again, a session's runs are another engine start of each (their own run directories, merged by the page).
set -uo pipefail
source lab/h200/queue_lib.sh  # nparts, staged, install_bundle, study, bound, sitting_*

sitting_args anatomy_sitting.sh '1|2|3' "h[0-9]*-a42-*.tgz" -- "$@"  # a poll ends here; a start sets SESSION
sitting_start "${3:-1710}"

queue() {
  anatomy() {  # one backend's run of the sitting's workloads (bound $2 s; $3: its interpreter, py-vllm or py-sgl;
    # more arguments: --resume). study.sh names the in-process backends' interpreters, a server's is named here.
    local py=(); [[ $1 == *-server ]] && py=(--python "$1=/tmp/$3")
    study "$2" "$(gpu_tag)-a42-$1${RUN_SUFFIX:-}" "$1" --workloads conversation \
      --workload-file lab/h200/anatomy.yaml --max-model-len 32768 "${py[@]}" "${@:4}"
  }
  hf_eager() { study 300 "$(gpu_tag)-a42-hf${RUN_SUFFIX:-}" hf --workloads conversation,sweep; }
  until staged vllm && staged qwen3-8b-shape 1; do sleep 5; done
  bash lab/h200/unpack_model.sh qwen3-8b-shape > /dev/null
  install_bundle vllm; echo "== $(date -u +%T) vllm installed"
  if [ "$SESSION" = 1 ]; then
    anatomy vllm 600 py-vllm; anatomy vllm-server 600 py-vllm; hf_eager
  elif [ "$SESSION" = 3 ]; then
    local RUN_SUFFIX=-b  # every run of the session: a second engine start beside session 1's
    anatomy vllm-server 600 py-vllm; hf_eager; anatomy vllm 600 py-vllm
  else
    until staged sglang; do sleep 5; done
    install_bundle sglang; echo "== $(date -u +%T) sglang installed"
    anatomy sglang 660 py-sgl; anatomy sglang-server 660 py-sgl
  fi
}

sitting_launch
