"""The Load section's capacity chart: tok/s a user against tok/s of the GPU, with the targets drawn.

The Pareto curve of serving many users: a line per backend through its closed-loop steady-state
levels (``workloads.load.report.capacity``), each target's per-user speed as a dashed rule, one panel per
workload variant. Registered as the Load kind's ``users`` chart (``views.many_users_charts``).
"""

from __future__ import annotations

from typing import Any

import altair as alt
import pandas as pd

from llm_call_anatomy.reports.charts import WIDTH, backend_color, levels_and_rules, to_spec
from llm_call_anatomy.workloads.load.report.mix_groups import variants


def users_chart(
    steady: pd.DataFrame, targets, backends: list[str], classes: dict | None = None
) -> dict[str, Any] | None:
    """Per-user tok/s against per-GPU tok/s (the Pareto curve): a line per backend, a point per closed-loop
    level, each target's per-user speed (1000 ÷ its TPOT limit) drawn as a dashed rule; a group of backends
    that ran other requests (``classes``, ``capacity.mix_classes``) in a panel of its own."""
    d = steady[steady["loop"] == "closed"].dropna(subset=["output_tps", "per_user_tps"]).copy()
    if d.empty:
        return None
    d["variant"] = variants(d, classes)
    rules = [
        {"variant": v, "per_user_tps": 1000 / lim.ms, "target": f"{t.name}: ≥ {1000 / lim.ms:g} tok/s a user"}
        for v in dict.fromkeys(d["variant"])
        for t in targets
        for lim in t.limits
        if lim.metric == "tpot"
    ]
    cols = ["backend", "variant", "case", "concurrency", "output_tps", "per_user_tps"]
    base = levels_and_rules(d[cols], rules, "per_user_tps")
    points = (
        base.transform_filter(alt.datum.layer == "level")
        .mark_line(point=True)
        .encode(
            x=alt.X("output_tps:Q", title="output tok/s of the GPU"),
            y=alt.Y("per_user_tps:Q", title="tok/s a user"),
            order="concurrency:Q",
            color=backend_color(backends, d),
            tooltip=[
                "backend:N",
                "variant:N",
                "case:N",
                alt.Tooltip("output_tps:Q", format=".4g"),
                alt.Tooltip("per_user_tps:Q", format=".3g"),
            ],
        )
    )
    lines = (
        base.transform_filter(alt.datum.layer == "target")
        .mark_rule(strokeDash=[4, 3], color="#888")
        .encode(y="per_user_tps:Q", tooltip=["target:N"])
    )
    return to_spec(
        alt.layer(points, lines)
        .properties(width=WIDTH, height=170)
        .facet(column=alt.Column("variant:N", title=None, sort=list(dict.fromkeys(d["variant"]))))
    )
