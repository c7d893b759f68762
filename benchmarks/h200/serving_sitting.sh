#!/usr/bin/env bash
# Issue #21's H200 sitting (with #24's last study): one background queue (setsid: it outlives the device call
# that starts it) while later calls stage the bundle parts.
#
#   bash benchmarks/h200/serving_sitting.sh start      # first call (carrying .gpu/vllm/c01 and the model's m01)
#   bash benchmarks/h200/serving_sitting.sh poll [S]   # later calls: wait up to S seconds, copy what is done to $OUT
#
# In the order of what the open issues need most (the queue is cut where the device time ends):
#   1. the serving proof, vLLM then SGLang (serving_proof.sh run: each server once, the reference client before
#      and after the project's load; -> serving-proof-ENGINE.json, proof-ENGINE.tgz);
#   2. hf-graphs' sweep and conversation on Qwen3's tokenizer, with benchmark 1 after it (#24);
#   3. benchmark 4 on the host's 16 CPUs, no GPU work at the same time (-> load_client-h200.json);
#   4. the built-in load through vllm-server, then in process on vLLM, both with the matched scheduler settings
#      (--engine-defaults matched, the default), without the capacity search (search_levels=0: the planned
#      levels 1/8/32/128 only; the search is issue #22's sitting);
#   5. the built-in load through sglang-server, if time is left.
# Both bundles install in parallel as soon as their parts are staged; the first proof's server starts once vLLM's
# install is done, but its first timed request waits for SGLang's install too (PROOF_WAIT_FOR), so no install
# competes with a timed run for the host's CPUs. Results: /tmp/results/*, log /tmp/results/queue.log.
set -uo pipefail
mode=${1:?usage: serving_sitting.sh start|poll [seconds]}
R=/tmp/results

copy_out() { mkdir -p "$OUT"; cp -p $R/*.tgz $R/*.json $R/*.log "$OUT"/ 2>/dev/null; ls -la "$OUT" | tail -n +2; }

if [ "$mode" = poll ]; then
  end=$(( $(date +%s) + ${2:-0} ))
  while [ "$(date +%s)" -lt "$end" ] && [ ! -f $R/queue.done ]; do sleep 5; done
  grep -E "^(commit|exit|==)|ready in|bench C=|Error|error:" $R/queue.log | tail -n 50
  ls /tmp/stage-* 2>/dev/null | tr '\n' ' '; echo
  copy_out
  exit 0
fi
[ "$mode" = start ] || { echo "usage: serving_sitting.sh start|poll [seconds]"; exit 2; }

mkdir -p $R /tmp/lca-repo
tar cf - --exclude=.gpu --exclude=.venv . | tar xf - -C /tmp/lca-repo
cd /tmp/lca-repo || exit 1
source benchmarks/h200/queue_lib.sh  # nparts, staged, install_bundle, study
export OUT=$R PYTHONUNBUFFERED=1 PROOF_RESULTS=$R
nvidia-smi --query-gpu=index,name,driver_version,memory.used --format=csv,noheader


queue() {
  until staged vllm && staged qwen3-8b-shape 1; do sleep 5; done
  bash benchmarks/h200/unpack_model.sh qwen3-8b-shape > /dev/null
  bash benchmarks/h200/install.sh vllm > $R/install-vllm.log 2>&1; echo "== $(date -u +%T) vllm installed"
  ( until staged sglang; do sleep 5; done; bash benchmarks/h200/install.sh sglang > $R/install-sglang.log 2>&1
    touch /tmp/sglang.installed; echo "== $(date -u +%T) sglang installed" ) &
  PROOF_WAIT_FOR=/tmp/sglang.installed bash benchmarks/h200/serving_proof.sh run vllm
  bash benchmarks/h200/serving_proof.sh run sglang
  OVERHEAD=1 study 300 h200-hf-graphs hf-graphs --workloads sweep,conversation
  PYTHONPATH=/tmp/lca-repo:/tmp/site timeout 200 python3 -m benchmarks.load_client --levels 32,128,512 --seconds 8 \
    --out $R/load_client-h200.json | tail -n 12; echo "== $(date -u +%T) benchmark 4 done"
  study 330 h200-serve-vllm-server vllm-server --workloads load --load search_levels=0 --python vllm-server=/tmp/py-vllm
  study 330 h200-serve-vllm vllm --workloads load --load search_levels=0
  study 360 h200-serve-sglang-server sglang-server --workloads load --load search_levels=0 \
    --python sglang-server=/tmp/py-sgl
}

export -f nparts staged study queue
export R
setsid bash -c 'queue; touch $R/queue.done' > $R/queue.log 2>&1 < /dev/null &
sleep 3; tail -n 5 $R/queue.log
