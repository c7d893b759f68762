#!/usr/bin/env bash
# Issue #21's second serving sitting, for ONE 30-minute session on one H200: one background queue (setsid: it
# outlives the device call that starts it) while later calls stage the bundle parts (benchmarks/h200/README.md,
# "The next serving sitting", lists every device call and what it carries).
#
#   bash benchmarks/h200/serving_sitting2.sh start      # first call (carrying .gpu/vllm/c01)
#   bash benchmarks/h200/serving_sitting2.sh poll [S]   # later calls: wait up to S seconds, copy what is done to $OUT
#
# In priority order (the queue is cut where the device time ends; minutes as measured on 2026-12-01):
#   1. the serving proof, vLLM then SGLang (serving_proof.sh run, fixed since 2026-12-01: a seed per reference run,
#      the prefix cache reset before each, the project's level size; -> serving-proof-ENGINE.json, proof-ENGINE.tgz;
#      ~6 and ~7.5 minutes with the servers' starts);
#   2. benchmark 4 with the fake server in several processes (--server-procs automatic: one per 128 streams, at
#      most half the 16 cores), C = 32 ... 1024, no GPU work at the same time (-> load_client-h200.json; ~1.5 min);
#   3. the built-in load through sglang-server (start + 12 levels, search off: ~5.5 min), then through hf-server
#      at the scaled HF mix (docs/capacity.md, "The HF mix": levels 1/8/32, whole 2-turn sessions, 32 fixed-shape
#      requests a level; its rows compare only with rows of the same mix, hf-cb's in #22's sittings), after its
#      random-weight checkpoint is written once (~1 min) and its start; each bounded by its STUDY_TIMEOUT.
# Both bundles install in parallel as soon as their parts are staged; the first proof's server starts once vLLM's
# install is done, but its first timed request waits for SGLang's install too (PROOF_WAIT_FOR), so no install
# competes with a timed run for the host's CPUs. Results: /tmp/results/*, log /tmp/results/queue.log.
set -uo pipefail
mode=${1:?usage: serving_sitting2.sh start|poll [seconds]}
R=/tmp/results

# at most 8 files come back from a call: the results and the queue's log (the install logs stay in $R/logs,
# their tail goes into the queue's log when an install fails)
copy_out() {
  mkdir -p "$OUT"
  cp -p $R/serving-proof-*.json $R/proof-*.tgz $R/load_client-*.json $R/h200-serve-*.tgz $R/queue.log "$OUT"/ 2>/dev/null
  ls -la "$OUT" | tail -n +2
}

if [ "$mode" = poll ]; then
  end=$(( $(date +%s) + ${2:-0} ))
  while [ "$(date +%s)" -lt "$end" ] && [ ! -f $R/queue.done ]; do sleep 5; done
  grep -E "^(commit|exit|==)|ready in|bench C=|Error|error:" $R/queue.log | tail -n 50
  ls /tmp/stage-* 2>/dev/null | tr '\n' ' '; echo
  copy_out
  exit 0
fi
[ "$mode" = start ] || { echo "usage: serving_sitting2.sh start|poll [seconds]"; exit 2; }

mkdir -p $R/logs /tmp/lca-repo
tar cf - --exclude=.gpu --exclude=.venv . | tar xf - -C /tmp/lca-repo
cd /tmp/lca-repo || exit 1
source benchmarks/h200/queue_lib.sh  # nparts, staged, install_bundle, study
export OUT=$R PYTHONUNBUFFERED=1 PROOF_RESULTS=$R
nvidia-smi --query-gpu=index,name,driver_version,memory.used --format=csv,noheader


queue() {
  until staged vllm && staged qwen3-8b-shape 1; do sleep 5; done
  bash benchmarks/h200/unpack_model.sh qwen3-8b-shape > /dev/null
  install_bundle vllm; echo "== $(date -u +%T) vllm installed"
  ( until staged sglang; do sleep 5; done; install_bundle sglang; touch /tmp/sglang.installed
    echo "== $(date -u +%T) sglang installed" ) &
  PROOF_WAIT_FOR=/tmp/sglang.installed bash benchmarks/h200/serving_proof.sh run vllm
  PYTHONPATH=/tmp/lca-repo:/tmp/site timeout 240 python3 -m benchmarks.load_client --levels 32,128,512,1024 \
    --seconds 8 --out $R/load_client-h200.json | tail -n 12; echo "== $(date -u +%T) benchmark 4 done"
  bash benchmarks/h200/serving_proof.sh run sglang
  study 360 h200-serve-sglang-server sglang-server --workloads load --load search_levels=0 \
    --python sglang-server=/tmp/py-sgl
  study 330 h200-serve-hf-server hf-server --workloads load \
    --load levels=1:8:32,users=32,max_turns=2,requests=32,rates=,search_levels=0
}

export -f nparts staged install_bundle study queue
export R
setsid bash -c 'queue; touch $R/queue.done' > $R/queue.log 2>&1 < /dev/null &
sleep 3; tail -n 5 $R/queue.log
