# What every H200 sitting queue shares (sourced by anatomy_, brackets_, capacity_ and trace_sitting.sh; the queue
# exports the functions it calls with `export -f` for its setsid shell).
#   nparts BUNDLE        how many parts BUNDLE has: c01/NPARTS (resplit.sh, vLLM) or c01/SHA256SUMS' part lines
#                        (SGLang); 99 (never staged) when neither is there yet
#   staged NAME [N]      true once the first part (a bundle's c01, a model's m01) and N parts (default: nparts)
#                        are copied (stage.sh marks each complete copy with PART.done)
#   install_bundle B     install.sh B, its log in $R/logs (its tail printed when it fails)
#   study T NAME ...     study.sh NAME ... bounded by T seconds (STUDY_TIMEOUT; less when the sitting's DEADLINE is
#                        nearer, not started under 90 s: left_for), benchmark 1 off unless OVERHEAD=1
#   gpu_tag              h100 where the lent GPU is an H100, else h200: a sitting's run names start with it (an H100's
#                        runs stand apart from the H200's)
#   from_example DIR     a committed run cut by its deadline (lab/examples/DIR, records gzip'd) put back as
#                        /tmp/runs/NAME (records.jsonl unpacked), so that `study ... --resume` runs what it lacks;
#                        kept as it is where /tmp/runs/NAME exists already (a queue started again on one machine)
nparts() {
  cat /tmp/stage-"$1"/c01/NPARTS 2>/dev/null || grep -c '^part ' /tmp/stage-"$1"/c01/SHA256SUMS 2>/dev/null \
    || echo 99
}
staged() {
  ls /tmp/stage-"$1"/[cm]01.done > /dev/null 2>&1 &&
    [ "$(ls /tmp/stage-"$1"/*.done 2>/dev/null | wc -l)" -ge "${2:-$(nparts "$1")}" ]
}
gpu_tag() {
  if nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1 | grep -q H100; then echo h100; else echo h200; fi
}
from_example() {
  local name; name=$(basename "$1")
  [ -d "/tmp/runs/$name" ] && return 0
  mkdir -p /tmp/runs && cp -r "lab/examples/$1" "/tmp/runs/$name" || return 1
  [ -f "/tmp/runs/$name/records.jsonl.gz" ] && gunzip "/tmp/runs/$name/records.jsonl.gz"
  echo "== $(date -u +%T) $name: $(wc -l < "/tmp/runs/$name/records.jsonl") records from lab/examples/$1"
}
install_bundle() {
  mkdir -p "$R/logs"
  bash lab/h200/install.sh "$1" > "$R/logs/install-$1.log" 2>&1 || tail -n 20 "$R/logs/install-$1.log"
}
study() {
  left_for "$1" "$2" || return 0
  STUDY_TIMEOUT=$LEFT OVERHEAD=${OVERHEAD:-0} bash lab/h200/study.sh "${@:2}"; echo "== $(date -u +%T) $2 done"
}
#
# The start and poll halves every sitting script shares (anatomy_, brackets_, capacity_ and trace_sitting.sh):
#   sitting_args SCRIPT SESSIONS GLOB... -- ARGS...
#                            a sitting script's own arguments (`start N [SECONDS]` | `poll [S]`): poll: sitting_poll
#                            S GLOB... and exit with its status; start N with N one of SESSIONS (`1|2`, `a|b|c`):
#                            SESSION=N exported (the script then sitting_start "${3:-1710}"s); no arguments: the
#                            usage line and exit 1; anything else: the usage line and exit 2
#   sitting_start [SECONDS]  copy the carried tree to /tmp/lca-repo (a later call's tree cannot change code under a
#                            running queue), cd there, and set DEADLINE = now + SECONDS (default 1710: 30 device-
#                            minutes less the machine's start and the last poll's copy). Pass less when the
#                            session has less left (the lease's budget_left_s minus ~90).
#   sitting_launch           run the script's queue() under setsid (it outlives the call), log $R/queue.log
#   sitting_poll S GLOB...   later calls: wait up to S s for the queue, print its milestones, copy GLOBs + the log;
#                            on a machine with no queue (the last one was given back: a call came more than 30 s
#                            after the one before) it says so and returns 3 at once, not after S s of device time
#   bound T                  T, or what is left before DEADLINE less 30 s when that is less (a study cut by the
#                            deadline still leaves its archive; one started after the deadline would leave none)
#   left_for T NAME          LEFT=$(bound T); under 90 s, a "NAME not started" line and false (study, bounded)
#   bounded T NAME CMD...    CMD under `timeout` for what left_for leaves, or not started
R=${R:-/tmp/results}
bound() {
  local left=$(( ${DEADLINE:-$(( $(date +%s) + 100000 ))} - $(date +%s) - 30 ))
  if [ "$left" -lt "$1" ]; then echo "$left"; else echo "$1"; fi
}
left_for() {
  LEFT=$(bound "$1")
  [ "$LEFT" -ge 90 ] || { echo "== $(date -u +%T) $2 not started: ${LEFT} s before the deadline"; return 1; }
}
bounded() {
  left_for "$1" "$2" || return 0
  local t=$LEFT; shift 2
  timeout "$t" "$@"
}
sitting_args() {
  local script=$1 sessions=$2 globs=(); shift 2
  while [ "$1" != -- ]; do globs+=("$1"); shift; done; shift
  local usage="usage: $script start $sessions [seconds] | poll [seconds]"
  local mode=${1:?$usage}
  if [ "$mode" = poll ]; then sitting_poll "${2:-0}" "${globs[@]}"; exit $?; fi
  [ "$mode" = start ] && [[ ${2:-} =~ ^($sessions)$ ]] || { echo "$usage"; exit 2; }
  export SESSION=$2
}
sitting_start() {
  mkdir -p "$R/logs" /tmp/lca-repo
  tar cf - --exclude=.gpu --exclude=.venv . | tar xf - -C /tmp/lca-repo
  cd /tmp/lca-repo || exit 1
  rm -f "$R/queue.done"  # an earlier queue's on this machine: the poll would return at once
  export DEADLINE=$(( $(date +%s) + ${1:-1710} )) OUT=$R PYTHONUNBUFFERED=1 PROOF_RESULTS=$R R
  nvidia-smi --query-gpu=index,name,driver_version,memory.used --format=csv,noheader
  echo "deadline $(date -u -d @"$DEADLINE" +%T)"
}
sitting_launch() {
  export -f nparts staged install_bundle gpu_tag from_example study bound left_for bounded queue
  setsid bash -c 'echo "deadline $(date -u -d @"$DEADLINE" +%T)"; queue; touch $R/queue.done' \
    > "$R/queue.log" 2>&1 < /dev/null &
  sleep 3; tail -n 5 "$R/queue.log"
}
sitting_poll() {
  local end=$(( $(date +%s) + ${1:-0} )) glob; shift
  if [ ! -f "$R/queue.log" ]; then  # a fresh machine: the last was given back, its queue and results with it
    echo "no queue on this machine ($R/queue.log missing): the machine that ran it was given back; start again"
    return 3
  fi
  while [ "$(date +%s)" -lt "$end" ] && [ ! -f "$R/queue.done" ]; do sleep 5; done
  grep -E "^(commit|exit|==|deadline)|ready in|bench C=|Error|error:" "$R/queue.log" | tail -n 50
  ls /tmp/stage-* 2>/dev/null | tr '\n' ' '; echo
  mkdir -p "$OUT"
  for glob in "$@" queue.log; do cp -p "$R"/$glob "$OUT"/ 2>/dev/null; done
  ls -la "$OUT" | tail -n +2
}
