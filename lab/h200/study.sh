#!/usr/bin/env bash
# One study run on the H200: bash study.sh NAME BACKENDS [compare.py args, e.g. --starts 2 --workloads sweep]
# Default model: the Qwen3-8B shape with random weights; pass --model (and --random-weights if wanted) to change it.
# The commit: LCA_GIT_COMMIT if set, else .lca-commit (written here by commit.sh before the call).
# Leaves $OUT/NAME.tgz with the run directory and its log.
set -uo pipefail
name=${1:?usage: study.sh NAME BACKENDS [args]}; backends=${2:?}; shift 2
model=(--model qwen3-8b-shape --random-weights)
for arg in "$@"; do [[ $arg == --model || $arg == --model=* ]] && model=(); done
mkdir -p /tmp/runs
export LCA_GIT_COMMIT=${LCA_GIT_COMMIT:-$(head -n1 .lca-commit 2>/dev/null)}
echo "commit: ${LCA_GIT_COMMIT:-unknown (run lab/h200/commit.sh in the checkout before the call)}"
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 LCA_CACHE=/tmp/lca-cache
export PYTHONPATH="$(pwd):/tmp/site" VLLM_USE_FLASHINFER_SAMPLER=0 VLLM_NO_USAGE_STATS=1
# benchmark 1 after the study, on the same engine (OVERHEAD=0: not, e.g. a load-only study has no sweep prompts)
[ "${OVERHEAD:-1}" = 0 ] || export LCA_CHILD_HOOK=benchmarks.overhead:child_hook LCA_OVERHEAD_DIR="/tmp/runs/$name"
timeout "${STUDY_TIMEOUT:-560}" python3 compare.py --backend "$backends" "${model[@]}" \
  --max-model-len 3072 --out "/tmp/runs/$name" --python vllm=/tmp/py-vllm --python sglang=/tmp/py-sgl \
  --no-report "$@" 2>&1 | tee "/tmp/runs/$name.log" | grep -vE '^\s+(json|template)' | tail -c 20000
echo "exit: ${PIPESTATUS[0]}"
rm -f "/tmp/runs/$name/plan.json"   # regenerable; keeps the archive small
tar czf "$OUT/$name.tgz" -C /tmp/runs "$name" "$name.log"
ls -la "$OUT"
