"""The Load section's tables and the page blocks that set them among its charts.

Every level's figures per backend (throughput, TTFT/ITL/TPOT percentiles, goodput, client CPU, the
engine's own KV-cache peak, preemptions and prefix-cache hit rate, prefix reuse expected vs
reported), the caller's TTFT beside the engine's and the server's own, and the prose that says how
each figure is defined. The chart slots come from ``views.many_users_charts``; the tp-vs-dp
blocks from ``views.replicas``.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
from markupsafe import Markup

from llm_call_anatomy.reports import fmt
from llm_call_anatomy.reports.views import Block, Table, chart, compact, h3, p, side, table
from llm_call_anatomy.workloads.load.report import labels as names
from llm_call_anatomy.workloads.load.report import levels as mu
from llm_call_anatomy.workloads.load.report import replicas
from llm_call_anatomy.workloads.load.report import replicas_tables as replicas_view
from llm_call_anatomy.workloads.load.report import server_figures as server


def level_table(levels: pd.DataFrame, backend: str) -> Table:
    """One backend's table of every level over all its requests (first wave included): throughput,
    TTFT / ITL / TPOT percentiles, the server's own TTFT and TPOT (``server_figures``), client CPU (flagged
    where it limited the load), the SLO met and goodput, queueing, reuse expected vs reported, and the
    engine's KV peak, preemptions and prefix-cache hits."""
    cols = [
        "variant",
        "load",
        "requests",
        names.LEVEL_TPS,
        "requests/s",
        "TTFT p50 / p90 / p99 ms",
        "ITL p50 / p99 ms",
        "TPOT p50 ms",
        "ITL per chunk p50 ms",
        "server TTFT ms: mean · p50",
        "server TPOT (or ITL) ms: mean · p50",
        "client CPU",
        "met SLO (of all started)",
        "goodput req/s",
        "queue p50 ms",
        "reuse expected / reported",
        "KV peak",
        "preemptions",
        "prefix-cache hits",
    ]
    t = Table(cols, numeric=set(range(2, len(cols))))
    for r in levels[levels["backend"] == backend].to_dict("records"):
        t.add(
            [
                f"{r['workload']} · {r['mode']}",
                r["level"],
                f"{r['requests']}" + (f" ({r['errors']} failed)" if r["errors"] else ""),
                fmt.n(r["output_tps"]),
                fmt.n(r["rps"], 2),
                " / ".join(fmt.n(r[f"ttft_p{q}"]) for q in (50, 90, 99)),
                " / ".join(fmt.n(r[f"itl_p{q}"], 2) for q in (50, 99)),
                fmt.n(r["tpot_p50"], 2),
                fmt.n(r["itl_chunk_p50"], 2),
                server.ttft_cell(r),
                server.tpot_cell(r),
                fmt.pct(r["client_busy_max"]) + (f" ({mu.CLIENT_LIMITED})" if r["client_limited"] else ""),
                f"{r['slo_met']} ({fmt.pct(r['slo_share'])})",
                fmt.n(r["goodput_rps"], 2),
                fmt.n(r["queue_p50"]),
                f"{fmt.pct(r['expected_reuse'])} / {fmt.pct(r['reported_reuse'])}",
                fmt.pct(r["kv_cache_usage_peak"]),
                fmt.n(r["preemptions"]),
                fmt.pct(r["prefix_hit_rate"]),
            ]
        )
    return t


def caller_engine_table(levels: pd.DataFrame) -> Table | None:
    """Per level: the caller's TTFT beside the engine's own (in process: p50s of the same requests) or
    the server's (its /metrics: the exact means, and the server's p50 with its bucket where wide), and for
    a stepped engine its mean step: what stands between the engine producing a first token and the caller
    seeing it. A server that exports no histograms has its row, saying so."""
    rows = levels[levels["engine_ttft_p50"].notna() | levels["server_metrics"].notna()]
    if rows.empty:
        return None
    t = Table(
        [
            "backend",
            "variant",
            "load",
            "caller TTFT p50 ms",
            "engine TTFT p50 ms (per request)",
            "caller − engine p50 ms",
            "caller TTFT mean ms",
            "server TTFT mean ms (/metrics: sum ÷ count)",
            "server TTFT p50 ms (its bucket where wide)",
            "caller − server ms (mean − mean)",
            "engine step mean ms",
        ],
        numeric=set(range(3, 11)),
    )
    for r in rows.to_dict("records"):
        recorded = r["server_metrics"] == "recorded"
        t.add(
            [
                r["backend"],
                f"{r['workload']} · {r['mode']}",
                r["level"],
                fmt.n(r["ttft_p50"]),
                fmt.n(r["engine_ttft_p50"]),
                fmt.n(r["caller_minus_engine_ttft_p50"]),
                fmt.n(r["ttft_mean"]) if pd.notna(r["server_metrics"]) else "–",
                server.ttft_mean_cell(r),
                server.p50_text(r["server_ttft_p50"], r["server_ttft_p50_bucket"]).removeprefix("p50 ")
                if recorded
                else server.ttft_mean_cell(r),
                fmt.n(r["caller_minus_server_ttft_mean"]),
                fmt.n(r["engine_step_ms"], 1),
            ]
        )
    return t


def goodput_text(slo: dict, goodput_of: dict | None, source: str) -> Markup:
    """What goodput counted against: the page's pair, or each column's where their runs' pairs differ (each
    run's requests against its own target, issue 40)."""
    pairs = {b: p for b, p in (goodput_of or {}).items() if p}
    if len({(p["ttft_ms"], p["tpot_ms"]) for p in pairs.values()}) > 1:
        each = Markup("; ").join(
            Markup("{}: <b>TTFT ≤ {} ms and TPOT ≤ {} ms</b>").format(
                b, fmt.n(p["ttft_ms"]), fmt.n(p["tpot_ms"])
            )
            for b, p in pairs.items()
        )
        return Markup("Goodput: requests per second that met each column's own run's SLO ({}).").format(each)
    return Markup(
        "Goodput: requests per second that met the SLO <b>TTFT ≤ {} ms and TPOT ≤ {} ms</b> ({})."
    ).format(fmt.n(slo["ttft_ms"]), fmt.n(slo["tpot_ms"]), source)


def blocks(section, slots) -> list[Block]:
    """The Load section's all-requests half: how each figure is defined, the throughput, request, TTFT and ITL
    charts, latency against throughput and goodput within the SLO, each backend's level table, the caller's
    TTFT against the engine's and server's where they report one, and the tp-vs-dp blocks."""
    d = section.data
    levels, slo = d["levels"], d["slo"]
    served = {
        b: ", ".join(sorted({str(x) for x in levels[levels["backend"] == b]["served_as"].dropna()}))
        for b in section.backends
    }
    engine_rows = caller_engine_table(levels)
    out: list[Block | None] = [
        h3("Every request of every level, the first wave included"),
        p(
            "These charts and tables take all of a level's requests, as they came "
            "(the steady-state figures above leave the first wave out). Closed loop: "
            "C requests in flight at all times (each user runs its turns in order). "
            + "; ".join(f"{b}: {s}" for b, s in served.items() if s)
            + (
                ". Window = first submit to last finish of a level; "
                + names.LEVEL_TPS_TEXT
                + "; TTFT at the caller from submit; ITL = every gap between consecutive tokens, "
                "pooled (tokens that came in one chunk give gaps of 0); ITL per chunk = every gap "
                "between consecutive chunks (what vLLM's bench serve calls ITL); TPOT = a request's "
                "(last − first token) ÷ (tokens − 1) (what AIPerf and GuideLLM call ITL). Percentiles "
                "by linear interpolation; n is each level's requests served (ITL: its gaps). A failed "
                'request (shown as "N failed") adds no tokens, stays in the window and counts as '
                "missing the SLO. "
            )
            + server.definitions(levels)
            + " Client CPU: the busiest client process's CPU time ÷ the level's wall time.",
            muted=True,
        ),
        chart(slots["throughput"]),
        chart(slots["requests"]),
        chart(slots["ttft"]),
        chart(slots["itl"]),
        h3("Latency against throughput, and goodput"),
        chart(slots["pareto"]),
        p(goodput_text(slo, d.get("goodput_of"), d["slo_source"])),
        chart(slots["goodput"]),
        side([(b, [table(level_table(levels, b))]) for b in section.backends]),
        h3("The caller's TTFT against the engine's and the server's own")
        if engine_rows is not None
        else None,
        p(
            "Engine TTFT: the engine's own per-request figure (vLLM in process: arrival in the "
            "engine to the first token out of the engine core, by its clock); caller − engine is "
            "the p50 of the per-request differences. Server TTFT: its exact mean (the /metrics "
            "histogram's sum ÷ count over the level) beside the caller's mean over the same "
            "requests, so caller − server (mean − mean) is the client, the network and the HTTP "
            "front end; its p50 is given as the bucket it lies in where that bucket is wide (as "
            "defined above). Engine step: the "
            "mean LLMEngine.step() of vLLM stepped in process, which runs on the load loop's "
            "event loop: an arrival and a first token wait for the step in flight, so caller − "
            "engine of up to about one step there is the harness's stepping, not the engine.",
            muted=True,
        )
        if engine_rows is not None
        else None,
        table(engine_rows) if engine_rows is not None else None,
        *replicas_view.blocks(d.get("replicas"), replicas_capacities(d)),
        p(
            "Reuse expected = tokens each prompt shares with what came before it (every user's "
            "system prompt and tools; the user's previous turn) ÷ prompt tokens; reported = "
            "the engine's cached tokens ÷ prompt tokens. KV peak, preemptions and prefix-cache "
            "hits are the engine's own figures over the level, where it reports them.",
            muted=True,
        ),
    ]
    return compact(out)


def replicas_capacities(d: dict[str, Any]) -> pd.DataFrame | None:
    configs = d.get("replicas")
    return None if configs is None else replicas.capacities(d["cap"]["capacity"], configs)
