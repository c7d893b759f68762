"""The ``sweep`` kind's charts, as Vega-Lite specs (built on :mod:`reports.charts`' shared pieces)."""

from __future__ import annotations

from typing import Any

import altair as alt
import pandas as pd

from llm_call_anatomy.reports import charts
from llm_call_anatomy.reports.roofline import Roof


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
    if charts.single(data["N"]):
        color = alt.Color("series:N", title=None, scale=charts.colors(backends, series), legend=None)
        chart = charts.bar_chart(
            data,
            "series",
            alt.Y("ms:Q", title=title),
            color,
            ["series", "N", alt.Tooltip("ms:Q", format=".3g")],
            err=("q1", "q3"),
            sort=series,
            title=f"N={data['N'].iloc[0]:g} prompt tokens",
        )
        return charts.to_spec(
            chart.properties(width=charts.WIDTH + 90, height=charts.HEIGHT + 30, title=title)
        )
    y = alt.Y("ms:Q", scale=alt.Scale(type="log"), title=f"{title} (log)")
    base = alt.Chart(data).encode(
        x=alt.X("N:Q", scale=alt.Scale(type="log", base=2), title="prompt tokens N (log)"),
        color=alt.Color(
            "series:N",
            title=None,
            scale=charts.colors(backends, list(dict.fromkeys(data["series"]))),
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
    return charts.to_spec(
        alt.layer(line, bars).properties(width=charts.WIDTH + 90, height=charts.HEIGHT + 30, title=title)
    )


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
    if charts.single(data["N"]):
        color = alt.Color("backend:N", title=None, scale=charts.colors(backends, near), legend=None)
        chart = charts.bar_chart(
            data,
            "backend",
            alt.Y("x:Q", title="× floor"),
            color,
            ["backend", "N", alt.Tooltip("x:Q", format=".3f")],
            err=("x1", "x3"),
            sort=near,
            title=f"N={data['N'].iloc[0]:g} prompt tokens",
        )
        return charts.to_spec(
            chart.properties(width=charts.WIDTH + 90, height=charts.HEIGHT + 30, title=title)
        )
    base = alt.Chart(data).encode(
        x=alt.X("N:Q", scale=alt.Scale(type="log", base=2), title="prompt tokens N (log)"),
        color=alt.Color(
            "backend:N", title=None, scale=charts.colors(backends, near), legend=alt.Legend(orient="bottom")
        ),
    )
    line = base.mark_line(point=True).encode(
        y=alt.Y("x:Q", scale=alt.Scale(zero=False), title="× floor"),
        tooltip=["backend", "N", alt.Tooltip("x:Q", format=".3f")],
    )
    bars = base.mark_errorbar().encode(y=alt.Y("x1:Q", title="× floor"), y2="x3:Q")
    return charts.to_spec(
        alt.layer(line, bars).properties(width=charts.WIDTH + 90, height=charts.HEIGHT + 30, title=title)
    )
