"""The Load section's caveats: what a reader must know before trusting a level's figures.

A backend that preempted requests (its KV cache ran out), an engine fact that cannot be true (shown
as no figure), a backend that served one request at a time behind a queue, a client process busy
enough to limit the load, levels too small for a stable p99, and a batch target's level that is not the
Summary's peak (two definitions of tok/s: :func:`peak_disagreements`).
"""

from __future__ import annotations

from llm_call_anatomy.reports import fmt
from llm_call_anatomy.reports.model import Caveat
from llm_call_anatomy.reports.stats import num
from llm_call_anatomy.workloads.load.report import levels as mu
from llm_call_anatomy.workloads.load.report.capacity_cells import level_text
from llm_call_anatomy.workloads.load.report.labels import LEVEL_TPS, STEADY_TPS

LOOP_OF_CASE = {"C": "closed", "rate": "open"}  # a level's case, ``C=8`` or ``rate=16``: its loop


def caveats(section, report) -> list:
    """The Load section's caveats from its levels: preemptions (the KV cache ran out; NaN is not reported, not
    zero), engine facts that cannot be true, backends that served one request at a time behind a queue, client
    processes busy enough to limit the load, and levels under 100 requests (p99 near the maximum)."""
    out = []
    levels = section.data["levels"]
    for r in levels.to_dict("records"):
        if num(r["preemptions"]) and r["preemptions"] > 0:  # NaN: not reported (truthy, but no preemption)
            out.append(
                Caveat(
                    section.name,
                    f"{r['backend']} preempted {fmt.n(r['preemptions'])} requests at "
                    f"{r['workload']} · {r['mode']} {r['level']}: the KV cache ran out (peak "
                    f"{fmt.pct(r['kv_cache_usage_peak'])}).",
                )
            )
    for r in levels.to_dict("records"):
        if r["fact_problems"]:
            out.append(
                Caveat(
                    section.name,
                    f"{r['backend']} at {r['workload']} · {r['mode']} {r['level']} reported "
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
                f"{r['backend']} at {r['workload']} · {r['mode']} {r['level']}: a client process "
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
    out += [Caveat(section.name, line) for line in peak_disagreements(section.data)]
    return out


def peak_disagreements(data: dict) -> list[str]:
    """Where a backend's batch target (its level of peak steady-window tok/s) is another level than the
    Summary's peak (its level of peak whole-level tok/s) in the same loop: the two levels and why they can
    differ (the whole level counts the first wave and the drain, which weigh most in short levels; the
    steady window leaves them out). One line each; none where they agree (issue 43)."""
    caps, peaks = data["cap"]["capacity"], data["peaks"]
    if caps.empty or peaks.empty:
        return []
    summary = {(p["backend"], p["workload"], p["mode"]): p for p in peaks.to_dict("records")}
    out = []
    for r in caps[caps["bound"] == "peak"].to_dict("records"):
        p = summary.get((r["backend"], r["workload"], r["mode"]))
        if p is None or num(r["value"]) is None:
            continue
        letter, _, number = str(p["peak_case"]).partition("=")
        if LOOP_OF_CASE.get(letter) != r["loop"] or num(number) == num(r["value"]):
            continue
        out.append(
            f"{r['backend']} · {r['workload']} · {r['mode']}: the batch target's level is "
            f"{level_text(r, r['value'])} (the peak of {STEADY_TPS}), the Summary's peak is "
            f"{level_text(r, num(number))} (the peak of {LEVEL_TPS}): the whole level counts the first wave "
            "and the drain, which weigh most where a level is short, and the steady window leaves them out."
        )
    return out
