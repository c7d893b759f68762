"""A load level inside the runner: the plan group's steps as sessions, run by ``backends.load_level``,
recorded.

The group runner of kinds whose ``runs_as`` is ``"concurrent"`` (``harness.runner.GROUP_RUNNERS``);
it sees the :class:`~harness.runner.Runner` through its public face, :class:`RunnerFace` (``backend``,
``plan``, ``writer``, ``base``, ``done``, ``failed``, ``errors_seen``, ``record``, ``run_group``), and imports
nothing of the runner (the runner imports this module).

The group's steps become sessions (a user's turns in order; a fixed-shape request is a session
of one), ``backends.load_level.run_level`` runs them at the group's load, and every request that was
started becomes one record: its submit / first-token / finish times and every token's arrival on
the level's clock, TTFT and decode derived from them as for one request at a time
(``backends.base.TTFT_DEFINITION``, at the caller), ``queue_ms`` where a queue held it. One more
record per level (``rep`` None) keeps the level's facts in ``extra.level`` (``contract.level_facts``,
built by :func:`level_facts_of`): its wall time, the requests started and not, the load it planned, and the
engine's own figures where it reports them. Every record of one run of the level carries its attempt
(``extra.level_attempt``): a level run again (``--resume`` after a failed request) supersedes the earlier
attempt's records as a whole (``contract.records.latest_attempts``). After a variant's last planned level,
``run_search`` runs the levels the capacity search adds (``contract.capacity``); on ``--resume`` it first runs
again every added level with failures (as the runner does a planned one).
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Any, Protocol

from llm_call_anatomy.backends.base import Backend
from llm_call_anatomy.backends.load_level import run_level
from llm_call_anatomy.backends.load_loop import LoadSettings, Outcome
from llm_call_anatomy.contract.capacity import (
    DEFAULT_RATIO,
    UNDECIDED,
    capacity,
    choose,
    judge,
    search_ceiling,
)
from llm_call_anatomy.contract.level_facts import LevelFacts
from llm_call_anatomy.contract.level_flags import population
from llm_call_anatomy.contract.level_stats import level_stats
from llm_call_anatomy.contract.plan import Group, Plan, Step
from llm_call_anatomy.contract.records import ATTEMPT, Record, RecordKey, record_place
from llm_call_anatomy.contract.slo import parse_targets
from llm_call_anatomy.harness.records import RecordWriter, read_records
from llm_call_anatomy.harness.secrets import redact
from llm_call_anatomy.harness.steps import console, output_fields, request_for
from llm_call_anatomy.workloads.kinds import kind


class RunnerFace(Protocol):
    """What a group runner sees of the runner (``harness.runner.Runner`` is one)."""

    backend: Backend
    plan: Plan
    writer: RecordWriter
    base: dict
    done: set  # --resume: the keys recorded (RecordKey.without_backend())
    failed: set  # --resume: the keys whose record has an error
    errors_seen: set[str]

    def record(self, step: Step, **kw: Any) -> Record: ...

    def run_group(self, group: Group, record: bool) -> list[Record]: ...


def sessions_of(steps: list[Step]) -> list[list[Step]]:
    """Steps grouped by user in plan order; steps without a user are sessions of one."""
    by_user: dict[int, list[Step]] = {}
    out: list[list[Step]] = []
    for step in steps:
        if step.user is None:
            out.append([step])
        elif step.user in by_user:
            by_user[step.user].append(step)
        else:
            by_user[step.user] = [step]
            out.append(by_user[step.user])
    return out


def outcome_fields(o: Outcome, prompt: list[int]) -> dict:
    """The record fields of one started request under load: its submit, first-token and finish stamps and
    every token's and chunk's arrival (rounded to µs), TTFT and decode derived from them as for one request
    at a time, and, where it returned an output, the batch-1 output fields plus the engine's own TTFT and
    decode."""
    times = o.token_times_s
    ttft = None if o.first_token_s is None else (o.first_token_s - o.submit_s) * 1e3
    decode = (times[-1] - times[0]) * 1e3 / (len(times) - 1) if len(times) > 1 else None
    fields = {
        "planned_submit_s": o.planned_submit_s,
        "submit_s": o.submit_s,
        "first_token_s": o.first_token_s,
        "finish_s": o.finish_s,
        "token_times_s": [round(t, 6) for t in times],
        "chunk_times_s": [round(t, 6) for t in o.chunk_times_s],
        "queue_ms": o.queue_ms,
        "ttft_ms": ttft,
        "decode_ms_per_token": decode,
        "e2e_ms": (o.finish_s - o.submit_s) * 1e3,
    }
    out = o.output
    if out is not None:
        fields.update(
            output_fields(out, prompt),
            engine_ttft_ms=out.engine_ttft_ms,
            engine_decode_ms_per_token=out.engine_decode_ms_per_token,
        )
    return fields


def level_done(runner: RunnerFace, group: Group) -> bool:
    """A level is done when its own record is and none of its requests failed: with ``seconds`` it stops
    starting requests, so some of its steps never run, and --resume must not run the level again beside
    the records it has; a level with a failed request is run again, whole (a new attempt)."""
    if group.warmup:
        return all(s.key() in runner.done for s in group.steps)
    level_done = RecordKey.of(group.steps[0]).of_level().without_backend() in runner.done
    return level_done and not any(s.key() in runner.failed for s in group.steps)


def run_level_group(runner: RunnerFace, group: Group, record: bool) -> list[Record]:
    """One load level (``Kind.runs_as == "concurrent"``): its sessions run at once, every started request
    recorded."""
    if group.reset_cache:
        runner.backend.reset_cache()  # a level never inherits another's cache
    settings = replace(LoadSettings.of(group.load or {}), client_procs=runner.backend.settings.client_procs)
    if group.warmup:  # a warm-up primes the engine and models no users: its requests go at once, no think
        settings = replace(settings, think_time_s=0.0)
    sessions = sessions_of(group.steps)
    requests = [[request_for(s, runner.plan) for s in session] for session in sessions]
    outcomes, measured = run_level(runner.backend, requests, settings)
    if not record:
        return []
    backend = runner.backend
    level = {"load_concurrency": settings.concurrency, "load_rate_rps": settings.rate_rps}
    records = []
    started = 0
    attempt = uuid.uuid4().hex[:12]
    for session, outs in zip(sessions, outcomes, strict=True):
        for step, o in zip(session, outs, strict=True):
            if not o.started:
                continue
            started += 1
            fields = outcome_fields(o, runner.plan.prompts[step.prompt])
            extra = {**(fields.pop("extra", None) or {}), ATTEMPT: attempt}
            rec = runner.record(
                step,
                **fields,
                **level,
                user=step.user,
                error=redact(o.error) if o.error else None,
                timing_source=backend.clock_source,
                cache_state="reuse-allowed",
                extra=extra,
            )
            runner.writer.write(rec)
            records.append(rec)
    first = group.steps[0]
    facts = level_facts_of(measured, group, settings, backend.capabilities.batches_requests, records)
    runner.writer.write(
        Record(
            **{**runner.base, "engine_start": first.engine_start},
            workload=first.workload,
            kind=first.kind,
            mode=first.mode,
            case=first.case,
            **level,
            error=facts.level_error,
            extra={"level": facts.to_dict(), ATTEMPT: attempt},
        )
    )
    errors = sum(r.error is not None for r in records)
    runner.errors_seen.update(
        r.error for r in records if r.error
    )  # the child's exit 1, as for one request at a time
    console.print(
        f"  {group.block}: {started} requests in {facts.wall_s:.1f} s"
        + (f", {errors} failed" if errors else "")
    )
    return records


def level_facts_of(
    measured: LevelFacts, group: Group, settings: LoadSettings, batches: bool, records: list[Record]
) -> LevelFacts:
    """The level record's facts (``contract.level_facts``): what ``run_level`` measured (the level's clock,
    its client, the engine's figures and the GPU's), the load the group planned and what its
    planner states beside it, the population its records (one a started request) show, and the level's error:
    every request failed (a server that died: there are no facts to keep, the record says so) or a client
    process died (--resume redoes it)."""
    load = group.load or {}
    search = load.get("search") or {}
    failed = [r.error for r in records if r.error]
    error = (
        f"every request of the level failed: {failed[0]}" if records and len(failed) == len(records) else None
    )
    open_loop = bool(settings.rate_rps)
    facts = replace(
        measured,
        requests_planned=len(group.steps),
        requests_started=len(records),
        batches_requests=batches,
        served_as="batched by the engine" if batches else "one at a time, queued (FIFO)",
        think_time_s=settings.think_time_s,
        think=settings.think,
        users_start=load.get("users_start"),
        session_turns=session_turns(group) if settings.think_time_s else None,
        seconds=settings.seconds,
        duration_s=settings.duration_s if open_loop else None,
        arrival=settings.arrival if open_loop else None,
        burstiness=settings.burstiness if open_loop else None,
        searched_for=load.get("searched_for"),
        extended=load.get("extended"),
        # the search's stated maximum and ratio, for a reader that judges the bracket (contract.capacity)
        search_ceiling=load.get("search_ceiling", search.get("ceiling")),
        search_ratio=load.get("search_ratio", search.get("ratio")),
        search_engine_limit=load.get("search_engine_limit"),
        search_engine_limit_name=load.get("search_engine_limit_name"),
        level_error=error or measured.client_failed,
        **level_population(records, settings.concurrency),
    )
    # what the planner states about the level beside its load (a replayed trace's shape, what it left out)
    return facts.updated(load.get("facts") or {})


def session_turns(group: Group) -> float | None:
    """The mean turns of a sessions level's sessions as planned (a user's whole session, where a stationary
    user's first is sent from a later turn on: its highest turn counts), for the page's young-users check."""
    last: dict[int, int] = {}
    for s in group.steps:
        if s.user is not None and s.turn:
            last[s.user] = max(last.get(s.user, 0), s.turn)
    return sum(last.values()) / len(last) if last else None


def level_population(records: list[Record], concurrency: int | None) -> dict:
    """The level's users, requests in flight (mean, p90 over the steady window) and arrivals/s, from its
    records (``contract.level_flags.population``)."""
    rows = [
        {
            k: getattr(r, k)
            for k in ("user", "planned_submit_s", "submit_s", "finish_s", "error", "token_times_s")
        }
        for r in records
    ]
    return population(rows, level_stats(rows, concurrency).window, concurrency)


# --- the capacity search (contract.capacity) -----------------------------------------------------
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
