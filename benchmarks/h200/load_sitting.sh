# Issue #13's H200 sitting: every load study and benchmark in one background queue (setsid: it outlives
# the device call that starts it) while later calls stage the bundles.
#
#   bash benchmarks/h200/load_sitting.sh start      # first call (with the first bundle part): the queue
#   bash benchmarks/h200/load_sitting.sh poll [S]   # later calls: wait up to S seconds, copy what is done to $OUT
#
# The queue runs from a private copy of the tree (/tmp/lca-repo), so the tree a later call copies
# in cannot change code under a running study. Results: /tmp/results/*.tgz|json, log /tmp/results/queue.log.
# It first waits for the vLLM bundle (staged first: it also carries the harness's own dependencies), then:
# vLLM (benchmark 5 in the same process) -> benchmark 6 (hf-cb configurations) -> hf-cb with the fastest
# at C=32 (benchmark 5 at C=32) -> SGLang (benchmark 5) -> hf (queued generate, capped: levels 1 and 8,
# 10 s each) -> vllm-server and sglang-server at C=32. (Planned for two GPUs; one was lent that day.)
set -uo pipefail
mode=${1:?usage: load_sitting.sh start|poll [seconds]}
R=/tmp/results
SHAPE=(--model qwen3-8b-shape --random-weights)

copy_out() { mkdir -p "$OUT"; cp -p $R/*.tgz $R/*.json $R/*.log "$OUT"/ 2>/dev/null; ls -la "$OUT" | tail -n +2; }

if [ "$mode" = poll ]; then
  end=$(( $(date +%s) + ${2:-0} ))
  while [ "$(date +%s)" -lt "$end" ] && [ ! -f $R/queue.done ]; do sleep 5; done
  grep -E "^(commit|exit|hf-cb study)|ready in|requests in|written|error|Error" $R/queue.log | tail -n 40
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

study() { STUDY_TIMEOUT=$1 bash benchmarks/h200/study.sh "${@:2}"; }

queue() {  # one GPU: in the order of what the issue needs most, the servers last
  wait_bundle vllm 3
  LCA_CHILD_HOOK=benchmarks.load_ceiling:child_hook LCA_CEILING_ARGS="--concurrency 128 --max-model-len 3072" \
    study 420 h200-load-vllm vllm --workloads load
  timeout 200 python3 -m benchmarks.hf_cb_configs "${SHAPE[@]}" --levels 1 32 --out $R/hf-cb-configs.json \
    --config "" --config "use_cuda_graph=true,num_blocks=64" --config "use_cuda_graph=true"
  LCA_HF_CB=$(python3 -m benchmarks.hf_cb_configs --fastest $R/hf-cb-configs.json --at 32) || LCA_HF_CB=
  echo "hf-cb study with LCA_HF_CB='$LCA_HF_CB'"
  LCA_HF_CB=$LCA_HF_CB LCA_CHILD_HOOK=benchmarks.load_ceiling:child_hook LCA_CEILING_ARGS="--concurrency 32" \
    study 360 h200-load-hf-cb hf-cb --workloads load --load seconds=10
  wait_bundle sglang 5
  LCA_CHILD_HOOK=benchmarks.load_ceiling:child_hook LCA_CEILING_ARGS="--concurrency 128 --max-model-len 3072" \
    study 420 h200-load-sglang sglang --workloads load
  study 240 h200-load-hf hf --workloads load --load levels=1:8,seconds=10,warmup_requests=1
  study 300 h200-load-vllm-server vllm-server --workloads load --load levels=32 --python vllm-server=/tmp/py-vllm
  study 300 h200-load-sglang-server sglang-server --workloads load --load levels=32 --python sglang-server=/tmp/py-sgl
}

export -f wait_bundle study queue
export SHAPE_ARGS="${SHAPE[*]}" R
setsid bash -c 'SHAPE=($SHAPE_ARGS); queue; touch $R/queue.done' > $R/queue.log 2>&1 < /dev/null &
sleep 5; tail -n 5 $R/queue.log
