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

from reports.analysis.sweep import Roof

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


def _colors(backends: list[str], present: list[str]) -> alt.Scale:
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
        "backend:N", title=None, scale=_colors(backends, list(dict.fromkeys(data["backend"]))), **options
    )


def _spec(chart: alt.TopLevelMixin) -> dict[str, Any]:
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


def conversation_ttft(turns: pd.DataFrame) -> dict[str, Any] | None:
    """TTFT per turn, cached vs full, one panel per backend (median, IQR as error bars)."""
    if turns.empty:
        return None
    data = turns[
        ["backend", "mode", "turn", "ttft_med", "ttft_q1", "ttft_q3", "ttft_n", "prompt_tokens"]
    ].dropna(subset=["ttft_med"])
    color = alt.Color(
        "mode:N", title="mode", scale=alt.Scale(domain=["full", "cached"], range=["#e15759", "#4e79a7"])
    )
    tooltip = ["backend", "mode", "turn", "prompt_tokens", alt.Tooltip("ttft_med:Q", format=".1f"), "ttft_n"]
    facet = alt.Column("backend:N", title=None, sort=list(dict.fromkeys(data["backend"])))
    if single(data["turn"]):
        chart = bar_chart(
            data,
            "mode",
            alt.Y("ttft_med:Q", title="TTFT (ms, median)"),
            color,
            tooltip,
            err=("ttft_q1", "ttft_q3"),
            sort=["full", "cached"],
            title=f"turn {data['turn'].iloc[0]}",
        )
        return _spec(chart.properties(width=WIDTH // 2, height=HEIGHT).facet(column=facet))
    base = alt.Chart(data).encode(x=alt.X("turn:O", title="turn"), color=color)
    line = base.mark_line(point=True).encode(
        y=alt.Y("ttft_med:Q", title="TTFT (ms, median)"), tooltip=tooltip
    )
    err = base.mark_errorbar().encode(y=alt.Y("ttft_q1:Q", title="TTFT (ms, median)"), y2="ttft_q3:Q")
    return _spec(alt.layer(line, err, data=data).properties(width=WIDTH, height=HEIGHT).facet(column=facet))


def floor_labels(roof: Roof) -> dict[str, str]:
    """Legend entries of a roofline's floors: one per bandwidth
    (datasheet, measured copy) and the compute floor."""
    peak = roof.peak
    out = {
        "compute": f"compute floor: {peak.label} {peak.tflops:,.0f} TFLOP/s ({peak.source})",  # type: ignore[union-attr]
        "datasheet": f"decode floor: {peak.label} {peak.bandwidth_gbps:,.0f} GB/s ({peak.source})",
    }  # type: ignore[union-attr]
    if roof.copy_gbps:
        out["copy"] = f"decode floor: measured copy {roof.copy_gbps:,.0f} GB/s"
    return out


def _sweep_long(lengths: pd.DataFrame, roofs: dict[str, Roof], phase: str) -> pd.DataFrame:
    rows = []
    for r in lengths.to_dict("records"):
        med, q1, q3 = r[f"{phase}_med"], r[f"{phase}_q1"], r[f"{phase}_q3"]
        if med is not None and med == med:
            rows.append(
                {"series": r["backend"], "kind": "measured", "N": r["N"], "ms": med, "q1": q1, "q3": q3}
            )
    floors: dict[str, dict[int, float]] = {}
    for backend, roof in roofs.items():
        if not roof.ok or backend not in set(lengths["backend"]):
            continue
        labels = floor_labels(roof)
        for n in sorted(set(lengths[lengths["backend"] == backend]["N"])):
            if phase == "prefill":
                floors.setdefault(labels["compute"], {})[n] = roof.prefill_floor_ms(n)  # type: ignore[assignment]
                continue
            floors.setdefault(labels["datasheet"], {})[n] = roof.decode_floor_ms(n)  # type: ignore[assignment]
            if "copy" in labels:
                floors.setdefault(labels["copy"], {})[n] = roof.decode_floor_ms(n, measured=True)  # type: ignore[assignment]
    for label, points in floors.items():
        rows += [
            {"series": label, "kind": "roofline", "N": n, "ms": ms, "q1": None, "q3": None}
            for n, ms in points.items()
        ]
    return pd.DataFrame(rows)


def sweep_phase(
    lengths: pd.DataFrame, roofs: dict[str, Roof], phase: str, backends: list[str]
) -> dict[str, Any] | None:
    """Prefill ms (or decode ms/token) vs N on log axes, each floor dashed with its own legend entry."""
    if lengths.empty:
        return None
    data = _sweep_long(lengths, roofs, phase)
    if data.empty:
        return None
    title = "prefill (ms, median)" if phase == "prefill" else "decode (ms/token, median)"
    series = list(dict.fromkeys(data["series"]))
    if single(data["N"]):
        color = alt.Color("series:N", title=None, scale=_colors(backends, series), legend=None)
        chart = bar_chart(
            data,
            "series",
            alt.Y("ms:Q", title=title),
            color,
            ["series", "N", alt.Tooltip("ms:Q", format=".3g")],
            err=("q1", "q3"),
            sort=series,
            title=f"N={data['N'].iloc[0]:g} prompt tokens",
        )
        return _spec(chart.properties(width=WIDTH + 90, height=HEIGHT + 30, title=title))
    y = alt.Y("ms:Q", scale=alt.Scale(type="log"), title=f"{title} (log)")
    base = alt.Chart(data).encode(
        x=alt.X("N:Q", scale=alt.Scale(type="log", base=2), title="prompt tokens N (log)"),
        color=alt.Color(
            "series:N",
            title=None,
            scale=_colors(backends, list(dict.fromkeys(data["series"]))),
            legend=alt.Legend(orient="bottom", columns=1, labelLimit=360),
        ),
    )
    enc: dict[str, Any] = {"y": y, "tooltip": ["series", "N", alt.Tooltip("ms:Q", format=".3g")]}
    if (data["kind"] == "roofline").any():
        enc["strokeDash"] = alt.StrokeDash(
            "kind:N", legend=None, scale=alt.Scale(domain=["measured", "roofline"], range=[[1, 0], [5, 4]])
        )
    line = base.mark_line(point=True).encode(**enc)
    bars = (
        base.transform_filter("isValid(datum.q1)")
        .mark_errorbar()
        .encode(y=alt.Y("q1:Q", title=f"{title} (log)"), y2="q3:Q")
    )
    return _spec(alt.layer(line, bars).properties(width=WIDTH + 90, height=HEIGHT + 30, title=title))


def decode_vs_floor(
    lengths: pd.DataFrame, vs_roof: pd.DataFrame, backends: list[str], limit: float = 3.0
) -> dict[str, Any] | None:
    """Decode as a multiple of its floor on a linear axis, for the
    backends within ``limit``× of it: close lines stay apart."""
    if vs_roof.empty:
        return None
    measured = vs_roof["copy_floor_ms"].notna().all()
    floor_col, which = (
        ("copy_floor_ms", "the measured-copy floor")
        if measured
        else ("decode_floor_ms", "the datasheet floor")
    )
    data = vs_roof[["backend", "N", floor_col]].merge(
        lengths[["backend", "N", "decode_med", "decode_q1", "decode_q3"]], on=["backend", "N"]
    )
    data = data.assign(
        x=data["decode_med"] / data[floor_col],
        x1=data["decode_q1"] / data[floor_col],
        x3=data["decode_q3"] / data[floor_col],
    )
    near = [b for b, g in data.groupby("backend", sort=False) if g["x"].max() <= limit]
    data = data[data["backend"].isin(near)]
    if data.empty:
        return None
    title = f"decode ÷ {which}, backends within {limit:g}× (linear)"
    if single(data["N"]):
        color = alt.Color("backend:N", title=None, scale=_colors(backends, near), legend=None)
        chart = bar_chart(
            data,
            "backend",
            alt.Y("x:Q", title="× floor"),
            color,
            ["backend", "N", alt.Tooltip("x:Q", format=".3f")],
            err=("x1", "x3"),
            sort=near,
            title=f"N={data['N'].iloc[0]:g} prompt tokens",
        )
        return _spec(chart.properties(width=WIDTH + 90, height=HEIGHT + 30, title=title))
    base = alt.Chart(data).encode(
        x=alt.X("N:Q", scale=alt.Scale(type="log", base=2), title="prompt tokens N (log)"),
        color=alt.Color(
            "backend:N", title=None, scale=_colors(backends, near), legend=alt.Legend(orient="bottom")
        ),
    )
    line = base.mark_line(point=True).encode(
        y=alt.Y("x:Q", scale=alt.Scale(zero=False), title="× floor"),
        tooltip=["backend", "N", alt.Tooltip("x:Q", format=".3f")],
    )
    bars = base.mark_errorbar().encode(y=alt.Y("x1:Q", title="× floor"), y2="x3:Q")
    return _spec(alt.layer(line, bars).properties(width=WIDTH + 90, height=HEIGHT + 30, title=title))


def json_pass(rates: pd.DataFrame) -> dict[str, Any] | None:
    """JSON pass rate vs temperature per mode, one panel per
    backend (modes nudged apart so equal rates stay visible)."""
    if rates.empty:
        return None
    data = rates[["backend", "mode", "temperature", "pass_rate", "n", "valid"]].dropna(subset=["pass_rate"])
    modes = list(dict.fromkeys(data["mode"]))
    temps = sorted(set(data["temperature"]))
    y = alt.Y("pass_rate:Q", title="valid JSON", scale=alt.Scale(domain=[0, 1]), axis=alt.Axis(format="%"))
    tooltip = ["backend", "mode", "temperature", "valid", "n", alt.Tooltip("pass_rate:Q", format=".0%")]
    facet = alt.Column("backend:N", title=None, sort=list(dict.fromkeys(data["backend"])))
    if single(data["temperature"]):
        chart = bar_chart(
            data,
            "mode",
            y,
            alt.Color("mode:N", title="mode", sort=modes, legend=None),
            tooltip,
            sort=modes,
            title=f"mode, at temperature {temps[0]:g}",
        )
        return _spec(chart.properties(width=WIDTH, height=HEIGHT).facet(column=facet))
    step = (min(b - a for a, b in zip(temps, temps[1:], strict=False)) if len(temps) > 1 else 1.0) * 0.12
    data = data.assign(
        x=[
            t + (modes.index(m) - (len(modes) - 1) / 2) * step / max(1, len(modes) - 1)
            for t, m in zip(data["temperature"], data["mode"], strict=True)
        ]
    )
    chart = (
        alt.Chart(data)
        .mark_line(point=True)
        .encode(
            x=alt.X("x:Q", title="temperature"),
            y=y,
            color=alt.Color("mode:N", title="mode", sort=modes),
            strokeDash=alt.StrokeDash("mode:N", sort=modes, legend=None),
            tooltip=tooltip,
        )
        .properties(width=WIDTH, height=HEIGHT)
    )
    return _spec(chart.facet(column=facet))


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
    return _spec(chart)


def attention(shares: pd.DataFrame, backends: list[str]) -> dict[str, Any] | None:
    """Per layer: share of the last position's attention that lands on special tokens."""
    if shares.empty:
        return None
    y = alt.Y("share:Q", title="attention on special tokens", axis=alt.Axis(format="%"))
    color = backend_color(backends, shares)
    tooltip = ["backend", "layer", alt.Tooltip("share:Q", format=".1%")]
    if single(shares["layer"]):
        return _spec(
            bar_chart(
                shares, "backend", y, color.legend(None), tooltip, title=f"layer {shares['layer'].iloc[0]}"
            ).properties(width=WIDTH + 90, height=HEIGHT)
        )
    chart = (
        alt.Chart(shares)
        .mark_line(point=True)
        .encode(x=alt.X("layer:O", title="layer"), y=y, color=color, tooltip=tooltip)
    )
    return _spec(chart.properties(width=WIDTH + 90, height=HEIGHT))
