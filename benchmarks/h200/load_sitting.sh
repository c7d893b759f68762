#!/usr/bin/env bash
# Issue #13's H200 sitting: every load study and benchmark, two GPU queues running in the background
# (setsid: they outlive the device call that starts them) while later calls stage the bundles.
#
#   bash benchmarks/h200/load_sitting.sh start      # first call (with the first bundle part): both queues
#   bash benchmarks/h200/load_sitting.sh poll [S]   # later calls: wait up to S seconds, copy what is done to $OUT
#
# The queues run from a private copy of the tree (/tmp/lca-repo), so the tree a later call copies
# in cannot change code under a running study. Results: /tmp/results/*.tgz|json, logs /tmp/results/gpuN.log.
# Both queues first wait for the vLLM bundle (staged first: it carries the harness's own dependencies).
# GPU 0: hf (queued generate, capped: levels 1 and 8, 20 s each) -> vLLM -> benchmark 5 (harness vs LLM.generate) -> benchmark 5 for hf-cb at C=32 -> sglang-server at C=32.
# GPU 1: benchmark 6 (hf-cb configurations) -> hf-cb with the fastest configuration at C=32 -> SGLang
#        -> benchmark 5 for SGLang -> vllm-server at C=32.
set -uo pipefail
mode=${1:?usage: load_sitting.sh start|poll [seconds]}
R=/tmp/results
SHAPE=(--model qwen3-8b-shape --random-weights)

copy_out() { mkdir -p "$OUT"; cp -p $R/*.tgz $R/*.json $R/*.log "$OUT"/ 2>/dev/null; ls -la "$OUT"; }

if [ "$mode" = poll ]; then
  end=$(( $(date +%s) + ${2:-0} ))
  while [ "$(date +%s)" -lt "$end" ] && ! { [ -f $R/gpu0.done ] && [ -f $R/gpu1.done ]; }; do sleep 5; done
  for g in 0 1; do echo "== gpu$g"; tail -n 8 $R/gpu$g.log 2>/dev/null; done
  ls /tmp/stage-* 2>/dev/null | head -20
  copy_out
  exit 0
fi

mkdir -p $R /tmp/lca-repo
tar cf - --exclude=.gpu --exclude=.venv . | tar xf - -C /tmp/lca-repo
cd /tmp/lca-repo || exit 1
# the harness's own dependencies (pydantic, rich, pandas...) are not in the image: they come with the vLLM bundle
export OUT=$R PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 LCA_CACHE=/tmp/lca-cache OVERHEAD=0 \
  PYTHONPATH=/tmp/lca-repo:/tmp/site
nvidia-smi --query-gpu=index,name,driver_version,memory.used --format=csv,noheader
python3 -c "import importlib.util as u; print({m: bool(u.find_spec(m)) for m in ('flash_attn', 'flash_attn_interface', 'kernels')})"

wait_bundle() {  # $1 vllm|sglang, $2 parts: install once every part's copy is complete
  until [ "$(ls /tmp/stage-"$1"/*.done 2>/dev/null | wc -l)" -ge "$2" ]; do sleep 5; done
  flock /tmp/install.lock bash benchmarks/h200/install.sh "$1"
}

gpu0() {
  export CUDA_VISIBLE_DEVICES=0
  wait_bundle vllm 3
  STUDY_TIMEOUT=420 bash benchmarks/h200/study.sh h200-load-hf hf --workloads load --load levels=1:8,seconds=20
  STUDY_TIMEOUT=420 bash benchmarks/h200/study.sh h200-load-vllm vllm --workloads load
  timeout 300 /tmp/py-vllm -m benchmarks.load_ceiling --backend vllm "${SHAPE[@]}" --concurrency 128 \
    --max-model-len 3072 --out $R/ceiling-vllm.json
  until [ -f $R/hf-cb-configs.done ]; do sleep 5; done   # GPU 1 chose hf-cb's configuration by now
  LCA_HF_CB=$(cat $R/hf-cb-config.txt 2>/dev/null) timeout 240 python3 -m benchmarks.load_ceiling --backend hf-cb \
    "${SHAPE[@]}" --concurrency 32 --max-model-len 3072 --out $R/ceiling-hf-cb.json
  [ -f /tmp/site-sgl/.ok ] || wait_bundle sglang 4
  STUDY_TIMEOUT=360 bash benchmarks/h200/study.sh h200-load-sglang-server sglang-server --workloads load \
    --load levels=32 --python sglang-server=/tmp/py-sgl
}

gpu1() {
  export CUDA_VISIBLE_DEVICES=1
  wait_bundle vllm 3
  timeout 300 python3 -m benchmarks.hf_cb_configs "${SHAPE[@]}" --levels 1 32 --out $R/hf-cb-configs.json \
    --config "" --config "attn=eager" --config "use_cuda_graph=true,num_blocks=64" --config "use_cuda_graph=true"
  LCA_HF_CB=$(python3 -m benchmarks.hf_cb_configs --fastest $R/hf-cb-configs.json --at 32) || LCA_HF_CB=
  echo "$LCA_HF_CB" > $R/hf-cb-config.txt; touch $R/hf-cb-configs.done
  export LCA_HF_CB; echo "hf-cb study with LCA_HF_CB='$LCA_HF_CB'"
  STUDY_TIMEOUT=420 bash benchmarks/h200/study.sh h200-load-hf-cb hf-cb --workloads load --load seconds=15
  unset LCA_HF_CB
  wait_bundle sglang 4
  STUDY_TIMEOUT=420 bash benchmarks/h200/study.sh h200-load-sglang sglang --workloads load
  timeout 300 /tmp/py-sgl -m benchmarks.load_ceiling --backend sglang "${SHAPE[@]}" --concurrency 128 \
    --max-model-len 3072 --out $R/ceiling-sglang.json
  STUDY_TIMEOUT=360 bash benchmarks/h200/study.sh h200-load-vllm-server vllm-server --workloads load \
    --load levels=32 --python vllm-server=/tmp/py-vllm
}

export -f wait_bundle gpu0 gpu1
export SHAPE_ARGS="${SHAPE[*]}" R
setsid bash -c 'SHAPE=($SHAPE_ARGS); gpu0; touch $R/gpu0.done' > $R/gpu0.log 2>&1 < /dev/null &
setsid bash -c 'SHAPE=($SHAPE_ARGS); gpu1; touch $R/gpu1.done' > $R/gpu1.log 2>&1 < /dev/null &
sleep 20; tail -n 5 $R/gpu0.log $R/gpu1.log
