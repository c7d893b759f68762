"""The ``json`` kind's charts, as Vega-Lite specs (built on :mod:`reports.charts`' shared pieces)."""

from __future__ import annotations

from typing import Any

import altair as alt
import pandas as pd

from llm_call_anatomy.reports import charts


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
    if charts.single(data["temperature"]):
        chart = charts.bar_chart(
            data,
            "mode",
            y,
            alt.Color("mode:N", title="mode", sort=modes, legend=None),
            tooltip,
            sort=modes,
            title=f"mode, at temperature {temps[0]:g}",
        )
        return charts.to_spec(chart.properties(width=charts.WIDTH, height=charts.HEIGHT).facet(column=facet))
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
        .properties(width=charts.WIDTH, height=charts.HEIGHT)
    )
    return charts.to_spec(chart.facet(column=facet))
