#!/usr/bin/env bash
# Re-split a built offline bundle (../shared/offline-gpu/{vllm,sglang}/build.sh writes 60 MiB parts)
# into parts of MIB MiB, so that one part plus the working tree fits the 64 MiB a device call carries
# (the tree is ~16 MB with the committed evidence: 45 MiB parts leave room). The stream's bytes do not
# change: only the cut points, the part folders and the part lines of c01/SHA256SUMS (and, for SGLang,
# its "chunk" line, from which its install.sh tells the core parts from the FA3 parts).
#     bash lab/h200/resplit.sh .gpu/vllm 45
set -euo pipefail
dir=${1:?usage: resplit.sh BUNDLE_DIR MIB}; mib=${2:?usage: resplit.sh BUNDLE_DIR MIB}
chunk=$((mib * 1024 * 1024))
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
sums="$dir/c01/SHA256SUMS"
cp "$sums" "$work/SUMS.old"; cp "$dir/c01/install.sh" "$dir/c01/MANIFEST.txt" "$work/"
if grep -q '^part ' "$sums"; then kind=sglang; base=sgl-bundle.part; else kind=vllm; base=vllm-bundle.tar.xz.part; fi
# the parts in order (as listed), reassembled into one stream
if [ $kind = sglang ]; then awk '$1=="part"{print $3}' "$sums"; else awk '$2 ~ /\.part/{print $2}' "$sums"; fi \
  | while read -r p; do cat "$dir/$p"; done > "$work/stream"
rm -rf "$dir"/c[0-9][0-9]
( cd "$work" && split -b "$chunk" -d -a 2 --numeric-suffixes=1 stream "$base" )
n=0
for part in "$work/$base"*; do
  n=$((n + 1)); d="$dir/$(printf 'c%02d' "$n")"; mkdir -p "$d"; mv "$part" "$d/"
done
cp "$work/install.sh" "$work/MANIFEST.txt" "$dir/c01/"; chmod +x "$dir/c01/install.sh"
if [ $kind = sglang ]; then
  { ( cd "$dir" && sha256sum c[0-9][0-9]/$base* | sed 's/^/part /' )
    grep -E '^(core|fa3|fa3so) ' "$work/SUMS.old"
    echo "chunk - $chunk"; } > "$sums"
else
  { ( cd "$dir" && sha256sum c[0-9][0-9]/$base* )
    grep -E '  vllm-bundle\.tar\.xz$' "$work/SUMS.old"; } > "$sums"
  echo "$n" > "$dir/c01/NPARTS"
fi
du -sh "$dir"/c[0-9][0-9]
