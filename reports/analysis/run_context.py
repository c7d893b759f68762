"""What a first-screen ranking rests on, beside the figures: notes a deciding reader needs.

For every latency job of the summary (:mod:`reports.analysis.summary`) this adds, where they
apply to the backends it ranks:

- **another run**: a column whose run differs from the others' in day, machine or commit
  (env.json ``started``, the backend's ``process`` gpu/platform and ``gpu_host.hostname``,
  ``git_commit``): its figures were not measured beside the others';
- **a shared GPU host**: a start that recorded another engine on the host (env.json
  ``gpu_host``: the sitting's ``LCA_GPU_HOST_SHARED`` declaration or NVML processes not its own),
  or, for runs older than that record, two runs on the same machine whose wall-clock spans overlap;
- **launch-bound**: a model whose decode step reads under 10 % of the bandwidth floor on every
  backend (the sweep's roofline): the comparison measures each stack's per-step overhead, not
  how it uses the GPU.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from dataclasses import replace

from llm_call_anatomy.reports import fmt
from llm_call_anatomy.reports.model import Job, Report
from llm_call_anatomy.reports.stats import num

LAUNCH_BOUND = 0.10  # decode reads less than this share of the bandwidth floor on every backend


def _identity(report: Report, backend: str) -> dict[str, str | None]:
    env = report.ds.run_env_of(backend)
    process = report.ds.env_of(backend).get("process") or {}
    hosts = {((s.get("gpu_host") or {}).get("hostname")) for s in report.ds.start_envs(backend)} - {None}
    machine = " / ".join(str(x) for x in (process.get("gpu"), process.get("platform"), *sorted(hosts)) if x)
    return {
        "day": (env.get("started") or "")[:10] or None,
        "machine": machine or None,
        "commit": env.get("git_commit"),
    }


def other_runs(report: Report, backends: list[str]) -> dict[str, str]:
    """Backends whose run differs from the most common one in day, machine or commit: what differs."""
    ids = {b: _identity(report, b) for b in backends}
    if len({report.ds.sources.get(b, (b, b))[0] for b in backends}) < 2:
        return {}
    out = {}
    for key in ("day", "machine", "commit"):
        common, _ = Counter(i[key] for i in ids.values()).most_common(1)[0]
        for b, i in ids.items():
            if i[key] != common:
                shown = (i[key] or "unknown")[:12] if key == "commit" else (i[key] or "unknown")
                out[b] = f"{out[b]}, " if b in out else ""
                out[b] += f"{key} {shown}"
    return out


def _span(report: Report, run_id: str) -> tuple[dt.datetime, dt.datetime] | None:
    env = report.ds.envs.get(run_id) or {}
    try:
        start = dt.datetime.fromisoformat(env.get("started") or "")
    except ValueError:
        return None
    wall = 0.0
    for block in (env.get("backends") or {}).values():
        starts = (
            [s for s in block.get("starts") or [] if isinstance(s, dict)] if isinstance(block, dict) else []
        )
        wall += sum(num(s.get("wall_s")) or 0.0 for s in starts) or (num(block.get("wall_s")) or 0.0)
    return (start, start + dt.timedelta(seconds=wall)) if wall else None


def shared_host(report: Report, backends: list[str]) -> dict[str, str]:
    """Backends whose starts ran beside another engine on the GPU host: how we know."""
    out: dict[str, str] = {}
    for b in backends:
        for s in report.ds.start_envs(b):
            host = s.get("gpu_host") or {}
            if host.get("declared"):
                out[b] = f"declared: {host['declared']}"
            elif num(host.get("other_processes")):
                out[b] = f"NVML saw {int(host['other_processes'])} other GPU process(es)"
    runs = {b: report.ds.sources.get(b, (None, b))[0] for b in backends}
    for b in backends:
        if b in out or not runs[b]:
            continue
        mine, me = _span(report, runs[b]), _identity(report, b)
        for run_id in report.ds.envs:
            if run_id == runs[b] or mine is None:
                continue
            theirs = _span(report, run_id)
            other = next((o for o, r in runs.items() if r == run_id), None)
            same_machine = other is None or _identity(report, other)["machine"] == me["machine"]
            if theirs and same_machine and mine[0] < theirs[1] and theirs[0] < mine[1]:
                out[b] = "runs overlapping in time on the same kind of machine"
                break
    return out


def launch_bound(report: Report) -> float | None:
    """The largest decode bandwidth share of any backend, where all are under :data:`LAUNCH_BOUND`."""
    s = next(
        (s for s in report.sections if s.data and "vs_roof" in s.data), None
    )  # the section with a roofline table
    vs = s.data.get("vs_roof") if s is not None else None
    if vs is None or vs.empty or "bandwidth_share" not in vs:
        return None
    top = vs.groupby("backend")["bandwidth_share"].median().max()
    return float(top) if num(top) is not None and top < LAUNCH_BOUND else None


def notes(report: Report, job: Job) -> list[str]:
    """What a summary row's reader should know about how its figures were taken: a backend from another run,
    engines that shared the GPU host, or a launch-bound decode (the row compares per-step overhead)."""
    names = [b for b, _ in job.values]
    out = []
    other = other_runs(report, names)
    if other:
        out.append("from another run than the rest: " + "; ".join(f"{b} ({why})" for b, why in other.items()))
    shared = shared_host(report, names)
    if shared:
        by_why: dict[str, list[str]] = {}
        for b, why in shared.items():
            by_why.setdefault(why, []).append(b)
        out.append(
            "shared the GPU host with another engine: "
            + "; ".join(f"{', '.join(bs)} ({why})" for why, bs in by_why.items())
        )
    share = launch_bound(report)
    if share is not None:
        out.append(
            f"launch-bound: decode reads at most {fmt.pct(share)} of the bandwidth floor on any backend, so "
            "this compares each stack's per-step overhead, not its use of the GPU"
        )
    return out


def missing_starts(report: Report, backends: list[str]) -> dict[str, tuple[int, int]]:
    """Backends with fewer engine starts recorded than their
    run planned (env.json ``starts``): (had, planned)."""
    out = {}
    for b in backends:
        planned = int(num(report.ds.run_env_of(b).get("starts")) or 1)
        had = len(report.ds.start_envs(b))
        if had and had < planned:
            out[b] = (had, planned)
    return out


def annotate(report: Report, job: Job) -> Job:
    """The job with its run-context notes added to its caution (latency jobs only); a winner whose
    run lost an engine start it planned (a study of 3 starts that kept 2) is not named."""
    if not job.latency or len(job.values) < 2:
        return job
    extra = notes(report, job)
    if job.best:
        short = missing_starts(report, [b for b, _ in job.values[:2]])
        if short:
            lost = ", ".join(
                f"{b} has {had} of the {planned} engine starts its run planned"
                for b, (had, planned) in short.items()
            )
            job = replace(job, best=None, verdict=f"not decided: {lost} (was: {job.best} {job.verdict})")
    if not extra:
        return job
    return replace(job, caution="; ".join([*([job.caution] if job.caution else []), *extra]))
