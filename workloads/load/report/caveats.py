"""The Load section's caveats: what a reader must know before trusting a level's figures.

A backend that preempted requests (its KV cache ran out), an engine fact that cannot be true (shown
as no figure), a backend that served one request at a time behind a queue, a client process busy
enough to limit the load, and levels too small for a stable p99.
"""

from __future__ import annotations

from llm_call_anatomy.reports import fmt
from llm_call_anatomy.reports.stats import num
from llm_call_anatomy.workloads.load.report import levels as mu


def caveats(section, report) -> list:
    """The Load section's caveats from its levels: preemptions (the KV cache ran out; NaN is not reported, not
    zero), engine facts that cannot be true, backends that served one request at a time behind a queue, client
    processes busy enough to limit the load, and levels under 100 requests (p99 near the maximum)."""
    from llm_call_anatomy.reports.analysis.caveats import Caveat

    out = []
    levels = section.data["levels"]
    for r in levels.to_dict("records"):
        if num(r["preemptions"]) and r["preemptions"] > 0:  # NaN: not reported (truthy, but no preemption)
            out.append(
                Caveat(
                    section.name,
                    f"{r['backend']} preempted {fmt.n(r['preemptions'])} requests at "
                    f"{r['workload']} · {r['mode']} {r['case']}: the KV cache ran out (peak "
                    f"{fmt.pct(r['kv_cache_usage_peak'])}).",
                )
            )
    for r in levels.to_dict("records"):
        if r["fact_problems"]:
            out.append(
                Caveat(
                    section.name,
                    f"{r['backend']} at {r['workload']} · {r['mode']} {r['case']} reported "
                    f"{'; '.join(r['fact_problems'])}: not shown as a figure.",
                )
            )
    queued = sorted(
        {
            r["backend"]
            for r in levels.to_dict("records")
            if r["served_as"] and "queued" in str(r["served_as"])
        }
    )
    if queued:
        out.append(
            Caveat(
                section.name,
                f"{', '.join(queued)} served one request at a time behind a queue (generate() "
                "behind a web server): at C > 1 their TTFT is mostly waiting (queue p50 in the table).",
            )
        )
    limited = [r for r in levels.to_dict("records") if r["client_limited"]]
    for r in limited:
        out.append(
            Caveat(
                section.name,
                f"{r['backend']} at {r['workload']} · {r['mode']} {r['case']}: a client process "
                f"was busy {fmt.pct(r['client_busy_max'])} of the level: {mu.CLIENT_LIMITED} "
                "(more --client-procs).",
            )
        )
    small = levels[levels["requests"] < 100]
    if len(small):
        out.append(
            Caveat(
                section.name,
                f"{len(small)} of {len(levels)} levels have fewer than 100 requests: their p99 is "
                "close to their maximum, not a stable tail.",
            )
        )
    return out
