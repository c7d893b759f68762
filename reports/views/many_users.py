"""The Load section (many users at once): charts and blocks from ``analysis.many_users``.

Charts: output tokens/s and requests/s against the load, TTFT p50/p90/p99 and ITL p50/p99
against the load, latency against throughput (the Pareto view) and goodput; one panel per
workload variant, one colour per backend; with one load level, bars per backend instead of
lines. Tables: every level's figures per backend, with the engine's own KV-cache peak,
preemptions and prefix-cache hit rate, and prefix reuse expected vs reported.
"""

from __future__ import annotations

from typing import Any

import altair as alt
import pandas as pd
from markupsafe import Markup

from reports import fmt
from reports.analysis import many_users as mu
from reports.charts import WIDTH, _colors, _spec, bar_chart, single
from reports.kinds import ReportKind
from reports.stats import num
from reports.views import Block, Table, chart, compact, h3, p, side, table
from reports.views import capacity as cv
from reports.views import replicas as replicas_view


# --- charts -------------------------------------------------------------------------------------
def _data(levels: pd.DataFrame) -> pd.DataFrame:
    d = levels[levels["concurrency"].notna() & levels["rate_rps"].isna()].copy()
    d["variant"] = d["workload"] + " · " + d["mode"]
    return d


def _ticks(d: pd.DataFrame) -> list[int]:
    """The levels measured, as the axis ticks (a log axis would otherwise label 1.6, 1.8...)."""
    return sorted({int(c) for c in d["concurrency"]})


def _facet(chart: alt.Chart, d: pd.DataFrame) -> dict[str, Any]:
    return _spec(
        chart.properties(width=WIDTH, height=150).facet(
            column=alt.Column("variant:N", title=None, sort=list(dict.fromkeys(d["variant"])))
        )
    )


def per_level_chart(
    levels: pd.DataFrame, backends: list[str], value: str, title: str
) -> dict[str, Any] | None:
    """One figure against the closed-loop concurrency (log2), a line per backend."""
    d = _data(levels).dropna(subset=[value])
    if d.empty:
        return None
    if single(d["concurrency"]):
        color = alt.Color(
            "backend:N", title=None, scale=_colors(backends, list(dict.fromkeys(d["backend"]))), legend=None
        )
        return _facet(
            bar_chart(
                d,
                "backend",
                alt.Y(f"{value}:Q", title=title),
                color,
                ["backend", "variant", "case", "requests", alt.Tooltip(f"{value}:Q", format=".4g")],
                title=f"backend, at {int(d['concurrency'].iloc[0])} concurrent requests",
            ),
            d,
        )
    c = (
        alt.Chart(d)
        .mark_line(point=True)
        .encode(
            x=alt.X(
                "concurrency:Q",
                scale=alt.Scale(type="log", base=2),
                title="concurrent requests (log)",
                axis=alt.Axis(values=_ticks(d)),
            ),
            y=alt.Y(f"{value}:Q", title=title),
            color=alt.Color(
                "backend:N", title=None, scale=_colors(backends, list(dict.fromkeys(d["backend"])))
            ),
            tooltip=["backend", "variant", "case", "requests", alt.Tooltip(f"{value}:Q", format=".4g")],
        )
    )
    return _facet(c, d)


def percentiles_chart(
    levels: pd.DataFrame, backends: list[str], prefix: str, ps: tuple[int, ...], title: str, targets=()
) -> dict[str, Any] | None:
    """TTFT (or ITL) percentiles against concurrency: a line per backend, a dash per percentile (the legend
    shows the dashes), and each target's limit on this metric as a grey rule."""
    d = _data(levels)
    cols = [f"{prefix}_p{q}" for q in ps]
    long = d.melt(
        id_vars=["backend", "variant", "case", "concurrency", "requests"],
        value_vars=cols,
        var_name="percentile",
        value_name="ms",
    ).dropna(subset=["ms"])
    if long.empty:
        return None
    long["percentile"] = long["percentile"].str.replace(f"{prefix}_", "")
    if single(long["concurrency"]):
        color = alt.Color(
            "backend:N", title=None, scale=_colors(backends, list(dict.fromkeys(long["backend"])))
        )
        c = (
            alt.Chart(long)
            .mark_bar()
            .encode(
                x=alt.X(
                    "percentile:N",
                    sort=[f"p{q}" for q in ps],
                    title=f"at {int(long['concurrency'].iloc[0])} concurrent requests",
                    axis=alt.Axis(labelAngle=0),
                ),
                xOffset=alt.XOffset("backend:N", sort=backends),
                y=alt.Y("ms:Q", title=f"{title} (ms)"),
                color=color,
                tooltip=[
                    "backend",
                    "variant",
                    "case",
                    "percentile",
                    "requests",
                    alt.Tooltip("ms:Q", format=".4g"),
                ],
            )
        )
        return _facet(c, long)
    rules = [
        {"variant": v, "ms": lim.ms, "target": f"{t.name}: {lim.label()}"}
        for v in dict.fromkeys(long["variant"])
        for t in targets
        for lim in t.limits
        if lim.metric == prefix
    ]
    data = pd.concat(
        [
            long.assign(layer="level", target=""),
            pd.DataFrame(rules, columns=["variant", "ms", "target"]).assign(layer="target"),
        ],
        ignore_index=True,
    )
    values = [
        {k: None if isinstance(v, float) and v != v else v for k, v in r.items()}
        for r in data.to_dict("records")
    ]
    base = alt.Chart(alt.Data(values=values))
    lines = (
        base.transform_filter(alt.datum.layer == "level")
        .mark_line(point=True)
        .encode(
            x=alt.X(
                "concurrency:Q",
                scale=alt.Scale(type="log", base=2),
                title="concurrent requests (log)",
                axis=alt.Axis(values=_ticks(long)),
            ),
            y=alt.Y("ms:Q", scale=alt.Scale(type="log"), title=f"{title} (ms, log)"),
            color=alt.Color(
                "backend:N", title=None, scale=_colors(backends, list(dict.fromkeys(long["backend"])))
            ),
            strokeDash=alt.StrokeDash(
                "percentile:N",
                sort=[f"p{q}" for q in ps],
                legend=alt.Legend(symbolType="stroke", symbolStrokeWidth=2, symbolSize=300),
            ),
            tooltip=[
                "backend:N",
                "variant:N",
                "case:N",
                "percentile:N",
                "requests:Q",
                alt.Tooltip("ms:Q", format=".4g"),
            ],
        )
    )
    marks = [lines]
    if rules:
        marks.append(
            base.transform_filter(alt.datum.layer == "target")
            .mark_rule(color="#888", strokeDash=[1, 3])
            .encode(y="ms:Q", tooltip=["target:N"])
        )
    return _spec(
        alt.layer(*marks)
        .properties(width=WIDTH, height=150)
        .facet(column=alt.Column("variant:N", title=None, sort=list(dict.fromkeys(long["variant"]))))
    )


def pareto_chart(levels: pd.DataFrame, backends: list[str]) -> dict[str, Any] | None:
    """TTFT p90 against output tokens/s, the levels of a backend joined in order of concurrency."""
    d = _data(levels).dropna(subset=["output_tps", "ttft_p90"])
    if d.empty:
        return None
    c = (
        alt.Chart(d)
        .mark_line(point=True)
        .encode(
            x=alt.X("output_tps:Q", title="output tokens/s"),
            y=alt.Y("ttft_p90:Q", scale=alt.Scale(type="log"), title="TTFT p90 (ms, log)"),
            order="concurrency:Q",
            color=alt.Color(
                "backend:N", title=None, scale=_colors(backends, list(dict.fromkeys(d["backend"])))
            ),
            tooltip=[
                "backend",
                "variant",
                "case",
                alt.Tooltip("output_tps:Q", format=".4g"),
                alt.Tooltip("ttft_p90:Q", format=".4g"),
            ],
        )
    )
    return _facet(c, d)


# key -> (builder of the spec from the section's data and the report, label)
CHARTS = {
    "throughput": (
        lambda d, r: per_level_chart(d["levels"], r.ds.backends, "output_tps", "output tokens/s"),
        "output tokens/s vs concurrency",
    ),
    "requests": (
        lambda d, r: per_level_chart(d["levels"], r.ds.backends, "rps", "requests/s"),
        "requests/s vs concurrency",
    ),
    "ttft": (
        lambda d, r: percentiles_chart(
            d["levels"], r.ds.backends, "ttft", (50, 90, 99), "TTFT", d["cap"]["targets"]
        ),
        "TTFT percentiles vs concurrency, the targets' TTFT limits as rules",
    ),
    "itl": (
        lambda d, r: percentiles_chart(
            d["levels"], r.ds.backends, "itl", (50, 99), "inter-token latency", d["cap"]["targets"]
        ),
        "inter-token latency percentiles vs concurrency",
    ),
    "pareto": (lambda d, r: pareto_chart(d["levels"], r.ds.backends), "TTFT p90 vs output tokens/s"),
    "goodput": (
        lambda d, r: per_level_chart(
            d["levels"], r.ds.backends, "goodput_rps", "goodput (requests/s within the SLO)"
        ),
        "goodput vs concurrency",
    ),
    "users": (
        lambda d, r: cv.users_chart(d["cap"]["steady"], d["cap"]["targets"], r.ds.backends),
        "tok/s a user vs tok/s of the GPU",
    ),
}


# --- blocks -------------------------------------------------------------------------------------
def level_table(levels: pd.DataFrame, backend: str) -> Table:
    cols = [
        "variant",
        "load",
        "requests",
        "output tok/s",
        "requests/s",
        "TTFT p50 / p90 / p99 ms",
        "ITL p50 / p99 ms",
        "TPOT p50 ms",
        "ITL per chunk p50 ms",
        "server TTFT / TPOT p50 ms",
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
                r["case"],
                f"{r['requests']}" + (f" ({r['errors']} failed)" if r["errors"] else ""),
                fmt.n(r["output_tps"]),
                fmt.n(r["rps"], 2),
                " / ".join(fmt.n(r[f"ttft_p{q}"]) for q in (50, 90, 99)),
                " / ".join(fmt.n(r[f"itl_p{q}"], 2) for q in (50, 99)),
                fmt.n(r["tpot_p50"], 2),
                fmt.n(r["itl_chunk_p50"], 2),
                f"{fmt.n(r['server_ttft_p50'])} / {fmt.n(r['server_tpot_p50'], 2)}",
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
    """Per level: the caller's TTFT beside the engine's own (in process) or the server's
    (its /metrics), and for a stepped engine its mean step: what stands between the engine
    producing a first token and the caller seeing it."""
    rows = levels[levels["engine_ttft_p50"].notna() | levels["server_ttft_p50"].notna()]
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
            "server TTFT p50 ms (/metrics, level)",
            "caller − server ms",
            "engine step mean ms",
        ],
        numeric={3, 4, 5, 6, 7, 8},
    )
    for r in rows.to_dict("records"):
        server_gap = (
            r["ttft_p50"] - r["server_ttft_p50"]
            if pd.notna(r["server_ttft_p50"]) and pd.notna(r["ttft_p50"])
            else None
        )
        t.add(
            [
                r["backend"],
                f"{r['workload']} · {r['mode']}",
                r["case"],
                fmt.n(r["ttft_p50"]),
                fmt.n(r["engine_ttft_p50"]),
                fmt.n(r["caller_minus_engine_ttft_p50"]),
                fmt.n(r["server_ttft_p50"]),
                fmt.n(server_gap),
                fmt.n(r["engine_step_ms"], 1),
            ]
        )
    return t


def blocks(section, slots) -> list[Block]:
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
                ". Window = first submit to last finish of a level; throughput = output tokens ÷ "
                "window; TTFT at the caller from submit; ITL = every gap between consecutive tokens, "
                "pooled (tokens that came in one chunk give gaps of 0); ITL per chunk = every gap "
                "between consecutive chunks (what vLLM's bench serve calls ITL); TPOT = a request's "
                "(last − first token) ÷ (tokens − 1) (what AIPerf and GuideLLM call ITL). Percentiles "
                "by linear interpolation; n is each level's requests served (ITL: its gaps). A failed "
                'request (shown as "N failed") adds no tokens, stays in the window and counts as '
                "missing the SLO. Server TTFT / TPOT: the server's own /metrics histograms over the "
                "level (scraped before and after it, percentiles interpolated within its buckets); "
                "caller TTFT − server TTFT is the client, the network and the HTTP front end. Client "
                "CPU: the busiest client process's CPU time ÷ the level's wall time."
            ),
            muted=True,
        ),
        chart(slots["throughput"]),
        chart(slots["requests"]),
        chart(slots["ttft"]),
        chart(slots["itl"]),
        h3("Latency against throughput, and goodput"),
        chart(slots["pareto"]),
        p(
            Markup(
                "Goodput: requests per second that met the SLO <b>TTFT ≤ {} ms and TPOT ≤ {} ms</b> ({})."
            ).format(fmt.n(slo["ttft_ms"]), fmt.n(slo["tpot_ms"]), d["slo_source"])
        ),
        chart(slots["goodput"]),
        side([(b, [table(level_table(levels, b))]) for b in section.backends]),
        h3("The caller's TTFT against the engine's and the server's own")
        if engine_rows is not None
        else None,
        p(
            "Engine TTFT: the engine's own per-request figure (vLLM in process: arrival in the "
            "engine to the first token out of the engine core, by its clock). Server TTFT: the "
            "server's TTFT histogram over the level (its /metrics, bucket-interpolated), so "
            "caller − server is the client, the network and the HTTP front end. Engine step: the "
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
    from reports.analysis import replicas

    configs = d.get("replicas")
    return None if configs is None else replicas.capacities(d["cap"]["capacity"], configs)


def caveats(section, report) -> list:
    from reports.analysis.caveats import Caveat

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


def jobs(section, report) -> list:
    from reports.analysis.summary import Job

    out = []
    for (w, m), g in section.data["peaks"].groupby(["workload", "mode"], sort=False):
        g = g.sort_values("peak_tps", ascending=False)
        values = [
            (
                r["backend"],
                f"{fmt.n(r['peak_tps'])} tok/s at {r['peak_case']}"
                + (f" ({r['peak_errors']} failed: every level had failures)" if r["peak_errors"] else ""),
            )
            for r in g.to_dict("records")
        ]
        out.append(
            Job(
                f"Many users ({w} · {m})",
                "each backend's own peak output tokens/s over its levels (levels differ: "
                "compared at one level in the throughput row)",
                values,
                None,
                "one backend: nothing to choose"
                if len(values) < 2
                else "peaks at different levels: not ranked",
            )
        )
    return out


# (levels column, figure, unit, which way is better): what the regression gate compares per level
GATED = (
    ("output_tps", "output tokens/s", "tok/s", "higher"),
    ("goodput_rps", "goodput (requests/s within the SLO)", "req/s", "higher"),
    ("ttft_p50", "TTFT p50", "ms", "lower"),
    ("itl_p50", "ITL p50", "ms", "lower"),
)


def figures(section, report) -> list:  # noqa: ARG001
    """Each level's throughput and median latencies as gate
    figures (one run per level: no spread measured)."""
    from reports.analysis.figures import Figure

    out = []
    for r in section.data["levels"].to_dict("records"):
        group = f"Load · {r['workload']} · {r['mode']} · {r['case']}"
        for col, label, unit, better in GATED:
            value = r[col]
            if value is not None and value == value:
                n = r["itl_n"] if col.startswith("itl") else r["requests"]
                out.append(Figure(group, label, r["backend"], float(value), unit, better, n=int(n)))
    return out


def _analyse(rows: pd.DataFrame, ctx, name: str) -> dict[str, Any]:  # noqa: ARG001
    from reports.analysis import capacity

    slo = ctx.slo or mu.DEFAULT_SLO
    levels = mu.per_level(rows, slo)
    envs = ctx.ds.envs
    cap = capacity.analyse(
        rows, mu.level_facts(rows), capacity.targets_of(envs), ctx.gpu_hour_usd or capacity.price_of(envs)
    )
    labels = list(dict.fromkeys(levels["backend"]))
    caching = {b: ctx.ds.run_env_of(b).get("prefix_caching", True) for b in labels}  # older runs: on
    names = {b: ctx.ds.sources.get(b, ("", b))[1] for b in labels}
    cap["caching"] = capacity.caching_ratios(cap["steady"], cap["capacity"], caching, names)
    cap["via"] = {
        b: "HTTP" if names[b] == "openai" or names[b].endswith("-server") else "in process" for b in labels
    }
    from reports.analysis import replicas

    return {
        "levels": levels,
        "peaks": mu.peaks(levels),
        "slo": slo,
        "cap": cap,
        "replicas": replicas.configurations(
            rows, levels, ctx.ds
        ),  # tp vs dp (issue 25): empty unless a dp > 1 ran
        "slo_source": "set for this report (--slo)" if ctx.slo else f"default: {mu.SLO_SOURCE}",
    }


KIND = ReportKind(
    "load",
    _analyse,
    blocks=lambda s, slots, report: cv.blocks(s.data, s.backends, slots) + blocks(s, slots),
    charts=CHARTS,
    caveats=lambda s, report: caveats(s, report) + cv.caveats(s.data, s.name) + replicas_view.caveats(s),
    jobs=lambda s, rows, report: cv.jobs(s.data) + jobs(s, report),
    sees_failures=True,
    figures=figures,
    agreement=False,
    steady_state=True,
)
