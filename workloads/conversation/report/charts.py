"""The ``conversation`` kind's charts, as Vega-Lite specs (built on :mod:`reports.charts`' shared pieces)."""

from __future__ import annotations

from typing import Any

import altair as alt
import pandas as pd

from llm_call_anatomy.reports import charts


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
    if charts.single(data["turn"]):
        chart = charts.bar_chart(
            data,
            "mode",
            alt.Y("ttft_med:Q", title="TTFT (ms, median)"),
            color,
            tooltip,
            err=("ttft_q1", "ttft_q3"),
            sort=["full", "cached"],
            title=f"turn {data['turn'].iloc[0]}",
        )
        return charts.to_spec(
            chart.properties(width=charts.WIDTH // 2, height=charts.HEIGHT).facet(column=facet)
        )
    base = alt.Chart(data).encode(x=alt.X("turn:O", title="turn"), color=color)
    line = base.mark_line(point=True).encode(
        y=alt.Y("ttft_med:Q", title="TTFT (ms, median)"), tooltip=tooltip
    )
    err = base.mark_errorbar().encode(y=alt.Y("ttft_q1:Q", title="TTFT (ms, median)"), y2="ttft_q3:Q")
    return charts.to_spec(
        alt.layer(line, err, data=data)
        .properties(width=charts.WIDTH, height=charts.HEIGHT)
        .facet(column=facet)
    )
