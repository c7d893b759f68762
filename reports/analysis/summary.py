"""The summary: which stack for which job, read off the figures, and the facts a deployment needs.

A latency job compares each backend's figure over engine starts (:func:`reports.stats.over_starts`:
the median of per-start medians, with the spread within a start and across starts); it names
a winner only where the gap to the next backend exceeds both spreads, else "within noise (±x %)".
TTFT-based jobs rank only backends whose TTFT has the same definition (the caller's); old runs
whose ``ttft_ms`` is the engine's internal figure are shown but not ranked against it. Derived
figures (a reply's time from TTFT and the decode step) are shown, not ranked. Every latency job
says what the ranking rests on where it matters (:mod:`reports.analysis.run_context`): a column
from another run (day, machine or commit), runs that shared a GPU host with another engine, a
launch-bound model (what is compared is each stack's per-step overhead); every job that compares
columns names, before its ranking, the settings that differ between them (dtype, endpoint, KV pool,
prefix caching, max model len: :mod:`reports.analysis.settings_differ`). Quality
jobs are flagged when the weights are random. Deployment facts (start-up, KV-cache capacity,
peak GPU memory, grammar cost) are listed, not ranked.
"""

from __future__ import annotations

from dataclasses import replace

import pandas as pd

from llm_call_anatomy.reports import fmt
from llm_call_anatomy.reports.analysis.run_context import annotate
from llm_call_anatomy.reports.analysis.settings_differ import note
from llm_call_anatomy.reports.kinds import report_kind
from llm_call_anatomy.reports.kvcache import kv_tokens
from llm_call_anatomy.reports.model import Job, Report
from llm_call_anatomy.reports.stats import StartStat, num, over_starts, rank, spread, verdict


def stat_text(s: StartStat, unit: str, digits: int | None = None) -> str:
    """``14.0 ms ±9 % (2 starts ±3 %, n=10)``: the within-start spread first, then across starts."""
    within = f" ±{fmt.rel(s.within)}" if s.within is not None else ""
    starts = f"{s.starts} starts ±{fmt.rel(s.across)}" if s.across is not None else "1 start"
    return f"{fmt.n(s.median, digits)} {unit}{within} ({starts}, n={s.n})".replace("  ", " ")


def latency_job(
    job: str,
    figure: str,
    stats: dict[str, StartStat],
    unit: str,
    ttft: dict[str, bool] | None = None,
    caution: str | None = None,
) -> Job | None:
    stats = {b: s for b, s in stats.items() if s.median is not None}
    if not stats:
        return None
    ranked = ranked_job(job, figure, stats, unit, ttft, caution)
    return replace(ranked, stats={b: stats[b] for b, _ in ranked.values}, unit=unit)


def ranked_job(
    job: str,
    figure: str,
    stats: dict[str, StartStat],
    unit: str,
    ttft: dict[str, bool] | None,
    caution: str | None,
) -> Job:
    """A latency job's ranking by the summary's winner rule, or why it ranks none (one backend; TTFTs of two
    definitions: an old run's engine-internal TTFT beside the caller's)."""
    engine_internal = [b for b, common in (ttft or {}).items() if b in stats and not common]
    r = rank(stats)
    shown = [
        (b, stat_text(stats[b], unit) + (" (engine's own TTFT, old run)" if b in engine_internal else ""))
        for b in r.order
    ]
    if len(r.order) < 2:
        return Job(job, figure, shown, None, "one backend: nothing to choose", caution, latency=True)
    if engine_internal and len(engine_internal) < len(stats):
        why = (
            f"not ranked: {', '.join(engine_internal)} report the engine's internal TTFT (old runs, "
            "timing_source engine-metrics), the others the caller's"
        )
        return Job(job, figure, shown, None, why, caution, latency=True)
    winner, why = verdict(r, f"the noise within a start (±{fmt.rel(r.noise)})")
    return Job(job, figure, shown, winner, why, caution, latency=True)


def by_backend(rows: pd.DataFrame, value: pd.Series | str) -> dict[str, StartStat]:
    vals = rows[value] if isinstance(value, str) else value
    return {b: over_starts(vals[g.index], g["start"]) for b, g in rows.groupby("backend", sort=False)}


def ttft_common(rows: pd.DataFrame) -> dict[str, bool]:
    return {b: bool(g["ttft_common"].all()) for b, g in rows.groupby("backend", sort=False)}


def derived(job: Job | None) -> Job | None:
    """A figure computed from measured ones: shown, never ranked beside what was measured."""
    if job is None:
        return None
    return replace(
        job,
        best=None,
        verdict="derived from the measured TTFT and decode step, not a measured call: "
        "not ranked beside measured figures",
        latency=False,
    )


def rate_ranking(rates: dict[str, float]) -> tuple[list[str], str | None, str]:
    """A quality rate's ranking (valid JSON, clean answers: counts, not timings, so no spread to beat): the
    backends best first, the winner where it is strictly ahead of the next, and the verdict ("one backend",
    "a tie", or "" where there is a winner)."""
    order = sorted(rates, key=lambda b: -rates[b])
    tie = len(order) < 2 or rates[order[0]] == rates[order[1]]
    return order, None if tie else order[0], "one backend" if len(order) < 2 else ("a tie" if tie else "")


def deployment_jobs(report: Report) -> list[Job]:
    """Start-up seconds, KV-cache capacity and peak GPU
    memory per backend, over its engine starts (env.json)."""
    facts: dict[str, list[tuple[str, str]]] = {"startup": [], "kv": [], "mem": []}
    for b in report.ds.backends:
        starts = report.ds.start_envs(b)
        up = spread(s.get("startup_s") for s in starts)
        kv = spread(kv_tokens(s) for s in starts)
        mem = spread(
            num(s.get("peak_gpu_memory_bytes")) / 2**30 if num(s.get("peak_gpu_memory_bytes")) else None
            for s in starts
        )
        for key, st, unit in (("startup", up, "s"), ("kv", kv, "tokens"), ("mem", mem, "GiB")):
            if st.ok:
                rng = f" [{fmt.n(st.lo)}–{fmt.n(st.hi)}]" if st.n > 1 and st.lo != st.hi else ""
                facts[key].append(
                    (b, f"{fmt.n(st.median)} {unit}{rng} ({st.n} start{'s' if st.n > 1 else ''})")
                )
    labels = {
        "startup": (
            "Engine start-up",
            "seconds from constructing the backend to ready (load, compile, warm-up)",
        ),
        "kv": ("KV-cache capacity", "tokens the engine's KV pool holds (HF: no fixed pool)"),
        "mem": (
            "Peak GPU memory",
            "whole-GPU memory in use at its peak, less what was in use before the start",
        ),
    }
    return [Job(labels[k][0], labels[k][1], v, None, "a fact, not ranked") for k, v in facts.items() if v]


def jobs(report: Report) -> list[Job]:
    """The summary's jobs: each kind's (named before their ranking where the compared columns' settings
    differ), then the deployment facts; each annotated with what its ranking rests on (run context)."""
    out: list[Job | None] = []
    measured = report.ds.measured()
    for s in report.sections:
        kind = report_kind(s.kind) if s.kind else None
        if not s.data or kind is None:
            continue
        out += kind.jobs(s, measured[measured["workload"] == s.name], report)
    compared = [
        replace(j, differs=note(report, [b for b, _ in j.values])) for j in out if j is not None
    ]  # deployment facts are listed, not compared: no note
    return [annotate(report, j) for j in [*compared, *deployment_jobs(report)]]
