"""The capacity search inside the runner: after a variant's last planned level of a loop, the levels the
search adds (``contract.capacity``), each run and recorded as any load level.

The concurrent group runner's ``after`` (``harness.runner.GROUP_RUNNERS``) is :func:`after_level`; it sees
the runner through :class:`~harness.load_runner.RunnerFace` as the level runner does. Each round reads the
variant's levels on disk (:func:`measured_levels`: this attempt's and an earlier one's), judges every level
against every target (the kind's ``search_judge`` where it has one), runs once more for twice the time a
level whose verdict is undecided inside the bracket, and else runs the next level that
``contract.capacity.choose`` picks, its groups cut from the plan's pool by the kind (``Kind.search_groups``),
until the search has added its levels or has nothing left to pick. On ``--resume`` an added level with
failures from an earlier run is run again first, whole (a new attempt), as the runner does a planned one.
"""

from __future__ import annotations

from dataclasses import replace

from llm_call_anatomy.contract.capacity import (
    DEFAULT_RATIO,
    UNDECIDED,
    capacity,
    choose,
    judge,
    search_ceiling,
)
from llm_call_anatomy.contract.level_facts import LevelFacts
from llm_call_anatomy.contract.level_stats import level_stats
from llm_call_anatomy.contract.plan import Group
from llm_call_anatomy.contract.records import record_place
from llm_call_anatomy.contract.slo import parse_targets
from llm_call_anatomy.harness.load_runner import RunnerFace
from llm_call_anatomy.harness.records import read_records
from llm_call_anatomy.harness.steps import console
from llm_call_anatomy.workloads.kinds import kind


def measured_levels(
    run_dir, backend: str, engine_start: int, workload: str, mode: str, loop: str, kind: str | None = None
) -> dict[float, tuple[list[dict], LevelFacts | None]]:
    """Every level of one variant and loop on disk (this attempt's and an earlier one's): level -> (its
    request rows, its level record's facts; None: no level record, the level was cut short). ``kind``: the
    variant's kind (None: whichever kind has load levels)."""
    key = "load_concurrency" if loop == "closed" else "load_rate_rps"
    other = "load_rate_rps" if loop == "closed" else "load_concurrency"
    rows: dict[float, tuple[list, dict, list]] = {}
    for r in read_records(run_dir):
        if (
            (r.get("backend"), r.get("engine_start") or 0, r.get("workload"), r.get("mode"))
            != (backend, engine_start, workload, mode)
            or (kind is not None and r.get("kind") != kind)
            or r.get(key) is None
            or r.get(other) is not None
        ):
            continue
        reqs, level, records = rows.setdefault(r[key], ([], {}, []))
        if r.get("rep") is None:
            level.update((r.get("extra") or {}).get("level") or {})
            records.append(r)
        elif r.get("submit_s") is not None:
            reqs.append(r)
    return {x: (reqs, facts_of(level, records)) for x, (reqs, level, records) in rows.items()}


def facts_of(level: dict, records: list[dict]) -> LevelFacts | None:
    """A level's facts from its level records (one, but for a key read twice), the last error said kept; None
    without any."""
    if not records:
        return None
    error = next((r["error"] for r in reversed(records) if r.get("error")), None)
    return replace(LevelFacts.from_dict(level, where=record_place(records[-1])), level_error=error)


def has_failures(rows: list[dict], facts: LevelFacts) -> bool:
    """A level on disk with a failed request, or whose level record says it failed (a client died)."""
    return bool(facts.level_error) or any(r.get("error") for r in rows)


def after_level(runner: RunnerFace, group: Group) -> int:
    """After a level: the capacity search where the plan puts one (a variant's last planned level of a
    loop)."""
    return run_search(runner, group) if (group.load or {}).get("search") else 0


def run_search(runner: RunnerFace, group: Group) -> int:
    """After a variant's last planned level of a loop: the levels the capacity search adds, each run and
    recorded as any level (``--resume`` finds them on disk and goes on from there). A level whose verdict is
    undecided inside the bracket is run once more for twice the time (a new attempt of the level, with
    ``extended``) before the search goes on. Returns how many ran."""
    info = group.load["search"]
    targets = parse_targets(info["targets"])
    ratio = info.get("ratio") or DEFAULT_RATIO
    first = group.steps[0]
    search_groups = kind(first.kind).search_groups  # the kind cuts an added level's groups from its pool
    # a level for a target: the kind's own judgement (a mixed traffic's class), else on every request
    judge_level = kind(first.kind).search_judge or (lambda t, rows, facts, stats: judge(t, stats, facts))
    if search_groups is None:
        raise TypeError(f"kind {first.kind!r} plans a capacity search but has no search_groups")
    pool = {g.load["pool"]: g.steps for g in runner.plan.groups if g.block == info["pool"] and g.load}
    closed = info["loop"] == "closed"
    # a closed loop goes no higher than the engine's own limit on requests running at once, where it is known
    limit, limit_name = runner.backend.max_running() if closed else (None, "")
    ceiling = search_ceiling(info["ceiling"], limit, info["loop"])
    if limit is not None and ceiling == limit and ceiling != info["ceiling"]:
        info = {**info, "engine_limit": limit, "engine_limit_name": limit_name}
        console.print(
            f"  capacity search: {first.workload}/{first.mode} up to C={limit}, the engine's {limit_name} "
            f"(below the stated maximum, C={info['ceiling']})"
        )
    ordered = sorted(
        (t for t in targets if not t.throughput_only), key=lambda t: min(lim.ms for lim in t.limits)
    )
    ran = 0
    here: set[float] = set()  # levels this call ran (added or run again): never run twice
    while True:
        levels = measured_levels(
            runner.writer.path.parent,
            runner.backend.name,
            first.engine_start,
            first.workload,
            first.mode,
            info["loop"],
            first.kind,
        )
        # a level is there when its level record is (not cut short)
        levels = {x: (rows, facts) for x, (rows, facts) in levels.items() if facts is not None}
        # an added level with failures from an earlier run (--resume) is run again, whole (a new attempt),
        # before anything is judged: it counts among the added levels, but its failures are not its verdict
        stale = [
            (x, facts.searched_for)
            for x, (rows, facts) in sorted(levels.items())
            if facts.searched_for and x not in here and has_failures(rows, facts)
        ]
        added = sum(1 for _, facts in levels.values() if facts.searched_for)
        redo, extend = None, 1
        if stale:
            x, name = stale[0]
        else:
            if added >= info["levels"]:
                break
            verdicts = {
                t.name: {
                    x: judge_level(t, rows, facts, level_stats(rows, x if closed else None))
                    for x, (rows, facts) in levels.items()
                }
                for t in targets
            }
            redo = next(
                (
                    (t, x)
                    for t in ordered
                    for x in capacity(
                        t,
                        info["loop"],
                        {x: (v, levels[x][1]) for x, v in verdicts[t.name].items()},
                        ceiling,
                        ratio,
                    ).undecided
                    if verdicts[t.name][x].decision == UNDECIDED and not levels[x][1].extended
                ),
                None,
            )
            extend = 2 if redo else 1
            judged = {
                t.name: {x: v.decision for x, v in vs.items() if v.decision is not None}
                for t, vs in zip(targets, verdicts.values(), strict=True)
            }
            pick = redo or choose(targets, judged, closed, ceiling, set(levels), ratio)
            if pick is None:
                break
            target, x = pick
            x = int(x) if closed else x
            name = target.name
        console.print(
            f"  capacity search ({name}): {first.workload}/{first.mode} at "
            + (f"C={x}" if closed else f"rate={x:g}")
            + (" again (it had failed requests)" if stale else "")
            + (" again, for twice the time (undecided)" if redo else "")
        )
        for g in search_groups(
            info,
            pool.get("warmup", []),
            pool["timed"],
            f"{first.workload}/{first.mode}",
            x if closed else None,
            None if closed else x,
            name,
            extend,
        ):
            runner.run_group(g, record=not g.warmup)
        here.add(x)
        ran += 1
    return ran
