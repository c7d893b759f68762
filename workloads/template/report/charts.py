"""The ``template`` kind's charts, as Vega-Lite specs (built on :mod:`reports.charts`' shared pieces)."""

from __future__ import annotations

from typing import Any

import altair as alt
import pandas as pd

from llm_call_anatomy.reports import charts


def attention(shares: pd.DataFrame, backends: list[str]) -> dict[str, Any] | None:
    """Per layer: share of the last position's attention that lands on special tokens."""
    if shares.empty:
        return None
    y = alt.Y("share:Q", title="attention on special tokens", axis=alt.Axis(format="%"))
    color = charts.backend_color(backends, shares)
    tooltip = ["backend", "layer", alt.Tooltip("share:Q", format=".1%")]
    if charts.single(shares["layer"]):
        return charts.to_spec(
            charts.bar_chart(
                shares, "backend", y, color.legend(None), tooltip, title=f"layer {shares['layer'].iloc[0]}"
            ).properties(width=charts.WIDTH + 90, height=charts.HEIGHT)
        )
    chart = (
        alt.Chart(shares)
        .mark_line(point=True)
        .encode(x=alt.X("layer:O", title="layer"), y=y, color=color, tooltip=tooltip)
    )
    return charts.to_spec(chart.properties(width=charts.WIDTH + 90, height=charts.HEIGHT))
