"""What a run will do, said before the first engine starts, and how long the rest will take once one has run.

harness/cli.py prints :func:`plan_lines` after the plan is rendered and before any backend's child starts:
one line a workload with its timed requests and what multiplies them (read from the plan's steps, so every
kind is counted alike: modes, temperatures, cases, repeats, turns, load levels), then the run's total over
the backends and engine starts; a backend that will be skipped (not installed, needs a GPU: harness/skips.py)
is named with its reason and not counted. A plan has no clock: how long a request takes is this machine's and
this backend's. Where this machine ran the backends on the model before, their pace then gives the time up
front (``harness/pace.py``); else the plan says that no estimate comes before the first case (why:
:data:`NO_PACE_YET`), and the first figure of time comes from the run itself: the progress bar's ETA once
cases finish, and after each backend :func:`rest_line`, the backends still to run at the pace of those that
ran (a backend that was skipped sets no pace, and one foreseen skipped is not among those left).
:func:`busy_line` warns, beside the plan, where the machine is already busy (its load average above its
cores).
"""

from __future__ import annotations

import os
from collections import defaultdict

from llm_call_anatomy.contract.docs import doc
from llm_call_anatomy.contract.plan import Group, Plan, Step

# the step fields that multiply a workload's requests, as the plan line names them (singular, plural)
AXES = (
    ("mode", "mode", "modes"),
    ("temperature", "temperature", "temperatures"),
    ("case", "case", "cases"),
    ("rep", "repeat", "repeats"),
    ("turn", "turn", "turns"),
)

LEVEL_AXES = {"case", "rep"}  # said as load levels where the workload has them


def timed_groups(plan: Plan) -> list[Group]:
    """The groups that are timed as planned: no warm-up, no capacity search's pool (the runner cuts it into
    the levels the search adds)."""
    return [g for g in plan.groups if g.steps and not g.warmup and not (g.load or {}).get("pool")]


def _count(n: int, one: str, many: str) -> str:
    return f"{n:,} {one if n == 1 else many}"


def workload_line(name: str, steps: list[Step], levels: int, starts: int) -> str:
    """``json: 240 requests (3 modes, 5 temperatures, 8 cases, 2 repeats)``: the axes with more than one
    value; a load's levels (in place of its cases and repeats); the engine starts that run it where more
    than one does."""
    parts = []
    for attr, one, many in AXES:
        if levels and attr in LEVEL_AXES:
            continue  # a load level is its case, and its requests' repeats are the users' turns
        values = {getattr(s, attr) for s in steps if getattr(s, attr) is not None}
        if len(values) > 1:
            parts.append(_count(len(values), one, many))
    if levels:
        parts.append(_count(levels, "load level", "load levels"))
    if starts > 1:
        parts.append(f"over {starts} engine starts")
    tokens = sum(s.max_new_tokens for s in steps)
    detail = f" ({', '.join(parts)})" if parts else ""
    return f"  {name}: {_count(len(steps), 'request', 'requests')}{detail}, up to {tokens:,} new tokens"


def plan_lines(
    plan: Plan,
    backends: list[str],
    searches: bool | None = None,
    time: str | None = None,
    skipped: dict[str, str] | None = None,
) -> list[str]:
    """The plan before the first engine start: one line a workload, then the total for the backends that will
    run (each runs every request), a line for each backend that will be skipped (``skipped``: backend ->
    why, ``harness/skips.py``; not counted), then the time: ``time`` where this machine's pace gives one
    (``harness/pace.py``), else how the run will tell it."""
    skipped = skipped or {}
    running = [b for b in backends if b not in skipped]
    steps_of: dict[str, list[Step]] = defaultdict(list)
    levels: dict[str, int] = defaultdict(int)
    starts: dict[str, set[int]] = defaultdict(set)
    groups = timed_groups(plan)
    for g in groups:
        name = g.steps[0].workload
        steps_of[name] += g.steps
        starts[name].add(g.steps[0].engine_start)
        if g.load is not None:
            levels[name] += 1
    searches = any((g.load or {}).get("search") for g in plan.groups) if searches is None else searches
    total = sum(len(s) for s in steps_of.values())
    lines = ["plan:"]
    lines += [workload_line(name, s, levels[name], len(starts[name])) for name, s in steps_of.items()]
    if running:
        lines.append(
            f"  {_count(total, 'timed request', 'timed requests')} a backend"
            + (
                f" × {len(running)} backends ({', '.join(running)}) = {total * len(running):,}"
                if len(running) > 1
                else ""
            )
            + (", plus warm-ups" if any(g.warmup for g in plan.groups) else "")
            + (" and the levels the capacity search adds" if searches else "")
        )
    else:
        lines.append("  nothing to time: every backend will be skipped")
    lines += [f"  {name}: skipped, not counted: {why}" for name, why in skipped.items()]
    if running:
        lines.append(time or NO_PACE_YET)
    return lines


# Before anything ran there is no honest figure of time: a request's seconds are this machine's, this
# backend's and this model's, and they spread too far for a guess by device kind to mean anything (on one
# 2-core VM, the tiny model's 5-request sweep took hf 8 s and vllm 42 s, most of it the engine start;
# smollm2 on the same machine takes minutes a backend; a 64-core host or a GPU is another order again). A
# guess that is off tenfold is worse than none, so the plan says when the first figure comes instead: the
# progress bar's ETA once the first case finishes, and the rest of the run after each backend. Where this
# machine ran these backends on this model before, their pace gives the time up front (harness/pace.py).
NO_PACE_YET = (
    "  time: no estimate before the first case (these backends never ran this model on this machine): the "
    "progress bar shows an ETA once the first case finishes, and after each backend the rest of the run is "
    "estimated at its pace"
)


def duration(seconds: float) -> str:
    """``45 s``, ``12 min``, ``2.5 h``."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def rest_line(measured_s: dict[str, float], left: list[str]) -> str | None:
    """After a backend: the backends ``left`` at the mean pace of those ``measured`` (backend -> seconds it
    ran, skipped ones left out); None when none is left or none has run yet."""
    if not left or not measured_s:
        return None
    pace = sum(measured_s.values()) / len(measured_s)
    return (
        f"about {duration(pace * len(left))} left for {', '.join(left)} "
        f"(at the pace of {', '.join(measured_s)} on this machine: {duration(pace)} a backend)"
    )


def busy_line(load: float | None, cores: int | None, device: str) -> str | None:
    """A warning before the first engine start where the machine is already busy: the 1-minute load average
    above its cores (other work competes with the run, and its timings carry that noise); None otherwise or
    where the load cannot be read."""
    if load is None or not cores or load <= cores:
        return None
    hint = (
        f"; on a CPU, run alone and set OMP_NUM_THREADS ({doc('explanation/methodology.md#a-busy-machine')})"
        if device == "cpu"
        else ""
    )
    return (
        f"warning: this machine is busy: load average {load:.1f} over its {cores} cores; other work competes "
        f"with the run and its timings will carry that noise{hint}"
    )


def machine_load() -> tuple[float | None, int | None]:
    """(the 1-minute load average, the cores this process may run on: its CPU affinity where the platform
    has one, e.g. a container limited to 2 of the host's cores, else every core): None where the platform
    has no load average."""
    try:
        load = os.getloadavg()[0]
    except (OSError, AttributeError):
        load = None
    try:
        cores: int | None = len(os.sched_getaffinity(0))
    except (OSError, AttributeError):
        cores = os.cpu_count()
    return load, cores
