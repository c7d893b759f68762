"""The load kind's report half (many users at once): its analysis and the :class:`ReportKind` the registry
finds here (``reports.kinds``).

The figures come from ``levels`` (every level, first wave included), ``capacity`` (steady states,
capacity per target, energy and cost), ``caching`` (what prefix caching buys), ``targets`` (the SLO
targets the runs wrote, the goodput pair), ``replicas`` (tp against dp) and ``inproc_server`` (an engine
in process beside its server, where their capacities disagree); the page is the capacity half
(``capacity_blocks``, ``capacity_tables``, ``capacity_cells``, ``capacity_chart``, ``capacity_summary``)
followed by the every-request half: charts (``charts``), tables and blocks (``tables``, ``server_figures``,
``replicas_tables``, ``mix_groups``), caveats (``caveats``), summary rows and gate figures (``summary``).
A deployment's questions (issue 40): which targets judge the columns and the run between a wide bracket's
ends (``retarget``), GPUs for U users who think (``sizing``), what a GPU-hour buys (``cost``), on the page,
in the exports and in the terminal (``sizing_tables``).
``load_table`` prints the levels as a Markdown table for a README. All of them are in this folder.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from llm_call_anatomy.reports.analysis.caveats import over_http
from llm_call_anatomy.reports.kinds import ReportKind
from llm_call_anatomy.workloads.load.report import (
    capacity,
    capacity_summary,
    cost,
    inproc_server,
    replicas,
    retarget,
    sizing,
)
from llm_call_anatomy.workloads.load.report import capacity_blocks as cv
from llm_call_anatomy.workloads.load.report import levels as mu
from llm_call_anatomy.workloads.load.report import replicas_tables as replicas_view
from llm_call_anatomy.workloads.load.report import sizing_tables as answers
from llm_call_anatomy.workloads.load.report import targets as slo_targets
from llm_call_anatomy.workloads.load.report.caching import caching_caveats, caching_ratios, caching_settings
from llm_call_anatomy.workloads.load.report.caveats import caveats
from llm_call_anatomy.workloads.load.report.charts import CHARTS
from llm_call_anatomy.workloads.load.report.sizing_tables import capacity_frame
from llm_call_anatomy.workloads.load.report.summary import figures, jobs
from llm_call_anatomy.workloads.load.report.tables import blocks
from llm_call_anatomy.workloads.load.report.targets import slo_of


def skipped_backends(records: pd.DataFrame, workload: str) -> dict[str, str]:
    """Backend column -> why it skipped ``workload`` (its skip record's reason: not installed, no GPU...)."""
    if "skipped" not in records:
        return {}
    skips = records[(records["workload"] == workload) & records["skipped"].notna()]
    return {str(r["backend"]): str(r["skipped"]) for r in skips.to_dict("records")}


def _analyse(rows: pd.DataFrame, ctx, name: str) -> dict[str, Any]:
    report_pair = ctx.slo or retarget.goodput_pair(ctx.targets)  # the report's --slo, where given
    given, slo_source = slo_of(ctx.ds, report_pair)
    slo = given or mu.DEFAULT_SLO
    envs = ctx.ds.envs
    runs = {b: ctx.ds.sources.get(b, ("", b))[0] for b in ctx.ds.backends}
    goodput_of = retarget.goodput_by_column(envs, runs, report_pair)  # each run against its own (issue 40)
    levels = mu.per_level(rows, slo, goodput_of)
    # each column against its own run's targets (#44 item 6), or every column against the report's --slo
    by_column, targets_source = retarget.column_targets(envs, runs, ctx.targets)
    price = ctx.gpu_hour_usd or capacity.price_of(envs)
    cap = capacity.analyse(
        rows,
        mu.level_facts(rows),
        by_column,
        price,
        ctx.ds.planned_levels(),  # a level the run never reached reads as not run, never as met
        skipped_backends(ctx.ds.records, name),  # a backend skipped whole reads as skipped, never as not run
    )
    cap["targets_source"] = targets_source
    cap["capacity"] = with_between(cap["capacity"], cap["targets_of"], envs, runs, ctx.ds.sources)
    labels = list(dict.fromkeys(levels["backend"]))
    # the prefix cache as each column's engine said it ran, else as asked where its backend applies it
    cache_settings = caching_settings(ctx.ds, labels)
    caching = {b: c.on for b, c in cache_settings.items()}
    names = {b: ctx.ds.sources.get(b, ("", b))[1] for b in labels}
    cap["caching"] = caching_ratios(cap["steady"], cap["capacity"], caching, names)
    # the runs' own targets, where they judge the columns (the report's --slo replaces them all)
    own = [slo_targets.read(envs).note, *merged_targets_notes(ctx.ds, capacity.targets_by_column)]
    notes = [] if ctx.targets else own
    cap["targets_note"] = "; ".join(n for n in notes if n) or None  # a run whose targets are not used, named
    cap["target_runs"] = runs  # column -> the run whose targets it was judged against
    cap["caching_of"] = caching  # column -> prefix caching on (True), off (False), not said (None)
    cap["caching_settings"] = cache_settings  # column -> asked and effective (caching.caching_caveats)
    # the groups of backends that ran the same requests: one that ran other requests (the HF mix's sessions)
    # gets summary rows and chart panels of its own
    cap["mix_classes"] = capacity.mix_classes(cap["steady"])
    # what one capacity is a capacity of: the machine where the runs say they ran on a CPU, else a GPU
    devices = {str(e.get("device") or "") for e in envs.values()} - {""}
    cap["unit"] = "machine" if devices and not any(d.startswith("cuda") for d in devices) else "GPU"
    cap["via"] = {
        b: "HTTP" if over_http(ctx.ds.env_of(b).get("engine") or {}) else "in process" for b in labels
    }
    # an engine in process beside its own server: where their capacities disagree, each side's TTFT split
    engines = {b: replicas.engine_of(ctx.ds.env_of(b).get("engine") or {}, b) for b in labels}
    cap["inproc_server"] = inproc_server.notes(cap, rows, engines)

    pools = {b: sizing.kv_pool(ctx.ds.start_envs(b)) for b in labels}
    sized = sizing.size(ctx.size, cap, pools, envs, runs, ctx.ds.sources) if ctx.size else None
    return {
        "levels": levels,
        "peaks": mu.peaks(levels),
        "slo": slo,
        "goodput_of": goodput_of,  # column -> the per-request pair its goodput counts against
        "cap": cap,
        "replicas": replicas.configurations(
            rows, levels, ctx.ds
        ),  # tp vs dp (issue 25): empty unless a dp > 1 ran
        "slo_source": slo_source or f"default: {mu.SLO_SOURCE}",
        # the page's tables, by the page's names, for the exports (issue 40)
        "capacity": capacity_frame(cap),
        "cost": cost.cost_table(cap["capacity"], cap["steady"], price),
        "sizing": sized,
        "size_ask": ctx.size,
    }


def with_between(caps: pd.DataFrame, targets_of: dict, envs: dict, runs: dict, sources: dict) -> pd.DataFrame:
    """Each capacity row with ``between``: the level between its bracket's ends and the command that measures
    it, where the ends are farther apart than the search's ratio (``retarget.between``); None elsewhere."""
    if caps.empty:
        return caps
    out = []
    for r in caps.to_dict("records"):
        target = next((t for t in targets_of.get(r["backend"], ()) if t.name == r["target"]), None)
        env = envs.get(runs.get(r["backend"], ""), {})
        name = sources.get(r["backend"], ("", r["backend"]))[1]
        out.append({**r, "between": retarget.between(r, env, name, target) if target else None})
    return pd.DataFrame(out)


def merged_targets_notes(ds, by_column) -> list[str]:
    """A column that merges runs (``--merge-starts``) whose targets differ: judged against its first run's
    only, said in one line each."""
    out = []
    for label, members in ds.members.items():
        runs = list(dict.fromkeys(run_id for run_id, _ in members))
        own = by_column(ds.envs, {run_id: run_id for run_id in runs})
        if len(set(own.values())) > 1:
            out.append(
                f"{label} merges runs with other targets ({', '.join(runs)}): its capacity is judged against "
                f"run {runs[0]}'s"
            )
    return out


KIND = ReportKind(
    "load",
    _analyse,
    blocks=lambda s, slots, report: (
        cv.blocks(s.data, s.backends, slots) + answers.blocks(s.data) + blocks(s, slots)
    ),
    charts=CHARTS,
    caveats=lambda s, report: (
        caveats(s, report)
        + cv.caveats(s.data, s.name)
        + caching_caveats(s.data["cap"].get("caching_settings") or {})
        + replicas_view.caveats(s)
    ),
    jobs=lambda s, rows, report: answers.jobs(s.data) + capacity_summary.jobs(s.data) + jobs(s, report),
    sees_failures=True,
    figures=figures,
    agreement=False,
    steady_state=True,
    printed=answers.printed,
)
