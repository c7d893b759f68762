#!/usr/bin/env bash
# Issue #25's sitting on the H200 pair (kind nvidia-h200-x2), one per engine: the load workload (agent
# sessions and both fixed shapes) on the Qwen3-8B shape as tp=2, then dp=2 behind each router, one
# configuration at a time on both GPUs, in one background queue (setsid: it outlives the device call).
#
#   bash lab/h200/two_gpus_sitting.sh start vllm     # first call (carrying .gpu/vllm/c01)
#   bash lab/h200/two_gpus_sitting.sh start sglang   # first call (carrying .gpu/sglang/c01)
#   bash lab/h200/two_gpus_sitting.sh poll [S]       # later calls: wait up to S s, copy what is done to $OUT
#
# Prepared, not yet run (the pair was not lent on 2026-12-01). Parts each sitting needs (stage.sh, one call
# each, 55 MiB parts): vLLM: .gpu/vllm/c01..c03 + .gpu/qwen3-8b-shape/m01; SGLang: .gpu/sglang/c01..c04 +
# .gpu/qwen3-8b-shape/m01 + .gpu/sglang-router/r01 (the sglang-router 0.3.2 wheel, 30.7 MB; its deps
# setproctitle, orjson, uvicorn, fastapi are in the SGLang bundle, aiohttp is in the GPU image; built here by
# `bash lab/h200/two_gpus_sitting.sh wheel`). Studies (STUDY_TIMEOUT each; estimates from the one-GPU
# sittings of 2026-11-30: an 8B-shape server start 100-150 s, 3 variants x 2 levels x 20 s of load ~2.5 min):
#   vllm:   h200-2gpu-vllm-tp2   vllm-server --tp 2                       ~5 min
#           h200-2gpu-vllm-dp2   vllm-server --dp 2 (internal balancer)   ~5 min      sitting ~13 device-min
#   sglang: h200-2gpu-sglang-tp2 sglang-server --tp 2                     ~5.5 min
#           h200-2gpu-sglang-rr  sglang-server --dp 2 --router round_robin ~5.5 min
#           h200-2gpu-sglang-ca  sglang-server --dp 2 --router cache_aware ~5.5 min   sitting ~20 device-min
# Results: /tmp/results/*.tgz, log /tmp/results/queue.log; the report is built here (lab/two-gpus-sitting.md).
set -uo pipefail
mode=${1:?usage: two_gpus_sitting.sh start vllm|sglang | poll [seconds] | wheel}
R=/tmp/results
LOAD=(--workloads load --load levels=32:128,seconds=20,search_levels=0)

if [ "$mode" = wheel ]; then  # here, once: the router's wheel as one part
  mkdir -p .gpu/sglang-router/r01
  python -m pip download sglang-router==0.3.2 --no-deps --only-binary=:all: --python-version 3.12 \
    --platform manylinux2014_x86_64 -d .gpu/sglang-router/r01 && (cd .gpu/sglang-router/r01 && sha256sum ./*.whl > SHA256SUMS)
  ls -la .gpu/sglang-router/r01; exit 0
fi

copy_out() { mkdir -p "$OUT"; cp -p $R/*.tgz $R/*.log "$OUT"/ 2>/dev/null; ls -la "$OUT" | tail -n +2; }

if [ "$mode" = poll ]; then
  end=$(( $(date +%s) + ${2:-0} ))
  while [ "$(date +%s)" -lt "$end" ] && [ ! -f $R/queue.done ]; do sleep 5; done
  grep -E "^(commit|exit|==)|ready in|requests in|Error|error:" $R/queue.log | tail -n 40
  ls /tmp/stage-* 2>/dev/null | tr '\n' ' '; echo
  copy_out
  exit 0
fi

engine=${2:?usage: two_gpus_sitting.sh start vllm|sglang}
mkdir -p $R /tmp/lca-repo
tar cf - --exclude=.gpu --exclude=.venv . | tar xf - -C /tmp/lca-repo
cd /tmp/lca-repo || exit 1
export OUT=$R PYTHONUNBUFFERED=1 OVERHEAD=0
nvidia-smi --query-gpu=index,name,driver_version,memory.used --format=csv,noheader

staged() { [ "$(ls /tmp/stage-"$1"/*.done 2>/dev/null | wc -l)" -ge "$2" ]; }
study() { STUDY_TIMEOUT=$1 bash lab/h200/study.sh "${@:2}" "${LOAD[@]}"; echo "== $(date -u +%T) $2 done"; }

queue_vllm() {
  until staged vllm 3 && staged qwen3-8b-shape 1; do sleep 5; done
  bash lab/h200/unpack_model.sh qwen3-8b-shape > /dev/null
  bash lab/h200/install.sh vllm 2>&1 | tail -n 2
  study 480 h200-2gpu-vllm-tp2 vllm-server --tp 2 --python vllm-server=/tmp/py-vllm
  study 480 h200-2gpu-vllm-dp2 vllm-server --dp 2 --python vllm-server=/tmp/py-vllm
}

queue_sglang() {
  until staged sglang 4 && staged qwen3-8b-shape 1 && staged sglang-router 1; do sleep 5; done
  bash lab/h200/unpack_model.sh qwen3-8b-shape > /dev/null
  bash lab/h200/install.sh sglang 2>&1 | tail -n 2
  (cd /tmp/stage-sglang-router/r01 && sha256sum -c SHA256SUMS) || { echo "== router wheel damaged"; return 1; }
  python3 -m pip install --no-deps --no-index --target /tmp/site-sgl /tmp/stage-sglang-router/r01/*.whl 2>&1 | tail -n 1
  # the router parses SGLang's ServerArgs beside its own --router-* flags: both must be there in 0.5.17
  /tmp/py-sgl -m sglang_router.launch_server --help > $R/router-help.txt 2>&1
  for flag in --dp-size --router-policy --router-prometheus-host --router-prometheus-port --router-dp-worker-base-port; do
    grep -q -- "$flag" $R/router-help.txt || { echo "== sglang_router.launch_server has no $flag"; return 1; }
  done
  study 540 h200-2gpu-sglang-tp2 sglang-server --tp 2 --python sglang-server=/tmp/py-sgl
  study 540 h200-2gpu-sglang-rr sglang-server --dp 2 --router round_robin --python sglang-server=/tmp/py-sgl
  study 540 h200-2gpu-sglang-ca sglang-server --dp 2 --router cache_aware --python sglang-server=/tmp/py-sgl
}

export -f staged study queue_vllm queue_sglang
export R LOAD_ARGS="${LOAD[*]}"
setsid bash -c "LOAD=(\$LOAD_ARGS); queue_$engine; touch $R/queue.done" > $R/queue.log 2>&1 < /dev/null &
sleep 3; tail -n 5 $R/queue.log
