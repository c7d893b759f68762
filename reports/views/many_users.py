"""The Load kind's report half (many users at once): its analysis and the :class:`ReportKind` the registry
names (``reports.kinds``).

The figures come from ``reports.analysis.many_users`` (every level, first wave included) and
``reports.analysis.capacity`` (steady states, capacity per target, caching, energy and cost); the
page is the capacity half (``views.capacity``) followed by the every-request half, whose pieces live
apart: charts (``views.many_users_charts``), tables and blocks (``views.many_users_tables``),
caveats (``views.many_users_caveats``), summary rows and gate figures (``views.many_users_summary``).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from reports.analysis import many_users as mu
from reports.kinds import ReportKind
from reports.views import capacity as cv
from reports.views import capacity_summary
from reports.views import replicas as replicas_view
from reports.views.many_users_caveats import caveats
from reports.views.many_users_charts import CHARTS
from reports.views.many_users_summary import figures, jobs
from reports.views.many_users_tables import blocks


def _analyse(rows: pd.DataFrame, ctx, name: str) -> dict[str, Any]:  # noqa: ARG001
    from reports.analysis import capacity, slo_targets
    from reports.analysis.caching import caching_ratios
    from reports.analysis.caveats import over_http

    slo = ctx.slo or mu.DEFAULT_SLO
    levels = mu.per_level(rows, slo)
    envs = ctx.ds.envs
    cap = capacity.analyse(
        rows,
        mu.level_facts(rows),
        capacity.targets_of(envs),
        ctx.gpu_hour_usd or capacity.price_of(envs),
        ctx.ds.planned_levels(),  # a level the run never reached reads as not run, never as met
    )
    labels = list(dict.fromkeys(levels["backend"]))
    caching = {b: ctx.ds.run_env_of(b).get("prefix_caching", True) for b in labels}  # older runs: on
    names = {b: ctx.ds.sources.get(b, ("", b))[1] for b in labels}
    cap["caching"] = caching_ratios(cap["steady"], cap["capacity"], caching, names)
    cap["targets_note"] = slo_targets.read(envs).note  # a run whose slo_targets do not parse, named
    cap["caching_of"] = caching  # column -> prefix caching on (True), off (False), not said (None)
    # the groups of backends that ran the same requests: one that ran other requests (the HF mix's sessions)
    # gets summary rows and chart panels of its own
    cap["mix_classes"] = capacity.mix_classes(cap["steady"])
    cap["via"] = {
        b: "HTTP" if over_http(ctx.ds.env_of(b).get("engine") or {}) else "in process" for b in labels
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
        "slo_source": ctx.slo_source or f"default: {mu.SLO_SOURCE}",
    }


KIND = ReportKind(
    "load",
    _analyse,
    blocks=lambda s, slots, report: cv.blocks(s.data, s.backends, slots) + blocks(s, slots),
    charts=CHARTS,
    caveats=lambda s, report: caveats(s, report) + cv.caveats(s.data, s.name) + replicas_view.caveats(s),
    jobs=lambda s, rows, report: capacity_summary.jobs(s.data) + jobs(s, report),
    sees_failures=True,
    figures=figures,
    agreement=False,
    steady_state=True,
)
