# What every H200 sitting queue shares (sourced by serving_sitting*.sh and capacity_sitting.sh from the tree's
# private copy, after `cd /tmp/lca-repo`; the queue exports them with `export -f` for its setsid shell).
#   nparts BUNDLE        how many parts BUNDLE has: c01/NPARTS (resplit.sh, vLLM) or c01/SHA256SUMS' part lines
#                        (SGLang); 99 (never staged) when neither is there yet
#   staged NAME [N]      true once the first part (a bundle's c01, a model's m01) and N parts (default: nparts)
#                        are copied (stage.sh marks each complete copy with PART.done)
#   install_bundle B     install.sh B, its log in $R/logs (its tail printed when it fails)
#   study T NAME ...     study.sh NAME ... bounded by T seconds (STUDY_TIMEOUT), benchmark 1 off unless OVERHEAD=1
nparts() {
  cat /tmp/stage-"$1"/c01/NPARTS 2>/dev/null || grep -c '^part ' /tmp/stage-"$1"/c01/SHA256SUMS 2>/dev/null \
    || echo 99
}
staged() {
  ls /tmp/stage-"$1"/[cm]01.done > /dev/null 2>&1 &&
    [ "$(ls /tmp/stage-"$1"/*.done 2>/dev/null | wc -l)" -ge "${2:-$(nparts "$1")}" ]
}
install_bundle() {
  mkdir -p "$R/logs"
  bash benchmarks/h200/install.sh "$1" > "$R/logs/install-$1.log" 2>&1 || tail -n 20 "$R/logs/install-$1.log"
}
study() { STUDY_TIMEOUT=$1 OVERHEAD=${OVERHEAD:-0} bash benchmarks/h200/study.sh "${@:2}"; echo "== $(date -u +%T) $2 done"; }
