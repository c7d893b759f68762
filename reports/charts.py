"""Altair charts of the analysis results, returned as Vega-Lite specs (dicts) for the page to embed.

Every chart is built from small pre-aggregated tables (medians with their IQR), so the specs
stay a few kilobytes. Backends keep one colour across charts (the column order). A chart whose x
axis has one value (one temperature, one prompt length, one turn, one load level) draws bars, one
per series, with that value in the axis title: a line through one point is a lone dot.
"""

from __future__ import annotations

from typing import Any

import altair as alt
import pandas as pd

WIDTH, HEIGHT = 230, 170


PALETTE = [
    "#4e79a7",
    "#f28e2b",
    "#e15759",
    "#76b7b2",
    "#59a14f",
    "#edc948",
    "#b07aa1",
    "#ff9da7",
    "#9c755f",
    "#bab0ac",
]
GREYS = ["#444444", "#888888", "#bbbbbb"]


def colors(backends: list[str], present: list[str]) -> alt.Scale:
    """Only the series present, each backend in its own colour on every chart (roofline lines in grey)."""
    shown = [b for b in backends if b in present] + [s for s in present if s not in backends]
    extra = [s for s in shown if s not in backends]
    colors = [
        PALETTE[backends.index(b) % len(PALETTE)] if b in backends else GREYS[extra.index(b) % len(GREYS)]
        for b in shown
    ]
    return alt.Scale(domain=shown, range=colors)


def inline_data(frame: pd.DataFrame) -> alt.Data:
    """``frame``'s rows written into the spec, NaN as null (no NaN in the page's JSON)."""
    return alt.Data(
        values=[
            {k: None if isinstance(v, float) and v != v else v for k, v in r.items()}
            for r in frame.to_dict("records")
        ]
    )


def levels_and_rules(levels: pd.DataFrame, rules: list[dict[str, Any]], value: str) -> alt.Chart:
    """The base of a load chart with its targets drawn: ``levels`` (layer ``level``) and one row per rule
    (layer ``target``: its variant, its ``value`` and the target's label), inline with no NaN."""
    data = pd.concat(
        [
            levels.assign(layer="level", target=""),
            pd.DataFrame(rules, columns=["variant", value, "target"]).assign(layer="target"),
        ],
        ignore_index=True,
    )
    return alt.Chart(inline_data(data))


def backend_color(backends: list[str], data: pd.DataFrame, **options: Any) -> alt.Color:
    """Colour by ``backend``, each backend in its own colour (:func:`_colors`), over the backends present in
    ``data`` in their order there; ``options``: more of ``alt.Color``'s (``legend=None``)."""
    return alt.Color(
        "backend:N", title=None, scale=colors(backends, list(dict.fromkeys(data["backend"]))), **options
    )


def to_spec(chart: alt.TopLevelMixin) -> dict[str, Any]:
    return chart.configure_view(stroke=None).configure_axis(labelFontSize=11, titleFontSize=11).to_dict()


def single(values: Any) -> bool:
    """One x value only: a line through it is a lone dot on
    a meaningless axis, so the chart draws bars instead."""
    return len({v for v in values if v is not None and v == v}) == 1


def bar_chart(
    data: pd.DataFrame,
    category: str,
    y: alt.Y,
    color: alt.Color,
    tooltip: list,
    err: tuple[str, str] | None = None,
    sort: list | None = None,
    title: str | None = None,
) -> alt.LayerChart:
    """The one-x-value form of a chart: a bar per ``category``
    (its IQR as an error bar where ``err`` names it)."""
    base = alt.Chart().encode(
        x=alt.X(f"{category}:N", title=title, sort=sort, axis=alt.Axis(labelAngle=0, labelLimit=160)),
        color=color,
    )
    layers = [base.mark_bar().encode(y=y, tooltip=tooltip)]
    if err is not None:
        layers.append(
            base.transform_filter(f"isValid(datum.{err[0]})")
            .mark_errorbar(color="#333333")
            .encode(
                y=alt.Y(f"{err[0]}:Q", title=y.to_dict().get("title")),
                y2=f"{err[1]}:Q",
                color=alt.value("#333333"),
            )
        )
    return alt.layer(*layers, data=data)


def agreement(summary: pd.DataFrame, backends: list[str]) -> dict[str, Any] | None:
    """Share of T=0 calls with identical tokens, per workload and backend (vs the reference)."""
    if "informative" in summary:
        summary = summary[summary["informative"].astype(bool)]  # flat logits: matches mean nothing
    if summary.empty:
        return None
    data = summary.assign(pair=summary["backend"] + " vs " + summary["reference"])
    chart = (
        alt.Chart(data)
        .mark_bar()
        .encode(
            y=alt.Y("workload:N", title=None, sort=list(dict.fromkeys(data["workload"]))),
            yOffset=alt.YOffset("backend:N", sort=backends),
            x=alt.X(
                "share:Q",
                title="identical token ids at T=0",
                scale=alt.Scale(domain=[0, 1]),
                axis=alt.Axis(format="%"),
            ),
            color=backend_color(backends, data),
            tooltip=[
                "pair",
                "workload",
                "identical",
                "cases",
                alt.Tooltip("median_divergence:Q", title="median first divergence"),
            ],
        )
        .properties(width=WIDTH + 120, height=alt.Step(14))
    )
    return to_spec(chart)


STAGE_COLORS = [
    "#9c755f",
    "#bab0ac",
    "#b07aa1",
    "#edc948",
    "#4e79a7",
    "#f28e2b",
    "#59a14f",
    "#76b7b2",
    "#444444",
]


def anatomy(stages: pd.DataFrame, order: list[str], backends: list[str]) -> dict[str, Any] | None:
    """One call taken apart: a stacked bar per backend (rows ``backend``, ``stage``, ``ms``), the stages in
    ``order`` (the last, "unaccounted", in dark grey); a stage not measured has no row, so draws nothing."""
    if stages.empty:
        return None
    data = stages.assign(position=[order.index(s) for s in stages["stage"]])
    chart = (
        alt.Chart(inline_data(data))
        .mark_bar()
        .encode(
            y=alt.Y("backend:N", title=None, sort=[b for b in backends if b in set(data["backend"])]),
            x=alt.X("sum(ms):Q", title="ms, stage by stage (stacked)"),
            color=alt.Color(
                "stage:N",
                title="stage",
                scale=alt.Scale(domain=order, range=STAGE_COLORS[: len(order)]),
            ),
            order=alt.Order("position:Q"),
            tooltip=["backend:N", "stage:N", alt.Tooltip("ms:Q", format=".3f"), "clock:N"],
        )
        .properties(width=WIDTH + 200, height=alt.Step(22))
    )
    return to_spec(chart)
