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
the capacity search (``harness.load_search``, the group runner's ``after``) runs the levels it adds, each
through the runner as any level.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Any, Protocol

from llm_call_anatomy.backends.base import Backend
from llm_call_anatomy.backends.load_level import run_level
from llm_call_anatomy.backends.load_loop import LoadSettings, Outcome
from llm_call_anatomy.contract.level_facts import LevelFacts
from llm_call_anatomy.contract.level_flags import population
from llm_call_anatomy.contract.level_stats import level_stats
from llm_call_anatomy.contract.plan import Group, Plan, Step
from llm_call_anatomy.contract.records import ATTEMPT, Record, RecordKey
from llm_call_anatomy.harness.records import RecordWriter
from llm_call_anatomy.harness.secrets import redact
from llm_call_anatomy.harness.steps import console, output_fields, request_for


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
