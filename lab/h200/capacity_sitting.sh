#!/usr/bin/env bash
# The H200 runs of issues #21 and #22 (all of them have run: session g's second sitting, 2026-12-02, was the last),
# in 30-minute sessions on one H200 (lab/capacity-sessions.md, "On the H200: the capacity sessions"): one background queue
# (setsid: it outlives the device call that starts it) while later calls stage the bundle parts
# (lab/h200/README.md, "The capacity sittings").
#
#   bash lab/h200/capacity_sitting.sh start a|b|c|d|e|f|g [SECONDS]  # first call (carrying .gpu/vllm/c01);
#                                             # SECONDS: the device time the queue may use (default 1710)
#   bash lab/h200/capacity_sitting.sh poll [S]  # later calls: wait up to S seconds, copy what is done to $OUT
#
# Session a (both bundles): vllm-server's whole built-in load (#21: the first sitting ran 9 of its 12 levels, at an
#   older commit), benchmark 4 at C = 384-512 with the lean client's block reads, msgspec and gc.freeze (#21's
#   >= 50,000 tok/s within 1 ms: 46,106 at 0.74 ms and 60,718 at 1.38 ms before them), then vLLM and SGLang in
#   process with caching on: #21's in-process columns beside the servers and #22's capacity runs at once (the same
#   requests at every shared level: tests/workloads/test_load_same_mix.py).
# Session b (both bundles): vLLM and SGLang with caching off, then hf-cb with caching on, then session c's line. It
#   ran 2026-12-01 (second sitting of that day, commit 8660dc5) and each run was cut by its bound (vLLM's engine took
#   146 s to start, not a's 58; caching off makes the sessions' prefill several times longer): session e resumes them.
# Session e (both bundles): b's three cut runs put back from lab/examples/h200-capacity and resumed (--resume:
#   vLLM caching off's S=960 levels; SGLang caching off's S=0 C=128 and rates and its S=960 levels; hf-cb caching
#   on's S=0 C=32 and S=960 levels), then c's resume. Est. 2.5 installs + vLLM ~4.5 (its 146 s start) + SGLang ~6.5
#   (its 178 s start) + hf-cb ~6.3 + c's ~4.5 = ~24 minutes (lab/capacity-sessions.md, "Session e").
# Session c (the vLLM bundle only: stage vllm c01-c07 + the model m01): hf-cb with caching off. It ran at the end of
#   session a's device time (2026-12-01) and was cut by its deadline after 6 of its 9 levels: the committed run
#   (lab/examples/h200-capacity/h200-cap-hf-cb-nocache) is put back and resumed (--resume: the S=960 levels).
# Session d (both bundles): #22's capacity for the servers, now that the HTTP client meets its target (benchmark 4,
#   62,159 tok/s at 0.15 ms added TTFT p50): vllm-server, then sglang-server, caching on, at the in-process runs' line
#   (the same requests as h200-cap-vllm / h200-cap-sglang at every level both run: test_load_same_mix.py).
# Session f (both bundles): e's vLLM and SGLang resumes with d's servers in one sitting, the servers first on each
#   engine after vLLM's resume (vLLM's compile cache is warm for vllm-server from the resume's start), then e's hf-cb
#   resumes. It ran 2026-12-02 (commit 2d19b89): 2.5 installs + vLLM's resume 4.0 + vllm-server 8.5 + sglang-server
#   9.9 + SGLang's resume 4.2, cut by the deadline inside S=960's search level; hf-cb's resumes not started. Session
#   e's line resumes what is left (lab/capacity-sessions.md, "Session f as run").
# Session g (both bundles): what f left, hf-cb first. vLLM's resume is whole (f), so g has no vLLM engine: the vLLM
#   bundle is still installed first (it carries the harness's own packages and xgrammar), then hf-cb's two resumes
#   run while SGLang's parts are staged, then SGLang's resume (caching off: S=960's search level and its rates), then
#   a third start of sglang-server at its C = 128 levels (its two starts disagree at S=960 C=128: 5,566 and 7,735
#   tok/s; the same requests as h200-cap-sglang-server's C = 128 levels). Est. 2.5 installs + hf-cb ~6.3 + c's ~4.5 +
#   SGLang ~4.5 (its 68 s start) + sglang-server ~5 (its 170 s start) = ~23 minutes (lab/capacity-sessions.md, "Session g").
#   It ran 2026-12-02 (commit d6db126): hf-cb's resume with the cache whole (6.0 minutes), then the machine was lost
#   (a call came after its 30 s idle release). Run again the same day (`start g 1619`, commit dfd4958): hf-cb's resume
#   with the cache started no engine, the other three runs whole, 13.5 minutes in all (lab/capacity-sessions.md, "Session g
#   (second) as run"). Nothing is owed; the sessions stay as the record of what ran and how to run it again.
# vLLM and SGLang: the built-in load with Poisson rates 8 and 32 (requests/s for the fixed shapes, new sessions/s for
# the sessions) and the capacity search (1 level per variant and loop), in process and as servers (d); hf-cb: the HF
# mix (whole levels at its speed, no search, no rates; lab/capacity-sessions.md, "The HF mix"). Minutes as measured
# (lab/capacity-sessions.md): a 23.5 (2026-12-01), b ~24.5 (hf-cb's HF mix ~8.5 of it: lab/capacity-sessions.md, "The HF mix") + c's
# rest ~4; d est. ~18 (2.5 installs, vllm-server ~7.5 with its 145 s start, sglang-server ~7.5); what the deadline
# cuts is resumed the same way in a later session. Results: /tmp/results/*.
set -uo pipefail
source lab/h200/queue_lib.sh  # nparts, staged, install_bundle, study, bound, sitting_*

sitting_args capacity_sitting.sh 'a|b|c|d|e|f|g' "h200-cap-*.tgz" "h200-serve-*.tgz" "h200-starts-*.tgz" \
  "load_client-*.json" -- "$@"  # a poll ends here; a start sets SESSION
sitting_start "${3:-1710}"

queue() {
  # Each run's line once, as a function the sessions call (defined when the queue runs: the setsid shell gets queue()
  # alone). The resumes put a committed run cut by its deadline back (from_example) and run what it lacks with its
  # own line (--resume refuses other settings).
  session_c() {  # hf-cb caching off, cut after 6 of its 9 levels in session a's last minutes
    from_example h200-capacity/h200-cap-hf-cb-nocache
    LCA_HF_CB=use_cuda_graph=true study 420 h200-cap-hf-cb-nocache hf-cb --workloads load --no-prefix-caching \
      --load levels=1:8:32,users=32,max_turns=2,rates=,search_levels=0 --resume
  }
  vllm_nocache_rest() {  # session b's vLLM, caching off: its S=960 levels
    from_example h200-capacity/h200-cap-vllm-nocache
    study 420 h200-cap-vllm-nocache vllm --workloads load --no-prefix-caching --load rates=8:32,search_levels=1 \
      --resume
  }
  sglang_nocache_rest() {  # session b's SGLang, caching off: S=0 C=128, its search and rates; the S=960 levels
    from_example h200-capacity/h200-cap-sglang-nocache
    study 540 h200-cap-sglang-nocache sglang --workloads load --no-prefix-caching \
      --load rates=8:32,search_levels=1 --resume
  }
  hf_cb_rest() {  # session b's hf-cb, caching on: S=0 C=32 and the S=960 levels
    from_example h200-capacity/h200-cap-hf-cb
    LCA_HF_CB=use_cuda_graph=true study 420 h200-cap-hf-cb hf-cb --workloads load \
      --load levels=1:8:32,users=32,max_turns=2,rates=,search_levels=0 --resume
  }
  vllm_server_capacity() {  # at h200-cap-vllm's line (session a), under the bundle's interpreter
    study 660 h200-cap-vllm-server vllm-server --workloads load --load rates=8:32,search_levels=1 \
      --python vllm-server=/tmp/py-vllm
  }
  sglang_server_capacity() {
    study 660 h200-cap-sglang-server sglang-server --workloads load --load rates=8:32,search_levels=1 \
      --python sglang-server=/tmp/py-sgl
  }
  sglang_server_start3() {  # sglang-server's C = 128 levels once more, its capacity line's requests
    study 420 h200-starts-sglang-server sglang-server --workloads load --load levels=128,rates=,search_levels=0 \
      --python sglang-server=/tmp/py-sgl
  }
  sglang_ready() {  # SGLang's install (below, in parallel with vLLM's) is done
    until [ -f /tmp/sglang.installed ]; do sleep 5; done
  }
  if [ "$SESSION" != c ]; then  # SGLang installs as soon as its parts are staged, in parallel with vLLM's
    ( until staged sglang; do sleep 5; done; install_bundle sglang; touch /tmp/sglang.installed
      echo "== $(date -u +%T) sglang installed" ) &
  fi
  until staged vllm && staged qwen3-8b-shape 1; do sleep 5; done
  bash lab/h200/unpack_model.sh qwen3-8b-shape > /dev/null
  install_bundle vllm; echo "== $(date -u +%T) vllm installed"
  case "$SESSION" in
    a)
      study 420 h200-serve-vllm-server vllm-server --workloads load --load search_levels=0 \
        --python vllm-server=/tmp/py-vllm
      sglang_ready  # benchmark 4 alone on the host's CPUs
      PYTHONPATH=/tmp/lca-repo:/tmp/site bounded 150 "benchmark 4" python3 -m benchmarks.load_client \
        --levels 384,448,512 --seconds 6 --server-procs 8 --out "$R/load_client-h200-lean.json" | tail -n 8
      echo "== $(date -u +%T) benchmark 4 done"
      study 660 h200-cap-vllm vllm --workloads load --load rates=8:32,search_levels=1
      study 660 h200-cap-sglang sglang --workloads load --load rates=8:32,search_levels=1 ;;
    b)
      study 620 h200-cap-vllm-nocache vllm --workloads load --no-prefix-caching --load rates=8:32,search_levels=1
      sglang_ready
      study 620 h200-cap-sglang-nocache sglang --workloads load --no-prefix-caching --load rates=8:32,search_levels=1
      LCA_HF_CB=use_cuda_graph=true study 540 h200-cap-hf-cb hf-cb --workloads load \
        --load levels=1:8:32,users=32,max_turns=2,rates=,search_levels=0
      session_c ;;
    c)
      session_c ;;
    d)
      vllm_server_capacity; sglang_ready; sglang_server_capacity ;;
    e)
      vllm_nocache_rest; sglang_ready; sglang_nocache_rest; hf_cb_rest; session_c ;;
    f)
      vllm_nocache_rest; vllm_server_capacity; sglang_ready; sglang_server_capacity; sglang_nocache_rest
      hf_cb_rest; session_c ;;
    g)
      hf_cb_rest; session_c; sglang_ready; sglang_nocache_rest; sglang_server_start3 ;;
  esac
}

sitting_launch
