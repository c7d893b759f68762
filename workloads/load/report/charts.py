"""The Load section's charts (many users at once), each built from ``analysis.many_users``'s levels.

Output tokens/s and requests/s against the load, TTFT p50/p90/p99 (with the targets' limits as
rules) and ITL p50/p99 against the load, latency against throughput (the Pareto view) and goodput;
one panel per workload variant, one colour per backend; with one load level, bars per backend
instead of lines. :data:`CHARTS` is what the kind registers: a key per chart slot the page's blocks
(``views.many_users_tables``) ask for, the capacity half's per-user chart among them.
"""

from __future__ import annotations

from typing import Any

import altair as alt
import pandas as pd

from llm_call_anatomy.reports.charts import WIDTH, backend_color, bar_chart, levels_and_rules, single, to_spec
from llm_call_anatomy.workloads.load.report.capacity_chart import users_chart
from llm_call_anatomy.workloads.load.report.mix_groups import variants


def _data(levels: pd.DataFrame, classes: dict | None = None) -> pd.DataFrame:
    """The closed-loop levels with their panel ("workload · variant"; a group of backends that ran other
    requests, ``classes``, in a panel of its own)."""
    d = levels[levels["concurrency"].notna() & levels["rate_rps"].isna()].copy()
    d["variant"] = variants(d, classes) if len(d) else d["workload"] + " · " + d["mode"]
    return d


def _ticks(d: pd.DataFrame) -> list[int]:
    """The levels measured, as the axis ticks (a log axis would otherwise label 1.6, 1.8...)."""
    return sorted({int(c) for c in d["concurrency"]})


def _concurrency_x(d: pd.DataFrame) -> alt.X:
    """The closed-loop concurrency on a log2 axis, ticked at the levels measured."""
    return alt.X(
        "concurrency:Q",
        scale=alt.Scale(type="log", base=2),
        title="concurrent requests (log)",
        axis=alt.Axis(values=_ticks(d)),
    )


def _facet(chart: alt.Chart, d: pd.DataFrame) -> dict[str, Any]:
    return to_spec(
        chart.properties(width=WIDTH, height=150).facet(
            column=alt.Column("variant:N", title=None, sort=list(dict.fromkeys(d["variant"])))
        )
    )


def per_level_chart(
    levels: pd.DataFrame, backends: list[str], value: str, title: str, classes: dict | None = None
) -> dict[str, Any] | None:
    """One figure against the closed-loop concurrency (log2), a line per backend."""
    d = _data(levels, classes).dropna(subset=[value])
    if d.empty:
        return None
    if single(d["concurrency"]):
        color = backend_color(backends, d, legend=None)
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
            x=_concurrency_x(d),
            y=alt.Y(f"{value}:Q", title=title),
            color=backend_color(backends, d),
            tooltip=["backend", "variant", "case", "requests", alt.Tooltip(f"{value}:Q", format=".4g")],
        )
    )
    return _facet(c, d)


def percentiles_chart(
    levels: pd.DataFrame,
    backends: list[str],
    prefix: str,
    ps: tuple[int, ...],
    title: str,
    targets=(),
    classes: dict | None = None,
) -> dict[str, Any] | None:
    """TTFT (or ITL) percentiles against concurrency: a line per backend, a dash per percentile (the legend
    shows the dashes), and each target's limit on this metric as a grey rule."""
    d = _data(levels, classes)
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
        color = backend_color(backends, long)
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
    base = levels_and_rules(long, rules, "ms")
    lines = (
        base.transform_filter(alt.datum.layer == "level")
        .mark_line(point=True)
        .encode(
            x=_concurrency_x(long),
            y=alt.Y("ms:Q", scale=alt.Scale(type="log"), title=f"{title} (ms, log)"),
            color=backend_color(backends, long),
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
    return to_spec(
        alt.layer(*marks)
        .properties(width=WIDTH, height=150)
        .facet(column=alt.Column("variant:N", title=None, sort=list(dict.fromkeys(long["variant"]))))
    )


def pareto_chart(
    levels: pd.DataFrame, backends: list[str], classes: dict | None = None
) -> dict[str, Any] | None:
    """TTFT p90 against output tokens/s, the levels of a backend joined in order of concurrency."""
    d = _data(levels, classes).dropna(subset=["output_tps", "ttft_p90"])
    if d.empty:
        return None
    c = (
        alt.Chart(d)
        .mark_line(point=True)
        .encode(
            x=alt.X("output_tps:Q", title="output tokens/s"),
            y=alt.Y("ttft_p90:Q", scale=alt.Scale(type="log"), title="TTFT p90 (ms, log)"),
            order="concurrency:Q",
            color=backend_color(backends, d),
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


def _groups(d: dict) -> dict | None:
    """The section's groups of backends that ran the same requests (``workloads.load.report.capacity``)."""
    return d["cap"].get("mix_classes")


# key -> (builder of the spec from the section's data and the report, label)
CHARTS = {
    "throughput": (
        lambda d, r: per_level_chart(d["levels"], r.ds.backends, "output_tps", "output tokens/s", _groups(d)),
        "output tokens/s vs concurrency",
    ),
    "requests": (
        lambda d, r: per_level_chart(d["levels"], r.ds.backends, "rps", "requests/s", _groups(d)),
        "requests/s vs concurrency",
    ),
    "ttft": (
        lambda d, r: percentiles_chart(
            d["levels"], r.ds.backends, "ttft", (50, 90, 99), "TTFT", d["cap"]["targets"], _groups(d)
        ),
        "TTFT percentiles vs concurrency, the targets' TTFT limits as rules",
    ),
    "itl": (
        lambda d, r: percentiles_chart(
            d["levels"],
            r.ds.backends,
            "itl",
            (50, 99),
            "inter-token latency",
            d["cap"]["targets"],
            _groups(d),
        ),
        "inter-token latency percentiles vs concurrency",
    ),
    "pareto": (
        lambda d, r: pareto_chart(d["levels"], r.ds.backends, _groups(d)),
        "TTFT p90 vs output tokens/s",
    ),
    "goodput": (
        lambda d, r: per_level_chart(
            d["levels"], r.ds.backends, "goodput_rps", "goodput (requests/s within the SLO)", _groups(d)
        ),
        "goodput vs concurrency",
    ),
    "users": (
        lambda d, r: users_chart(d["cap"]["steady"], d["cap"]["targets"], r.ds.backends, _groups(d)),
        "tok/s a user vs tok/s of the GPU",
    ),
}
