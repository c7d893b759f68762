#!/usr/bin/env bash
# Issue #24's H200 sitting: the Qwen3-8B-shape study re-run on Qwen3's real tokenizer (hf, hf-graphs, vllm
# and sglang; 3 engine starts for vLLM and SGLang; one engine on the GPU host at a time) in one background
# queue (setsid: it outlives the device call that starts it) while later calls stage the bundle parts.
#
#   bash benchmarks/h200/tokens_sitting.sh start      # first call (carrying .gpu/vllm/c01 and the model's m01)
#   bash benchmarks/h200/tokens_sitting.sh poll [S]   # later calls: wait up to S seconds, copy what is done to $OUT
#
# The queue waits for BOTH bundles and installs them before the first study, so that no install competes
# with a timed study for the host's CPUs. It then checks the tokenizer under both environments (vLLM's and
# SGLang's transformers must load the folder as built, with the article's template prompt at its count) and
# stops if either fails. Studies: vllm --starts 3, sglang --starts 3, benchmark 3 (bandwidth) + hf, hf-graphs.
# Results: /tmp/results/*.tgz|json, log /tmp/results/queue.log. The procedure is docs/qwen3-tokens-and-verdicts.md's
# table, queued (it saves the per-call machine idle time between the studies).
set -uo pipefail
mode=${1:?usage: tokens_sitting.sh start|poll [seconds]}
R=/tmp/results

copy_out() { mkdir -p "$OUT"; cp -p $R/*.tgz $R/*.json $R/*.log "$OUT"/ 2>/dev/null; ls -la "$OUT" | tail -n +2; }

if [ "$mode" = poll ]; then
  end=$(( $(date +%s) + ${2:-0} ))
  while [ "$(date +%s)" -lt "$end" ] && [ ! -f $R/queue.done ]; do sleep 5; done
  grep -E "^(commit|exit|==)|probes|tokens|ready in|Error|error:" $R/queue.log | tail -n 40
  ls /tmp/stage-* 2>/dev/null | tr '\n' ' '; echo
  copy_out
  exit 0
fi

mkdir -p $R /tmp/lca-repo
tar cf - --exclude=.gpu --exclude=.venv . | tar xf - -C /tmp/lca-repo
cd /tmp/lca-repo || exit 1
export OUT=$R PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=index,name,driver_version,memory.used --format=csv,noheader

staged() { [ "$(ls /tmp/stage-"$1"/*.done 2>/dev/null | wc -l)" -ge "$2" ]; }

queue() {
  until staged vllm 3 && staged sglang 5 && staged qwen3-8b-shape 1; do sleep 5; done
  echo "== $(date -u +%T) all parts staged"
  bash benchmarks/h200/unpack_model.sh qwen3-8b-shape > /dev/null
  ( bash benchmarks/h200/install.sh vllm > $R/install-vllm.log 2>&1 ) &
  ( bash benchmarks/h200/install.sh sglang > $R/install-sglang.log 2>&1 ) &
  wait; bash benchmarks/h200/install.sh all 2>&1 | tail -n 3
  echo "== $(date -u +%T) installed"
  for py in /tmp/py-vllm /tmp/py-sgl; do
    $py -m harness.qwen3_tokenizer /tmp/lca-cache/qwen3-8b-shape-* || { echo "== tokenizer check failed under $py"; return 1; }
  done
  STUDY_TIMEOUT=800 bash benchmarks/h200/study.sh h200-vllm vllm --starts 3; echo "== $(date -u +%T) vllm done"
  STUDY_TIMEOUT=800 bash benchmarks/h200/study.sh h200-sglang sglang --starts 3; echo "== $(date -u +%T) sglang done"
  PYTHONPATH=/tmp/lca-repo:/tmp/site python3 -m benchmarks.bandwidth -o $R/bandwidth-h200.json
  STUDY_TIMEOUT=600 bash benchmarks/h200/study.sh h200-hf hf --json-calls 2; echo "== $(date -u +%T) hf done"
  STUDY_TIMEOUT=400 bash benchmarks/h200/study.sh h200-hf-graphs hf-graphs --workloads sweep,conversation
  echo "== $(date -u +%T) hf-graphs done"
}

export -f staged queue
export R
setsid bash -c 'queue; touch $R/queue.done' > $R/queue.log 2>&1 < /dev/null &
sleep 3; tail -n 5 $R/queue.log
