"""The one load loop: many requests in flight on one backend, timed on one monotonic clock.

    await drive(Drive(backend.stream, timeout_s, origin), sessions, outcomes, LoadSettings(concurrency=8))

A level is run through :func:`backends.load_level.run_level` (in this process, or from client processes:
``backends.load_shards``), which samples the engine's figures beside it; this module is the loop they share.
``sessions`` is a list of request lists: a session's requests run in order (a user's turns,
a think time apart), sessions run concurrently. **Closed loop** (``concurrency`` C): C
workers, each takes the next session as soon as its previous one is done, so C requests are in
flight while sessions remain (with a think time, C *users*: fewer in flight). **Open loop**
(``rate_rps``): sessions start at the arrival times of the named process (``contract.arrivals``:
``poisson`` by default, ``constant``, ``gamma`` with a ``burstiness``), drawn ahead from the seed,
however many are already in flight; with ``duration_s`` every arrival before that many seconds
(a sustained rate for a time, not a count). ``seconds``: no session or turn starts after that many
seconds (the rest are reported as not started).

Think time (``think_time_s``, mean Z; ``think``: ``fixed`` or ``exponential``, drawn per session from
the seed): a user waits Z between an answer and its next turn. In a closed loop with a think time each
worker is a user: its first session starts after a draw of the think's stationary residual (fixed: a
uniform draw in [0, Z), exponential: an exponential of mean Z, memoryless), so users do not all arrive
at once, and a later session after a whole think. Every request records when it was planned to be
submitted (``planned_submit_s``: its arrival, or its user's last answer plus the think drawn) beside
when it was (``submit_s``); ``contract.level_flags`` flags a level whose submits lagged the plan.

Every time is ``time.perf_counter()`` (monotonic) in seconds from the level's start: submit,
first token, finish, and the arrival of every token (the backend ticks a :class:`TokenClock`
as tokens become available to this process; a tick of n tokens stamps n arrivals at once).
Backends implement :meth:`backends.base.Backend.stream` (``async``): engines that batch requests
in flight (vLLM stepped in this process, SGLang ``async_generate``, an HTTP server through
``AsyncOpenAI``) run them together; the default runs ``_generate`` one request at a time on one
worker thread behind a FIFO queue (``queue_ms``: the wait for it), which is what putting a
``generate()`` behind a web server means.

Every answer is checked against its request and its stream (``backends.answer_checks``: usage
counts, cached tokens, a short answer under ``ignore_eos``); one that contradicts them is an
outcome with an error, as a failed request is.

A request that does not finish within ``--request-timeout`` (``BackendSettings.request_timeout_s``)
becomes an outcome with a ``TimeoutError`` and the level goes on. Its stream is cancelled; what that
frees depends on the backend: vLLM and SGLang in process abort the request in the engine, a server's
stream is closed (the server aborts it), while the default queue cannot stop a ``_generate`` already
running on its thread (a queued one that has not started is dropped).
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass, field
from typing import Any

from llm_call_anatomy.backends.answer_checks import check_answer
from llm_call_anatomy.backends.base import TokenClock
from llm_call_anatomy.contract import arrivals as arrival_process
from llm_call_anatomy.contract.adapter import RawOutput, Request


@dataclass(frozen=True)
class LoadSettings:
    concurrency: int | None = None  # closed loop: requests in flight
    rate_rps: float | None = None  # open loop: arrivals of sessions per second
    think_time_s: float = 0.0  # between a session's requests: the mean
    seconds: float | None = None  # stop starting requests after this long
    seed: int = 13
    client_procs: int | None = None  # client processes for a backend with a load client (None: automatic)
    duration_s: float | None = None  # open loop: arrivals drawn for this long (None: one a session)
    arrival: str = arrival_process.DEFAULT_PROCESS  # open loop: the arrival process (contract.arrivals)
    burstiness: float = 1.0  # gamma arrivals' shape (1: Poisson)
    think: str = "fixed"  # the think time's distribution: "fixed" or "exponential" (mean think_time_s)
    # open loop: the plan's own arrival times (s from the origin, one a session, in order), where the plan
    # gives them (a replayed trace) instead of a process to draw them from
    arrivals_s: tuple[float, ...] | None = None

    @classmethod
    def of(cls, group_load: dict[str, Any]) -> LoadSettings:
        return cls(
            **{k: group_load.get(k) for k in ("concurrency", "rate_rps", "seconds", "duration_s")},
            think_time_s=group_load.get("think_time_s") or 0.0,
            seed=group_load.get("seed", 13),
            arrival=group_load.get("arrival") or arrival_process.DEFAULT_PROCESS,
            burstiness=group_load.get("burstiness") or 1.0,
            think=group_load.get("think") or "fixed",
            arrivals_s=tuple(group_load["arrivals_s"]) if group_load.get("arrivals_s") is not None else None,
        )

    def think_draw(self, rng: random.Random, residual: bool = False) -> float:
        """One think time (``residual``: the wait of a user already thinking when the level starts)."""
        z = self.think_time_s
        if not z:
            return 0.0
        if self.think == "exponential":
            return rng.expovariate(1 / z)
        return rng.uniform(0, z) if residual else z


@dataclass
class Outcome:
    """One request under load; times in seconds from the level's start (None: it did not get there)."""

    session: int
    turn: int
    output: RawOutput | None = None
    planned_submit_s: float | None = None  # when the plan said to submit it (arrival, or answer + think)
    submit_s: float | None = None
    first_token_s: float | None = None
    finish_s: float | None = None
    token_times_s: list[float] = field(default_factory=list)  # one per output token, as it arrived
    chunk_times_s: list[float] = field(
        default_factory=list
    )  # one per chunk (a tick of the clock), as it arrived
    queue_ms: float | None = None  # queued backends: time before its turn came
    error: str | None = None

    @property
    def started(self) -> bool:
        return self.submit_s is not None


def timeout_message(timeout_s: float) -> str:
    """What a request cut off by ``--request-timeout`` says (one meaning for every path: the whole
    request)."""
    return (
        f"no answer within {timeout_s:g} s (--request-timeout: the whole request, "
        "from submit to its last token)"
    )


def token_times(clock: TokenClock, origin: float) -> list[float]:
    out: list[float] = []
    for t, n in clock.stamps:
        out += [t - origin] * n
    return out


async def _one(
    stream,
    timeout_s: float,
    request: Request,
    outcome: Outcome,
    origin: float,
    report=None,
    planned: float | None = None,
) -> None:
    clock = TokenClock(lambda: None)  # the backend's own stream synchronizes where it must
    outcome.submit_s = clock.start - origin
    outcome.planned_submit_s = None if planned is None else planned - origin
    if report is not None:
        report("submit", outcome)
    try:
        # --request-timeout bounds the whole request (queue, prefill, every token): on expiry the
        # backend's stream is cancelled, and a backend that can abort a request frees its engine slot
        # there (vLLM in process, SGLang, the HTTP client closing its stream)
        async with asyncio.timeout(timeout_s) as deadline:
            outcome.output = await stream(request, clock)
        check_answer(
            request, outcome.output, clock.tokens_ticked()
        )  # a usage count that contradicts the stream: an error
    except TimeoutError as exc:  # ours, or one the backend raised itself
        outcome.error = (
            f"TimeoutError: {timeout_message(timeout_s)}"
            if deadline.expired()
            else f"{type(exc).__name__}: {exc}"
        )
    except Exception as exc:  # noqa: BLE001 - a failed request is an outcome, the level goes on
        outcome.error = f"{type(exc).__name__}: {exc}"
    outcome.finish_s = time.perf_counter() - origin
    outcome.token_times_s = token_times(clock, origin)
    outcome.chunk_times_s = [t - origin for t, n in clock.stamps if n]
    outcome.first_token_s = outcome.token_times_s[0] if outcome.token_times_s else None
    if clock.served_at is not None:
        outcome.queue_ms = (clock.served_at - clock.start) * 1e3
    if report is not None:
        report("done", outcome)


@dataclass
class Drive:
    """What :func:`drive` needs besides the sessions: how to stream one request, and the level's clock."""

    stream: Any  # async (Request, TokenClock) -> RawOutput
    timeout_s: float
    origin: float
    report: Any = None  # (event, Outcome) -> None: "submit" and "done", as they happen (client processes)


async def drive(
    d: Drive,
    sessions: list[list[Request]],
    outs: list[list[Outcome]],
    s: LoadSettings,
    arrivals: list[float] | None = None,
    workers: int | None = None,
    keys: list[int] | None = None,
) -> None:
    """THE load loop: the sessions at the load ``s`` (``workers`` closed-loop workers, default
    ``s.concurrency``; open loop: session k starts ``arrivals[k]`` s after the origin). Client processes run
    it over their shard: ``keys``, each session's index in the level (its think times' seed, so that two
    processes' sessions never think alike; default: its index here)."""
    deadline = d.origin + s.seconds if s.seconds else None
    if (
        d.origin > time.perf_counter()
    ):  # a client process told the origin ahead of time: nothing starts before
        await asyncio.sleep(d.origin - time.perf_counter())

    async def session(k: int, first_at: float | None = None, first: bool = False) -> bool:
        """Session k's turns; False where its user's next turn falls after the level's deadline."""
        key = keys[k] if keys is not None else k
        rng = random.Random(f"{s.seed}:think:{key}")  # a session's think times: drawn from the seed
        planned = first_at
        if planned is None:  # closed loop: now, or a user's think first (its residual for a first session)
            planned = time.perf_counter() + (s.think_draw(rng, residual=first) if s.think_time_s else 0.0)
        for i, (request, outcome) in enumerate(zip(sessions[k], outs[k], strict=True)):
            if i:
                planned = time.perf_counter() + s.think_draw(rng)
            if deadline is not None and planned >= deadline:
                return False  # never past the level's deadline: it would only wait to stop
            wait = planned - time.perf_counter()
            if wait > 0:
                await asyncio.sleep(wait)
            await _one(d.stream, d.timeout_s, request, outcome, d.origin, d.report, planned)
        return True

    if s.rate_rps:
        arrivals = arrivals if arrivals is not None else arrival_times(len(sessions), s)
        tasks = []
        for k in range(min(len(sessions), len(arrivals))):
            due = d.origin + arrivals[k]
            if deadline is not None and due >= deadline:
                break  # an arrival after the deadline never starts
            wait = due - time.perf_counter()
            if wait > 0:
                await asyncio.sleep(wait)
            tasks.append(asyncio.create_task(session(k, due)))
        await asyncio.gather(*tasks)
    else:
        queue = list(range(len(sessions)))[::-1]

        async def worker() -> None:
            first = True
            while queue and (deadline is None or time.perf_counter() < deadline):
                if not await session(queue.pop(), first=first):
                    # the worker is a user, and it thinks past the level's end: it takes no other session.
                    # (Taking one drew another think until one fell inside the level: a level of users who
                    # think sent up to 1.4x the turns of its population, and more of them near its end.)
                    return
                first = False

        await asyncio.gather(*(worker() for _ in range(max(1, workers or s.concurrency or 1))))


def arrival_times(n: int, s: LoadSettings) -> list[float]:
    """Open loop: the sessions' start times (s from the origin), the level's arrival process drawn with its
    seed (``contract.arrivals``): ``n`` at most, and only those before ``duration_s`` where it is set; or the
    plan's own (``arrivals_s``: a replayed trace's timestamps), ``n`` at most, every one of them."""
    if s.arrivals_s is not None:
        return list(s.arrivals_s[:n])
    return arrival_process.arrival_times(
        s.rate_rps, n, until_s=s.duration_s, process=s.arrival, burstiness=s.burstiness, seed=s.seed
    )


def new_outcomes(sessions: list[list[Request]]) -> list[list[Outcome]]:
    return [[Outcome(session=k, turn=t) for t in range(len(reqs))] for k, reqs in enumerate(sessions)]
