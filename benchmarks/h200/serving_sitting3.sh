#!/usr/bin/env bash
# Issue #21's third serving sitting, for ONE 30-minute session on one H200: what the second (2026-12-01, which lost
# its first machine and ran with 18 device-minutes) left owed. One background queue (setsid: it outlives the call
# that starts it) while later calls stage the bundle parts; the calls and carry lists are those of the second
# sitting (benchmarks/h200/README.md, "The third serving sitting").
#
#   bash benchmarks/h200/serving_sitting3.sh start [SECONDS]   # first call (carrying .gpu/vllm/c01); SECONDS: the
#                                                              # device time the queue may use (default 1710)
#   bash benchmarks/h200/serving_sitting3.sh poll [S]          # later calls: wait up to S s, copy what is done
#
# The queue, in order (minutes as measured on 2026-12-01; every step bounded by its own limit and by the deadline):
#   1. the serving proof on SGLang (serving_proof.sh run sglang: start ~2.7, then the reference, the project's and the
#      reference again: ~11.5 with the start, as vLLM's took 11 on 2026-12-01; vLLM's passed its throughput target
#      then), once both bundles are installed (the reference client is vLLM's `vllm bench serve`);
#   2. the built-in load through sglang-server (start ~2.7 + 12 levels ~3.5);
#   3. benchmark 4 between C = 128 and 512 (where the 1 ms added-TTFT target stops holding: 0.26 ms at 128, 1.3 ms
#      at 512 on 2026-12-01, with the fake server in 8 processes as here), no GPU work at the same time (~1 min);
#   4. hf-server at the HF mix (docs/capacity.md, "The HF mix"), last: the issue asks for it "at the levels it can
#      finish", and a run cut by the deadline keeps its levels; its random-weight checkpoint is written beside the
#      installs, before step 1.
# About 29 minutes: what runs last is cut by the deadline, leaving its archive. vllm-server's whole built-in load
# (9 of 12 levels ran in the first sitting) does not fit beside these: ~6 more minutes, owed to a later sitting.
set -uo pipefail
mode=${1:?usage: serving_sitting3.sh start [seconds] | poll [seconds]}
source benchmarks/h200/queue_lib.sh  # nparts, staged, install_bundle, study, bound, sitting_*
RESULTS=(serving-proof-*.json proof-*.tgz load_client-*.json h200-serve-*.tgz)  # at most 8 files a call brings back

if [ "$mode" = poll ]; then sitting_poll "${2:-0}" "${RESULTS[@]}"; exit 0; fi
[ "$mode" = start ] || { echo "usage: serving_sitting3.sh start [seconds] | poll [seconds]"; exit 2; }
sitting_start "${2:-1710}"

queue() {
  ( until staged sglang; do sleep 5; done; install_bundle sglang; touch /tmp/sglang.installed
    echo "== $(date -u +%T) sglang installed" ) &
  until staged vllm && staged qwen3-8b-shape 1; do sleep 5; done
  bash benchmarks/h200/unpack_model.sh qwen3-8b-shape > /dev/null
  # hf-server's random-weight checkpoint (16 GB) written now, beside the installs, not in step 3's time; on the GPU,
  # and done before the proof's server measures free memory (the wait below)
  local model; model=$(ls -d /tmp/lca-cache/qwen3-8b-shape-* | grep -v -- -random- | head -n 1)
  PYTHONPATH=/tmp/lca-repo python3 -m backends.openai.random_checkpoint "$model" "$model-random-bfloat16" bfloat16 \
    cuda > "$R/logs/checkpoint.log" 2>&1 &
  local ckpt=$!
  install_bundle vllm; echo "== $(date -u +%T) vllm installed"
  until [ -f /tmp/sglang.installed ]; do sleep 5; done
  wait "$ckpt"; echo "== $(date -u +%T) checkpoint written: $(ls "$model-random-bfloat16" | tr '\n' ' ')"
  bounded 780 "proof sglang" bash benchmarks/h200/serving_proof.sh run sglang; echo "== $(date -u +%T) proof sglang done"
  study 420 h200-serve-sglang-server sglang-server --workloads load --load search_levels=0 \
    --python sglang-server=/tmp/py-sgl
  PYTHONPATH=/tmp/lca-repo:/tmp/site bounded 120 "benchmark 4" python3 -m benchmarks.load_client \
    --levels 128,256,384,512 --seconds 8 --server-procs 8 --out "$R/load_client-h200-fill.json" | tail -n 12
  echo "== $(date -u +%T) benchmark 4 done"
  study 420 h200-serve-hf-server hf-server --workloads load \
    --load levels=1:8:32,users=32,max_turns=2,rates=,search_levels=0
}

sitting_launch
