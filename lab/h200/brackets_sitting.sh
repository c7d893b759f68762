#!/usr/bin/env bash
# Issue 39's first H200 sitting for the capacity as a bracket: vllm-server on the Qwen3-8B shape (random weights),
# the fixed shape with no shared prefix (lab/h200/brackets.yaml), one background queue (lab/h200/README.md,
# "The brackets sitting"). The vLLM bundle only.
#
#   bash lab/h200/brackets_sitting.sh start 1|2|3|4|5|6|7|8|9 [SECONDS [STARTS]]  # first call (carrying .gpu/vllm/c01,
#                                                          # .lca-commit); STARTS: sessions 7-9's engine starts ('a b c')
#   bash lab/h200/brackets_sitting.sh poll [S]             # later calls: wait up to S s, copy what is done to $OUT
#
# Session 1 (ran 2026-12-03, every run cut by its bound): start A of the closed loop (concurrency 8, 32, 128 and the
# search's bisection to 1.25x); the open loop (Poisson 16 and 32 req/s sustained 60 s each, and the search between
# them: brackets-open.yaml); starts B and C of the closed loop (each a fresh server: three runs of one setup, merged
# with --merge-starts, so the capacity is the median start's).
# Session 2: users who think (lab/h200/think.yaml: 256 and 1,024 chat users, exponential think of mean 30 s), once
# with prefix caching and once with --no-prefix-caching (each its own server start), then start C of the closed loop
# (not started in session 1: the third engine start). Session 1's cut runs are not resumed: a resumed run's new levels
# would be another engine start inside one start's run, and each already gave a bracket. (Ran 2026-12-03: both think
# runs measured U=256 and were cut in U=1,024's warm-up, which thought too: fixed in 534bf41.)
# Session 3: users who think again (480 s a run), now with their warm-up at once: caching on (twice) and off, each run both
# populations (U=256 and U=1,024), each its own server: with session 2's runs, U=256 has three starts caching on
# and two off, U=1,024 two on and one off.
# Session 5: U = 1,024 alone (lab/h200/think-1024.yaml), caching on, one run of 600 s: for a session with time for
# one run (session 3 lost its machine after on-2, whose U = 1,024 was cut 10 s before its end by a 165 s server start).
# Sessions 6 and 7: users who think at U = 256, 512 and 1,024 in one plan (lab/h200/think-3.yaml), caching on: starts
# a, b and c in session 6 (c with what the lease leaves; each its own server). Session 6 ran on 2026-12-04 with every
# user at its first turn (think3-a, -b, -c: young users, undecided); its runs are named s-a... since users who think
# start where a long-running population is (users_start: stationary, the default). Session 6 ran again on 2026-12-04
# with stationary users (think3-s-a, -s-b, -s-c: lab/results/brackets-h200-2026-12-04b, its README says what they
# bracket); s-a and s-b were cut by their 540 s bound (their servers were slow to start), so these runs have 600 s.
# Session 7: caching off with the fixed loop (think-fixed.yaml with --no-prefix-caching), three engine starts off-a,
# off-b, off-c, at U = 256, 512 and 1,024 on an H200 (128, 256 and 512 on an H100): without the cache every turn
# prefills its whole history, and the loop's runs before its fix missed at U = 1,024 either way. Session 8 was the
# capacity search on think-3.yaml's levels (git show 21af144:lab/h200/think-3-search.yaml), retired unrun: those
# levels were set from the runs before the fix. Session 8 is now sglang-server's users who think: session 9's plan
# and levels through sglang-server, three engine starts sgl-think-f-a, -b, -c (480 s each), both bundles staged as
# in session 4: the same requests as vllm-server's, for "which stack" (issue 40).
# Session 9: the fixed loop's think runs (lab/h200/think-fixed.yaml, caching on), three engine starts f-a, f-b, f-c
# (480 s each; c gets what the deadline leaves). A run's name starts with the GPU it ran on (h200-, or h100- where
# the lent machine was an H100, at its own levels). Ran 2026-12-07 on an H100 at U = 256, 362 and 512 (a and b: every
# level met every target, lab/results/brackets-h100-2026-12-07); now U = 1,024-2,048 (H200), 512-1,024 (H100): ran
# again on an H100 the same day, three starts, a bracket (U = 512 met, 1,024 missed: brackets-h100-2026-12-07b).
# In sessions 7, 8 and 9 the first start has 560 s, the others 480: a machine's first server start compiles (vLLM
# 172 s there, against 88-106 s for the next two), and cut start a inside its last level at 480 s.
# Session 4: sglang-server's capacity as a bracket over three engine starts (brackets.yaml, the closed loop of
# sessions 1-2, sglang-server-a, -b, -c, 420 s each). Both bundles: SGLang borrows jsonschema from vLLM's /tmp/site
# (install.sh); stage vLLM's parts and SGLang's (all of them: with fewer its attention falls back to triton).
set -uo pipefail
source lab/h200/queue_lib.sh  # nparts, staged, install_bundle, study, bound, sitting_*

sitting_args brackets_sitting.sh '1|2|3|4|5|6|7|8|9' "h[0-9]*-b39-*.tgz" -- "$@"  # a poll ends here
# Sessions 7, 8 and 9 run the engine starts STARTS names (default a b c), each its own run: a session with time for
# fewer runs the rest in a later sitting (`start 8 1050 c`), and --merge-starts merges them all.
export STARTS=${4:-a b c}
[[ $STARTS =~ ^[a-z]( [a-z])*$ ]] || { echo "STARTS must be letters apart, e.g. 'b c': got '$STARTS'"; exit 2; }
[ -z "${4:-}" ] || [[ $SESSION =~ ^[789]$ ]] || { echo "STARTS is for sessions 7, 8 and 9: got '$4'"; exit 2; }
sitting_start "${3:-1710}"

queue() {
  closed() {  # one engine start of the closed loop, its own run (bound $2 s; more arguments: --resume)
    study "$2" "h200-b39-closed-$1" vllm-server --workload-file lab/h200/brackets.yaml \
      --python vllm-server=/tmp/py-vllm "${@:3}"
  }
  sglang_closed() {  # the same, sglang-server
    study "$2" "h200-b39-sgl-closed-$1" sglang-server --workload-file lab/h200/brackets.yaml \
      --python sglang-server=/tmp/py-sgl "${@:3}"
  }
  open_loop() {
    study "$1" h200-b39-open vllm-server --workload-file lab/h200/brackets-open.yaml \
      --python vllm-server=/tmp/py-vllm "${@:2}"
  }
  think() {  # users who think, caching on (no more arguments) or off (--no-prefix-caching)
    study "$2" "h200-b39-think-$1" vllm-server --workload-file lab/h200/think.yaml \
      --python vllm-server=/tmp/py-vllm "${@:3}"
  }
  think3() {  # three populations in one plan: runs of it merge as engine starts
    study "$2" "h200-b39-think3-$1" vllm-server --workload-file lab/h200/think-3.yaml \
      --python vllm-server=/tmp/py-vllm "${@:3}"
  }
  think_fixed_on() {  # the fixed loop's users who think through server $1 (its python $2, its runs' tag $3), caching
    # on or off ($4 off-*), named for the GPU; the levels for the GPU and the cache (H200 with the cache: the file's)
    local server=$1 python=$2 tag=$3 gpu cache=on off=(); shift 3; gpu=$(gpu_tag)
    [[ $1 == off-* ]] && cache=off off=(--no-prefix-caching)
    local -A at=([h200-on]="" [h100-on]=512:724:1024 [h200-off]=256:512:1024 [h100-off]=128:256:512)
    local levels=(); [ -n "${at[$gpu-$cache]}" ] && levels=(--load "levels=${at[$gpu-$cache]}")
    study "$2" "$gpu-b39-${tag}think-f-$1" "$server" --workload-file lab/h200/think-fixed.yaml \
      --python "$server=$python" "${levels[@]}" "${off[@]}" "${@:3}"
  }
  think_fixed() { think_fixed_on vllm-server /tmp/py-vllm "" "$@"; }
  sgl_think_fixed() { think_fixed_on sglang-server /tmp/py-sgl sgl- "$@"; }
  each_start() {  # think function $1 once per engine start in STARTS, its runs' tag $2 (off-); the machine's first
    # start has 560 s (its server compiles), each next 480
    local start bound=560
    for start in $STARTS; do "$1" "$2$start" "$bound"; bound=480; done
  }
  until staged vllm && staged qwen3-8b-shape 1; do sleep 5; done
  bash lab/h200/unpack_model.sh qwen3-8b-shape > /dev/null
  install_bundle vllm; echo "== $(date -u +%T) vllm installed"
  if [ "$SESSION" = 4 ] || [ "$SESSION" = 8 ]; then
    until staged sglang; do sleep 5; done
    install_bundle sglang; echo "== $(date -u +%T) sglang installed"
  fi
  if [ "$SESSION" = 1 ]; then
    closed a 420; open_loop 540; closed b 420; closed c 420
  elif [ "$SESSION" = 2 ]; then
    think on 480; think off 480 --no-prefix-caching; closed c 420
  elif [ "$SESSION" = 3 ]; then
    think on-2 480; think off-2 480 --no-prefix-caching; think on-3 480
  elif [ "$SESSION" = 6 ]; then
    think3 s-a 600; think3 s-b 600; think3 s-c 600  # stationary users (s-): c gets what the deadline leaves
  elif [ "$SESSION" = 7 ]; then
    each_start think_fixed off-
  elif [ "$SESSION" = 8 ]; then
    each_start sgl_think_fixed ''
  elif [ "$SESSION" = 9 ]; then
    each_start think_fixed ''
  elif [ "$SESSION" = 5 ]; then
    study 600 h200-b39-think-1024-on vllm-server --workload-file lab/h200/think-1024.yaml --python vllm-server=/tmp/py-vllm
  else
    sglang_closed a 420; sglang_closed b 420; sglang_closed c 420
  fi
}

sitting_launch
