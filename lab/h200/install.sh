#!/usr/bin/env bash
# Install the staged bundles (vLLM -> /tmp/site, SGLang -> /tmp/site-sgl) and write one
# interpreter wrapper per environment for `compare.py --python BACKEND=WRAPPER`.
# bash install.sh [vllm|sglang|all]   (default all: each staged bundle not installed yet)
set -uo pipefail
which=${1:-all}
if [ "$which" != sglang ]; then
  [ -f /tmp/site/.ok ] || { TARGET=/tmp/site bash /tmp/stage-vllm/c01/install.sh && touch /tmp/site/.ok; }
fi
if [ "$which" != vllm ] && [ -d /tmp/stage-sglang ]; then
  [ -f /tmp/site-sgl/.ok ] || { TARGET=/tmp/site-sgl bash /tmp/stage-sglang/c01/install.sh && touch /tmp/site-sgl/.ok; }
fi
repo=$(pwd)
common="export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 VLLM_NO_USAGE_STATS=1 CUDA_HOME=/usr/local/cuda LCA_CACHE=/tmp/lca-cache"
# vLLM (and xgrammar for HF) live in /tmp/site; SGLang's own transformers must shadow the image's,
# and it borrows jsonschema from /tmp/site (listed last, so SGLang's packages win).
printf '#!/bin/sh\n%s VLLM_USE_FLASHINFER_SAMPLER=0\nexport PYTHONPATH=%s:/tmp/site\nexec python3 "$@"\n' "$common" "$repo" > /tmp/py-vllm
printf '#!/bin/sh\n%s\nexport PYTHONPATH=%s:/tmp/site-sgl:/tmp/site PATH=/tmp/site-sgl/bin:$PATH\nexec python3 "$@"\n' "$common" "$repo" > /tmp/py-sgl
chmod +x /tmp/py-vllm /tmp/py-sgl
/tmp/py-vllm -c 'import vllm, xgrammar; print("vllm", vllm.__version__)'
[ -f /tmp/site-sgl/.ok ] && /tmp/py-sgl -c 'import sglang, transformers; print("sglang", sglang.__version__, "transformers", transformers.__version__)'
true
