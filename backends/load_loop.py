"""The one load loop: many requests in flight on one backend, timed on one monotonic clock.

    outcomes, facts = run_level(backend, sessions, LoadSettings(concurrency=8))

``sessions`` is a list of request lists: a session's requests run in order (a user's turns,
``think_time_s`` apart), sessions run concurrently. **Closed loop** (``concurrency`` C): C
workers, each takes the next session as soon as its previous one is done, so C requests are in
flight while sessions remain. **Open loop** (``rate_rps``): sessions start at Poisson arrival
times (exponential gaps, seeded), however many are already in flight. ``seconds``: no session or
turn starts after that many seconds (the rest are reported as not started).

Every time is ``time.perf_counter()`` (monotonic) in seconds from the level's start: submit,
first token, finish, and the arrival of every token (the backend ticks a :class:`TokenClock`
as tokens become available to this process; a tick of n tokens stamps n arrivals at once).
Backends implement :meth:`backends.base.Backend.stream` (``async``): engines that batch requests
in flight (vLLM stepped in this process, SGLang ``async_generate``, an HTTP server through
``AsyncOpenAI``) run them together; the default runs ``_generate`` one request at a time on one
worker thread behind a FIFO queue (``queue_ms``: the wait for it), which is what putting a
``generate()`` behind a web server means. Engine facts per level (KV-cache usage peak,
preemptions, prefix-cache hits) come from :meth:`Backend.load_stats`, sampled every 0.1 s; the GPU's
power, utilisation, memory and energy from NVML on a thread of its own (``backends.telemetry``).

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

from backends.base import Backend, RawOutput, Request, TokenClock
from backends.telemetry import GpuTelemetry

SAMPLE_EVERY_S = 0.1  # gauges (KV-cache usage) are sampled this often: a level shorter than that may show no peak
FIRST_SAMPLE_S = 0.01


@dataclass(frozen=True)
class LoadSettings:
    concurrency: int | None = None  # closed loop: requests in flight
    rate_rps: float | None = None  # open loop: Poisson arrivals of sessions per second
    think_time_s: float = 0.0  # between a session's requests
    seconds: float | None = None  # stop starting requests after this long
    seed: int = 13

    @classmethod
    def of(cls, group_load: dict[str, Any]) -> LoadSettings:
        return cls(**{k: group_load.get(k) for k in ("concurrency", "rate_rps", "seconds")},
                   think_time_s=group_load.get("think_time_s") or 0.0, seed=group_load.get("seed", 13))


@dataclass
class Outcome:
    """One request under load; times in seconds from the level's start (None: it did not get there)."""

    session: int
    turn: int
    output: RawOutput | None = None
    submit_s: float | None = None
    first_token_s: float | None = None
    finish_s: float | None = None
    token_times_s: list[float] = field(default_factory=list)  # one per output token, as it arrived
    queue_ms: float | None = None  # queued backends: time before its turn came
    error: str | None = None

    @property
    def started(self) -> bool:
        return self.submit_s is not None


def token_times(clock: TokenClock, origin: float) -> list[float]:
    out: list[float] = []
    for t, n in clock.stamps:
        out += [t - origin] * n
    return out


async def _one(backend: Backend, request: Request, outcome: Outcome, origin: float) -> None:
    clock = TokenClock(lambda: None)  # the backend's own stream synchronizes where it must
    outcome.submit_s = clock.start - origin
    timeout_s = backend.settings.request_timeout_s
    try:
        # --request-timeout bounds the whole request (queue, prefill, every token): on expiry the
        # backend's stream is cancelled, and a backend that can abort a request frees its engine slot
        # there (vLLM in process, SGLang, the HTTP client closing its stream)
        async with asyncio.timeout(timeout_s) as deadline:
            outcome.output = await backend.stream(request, clock)
    except TimeoutError as exc:  # ours, or one the backend raised itself
        outcome.error = (f"TimeoutError: no answer within {timeout_s:g} s (--request-timeout)" if deadline.expired()
                         else f"{type(exc).__name__}: {exc}")
    except Exception as exc:  # noqa: BLE001 - a failed request is an outcome, the level goes on
        outcome.error = f"{type(exc).__name__}: {exc}"
    outcome.finish_s = time.perf_counter() - origin
    outcome.token_times_s = token_times(clock, origin)
    outcome.first_token_s = outcome.token_times_s[0] if outcome.token_times_s else None
    if clock.served_at is not None:
        outcome.queue_ms = (clock.served_at - clock.start) * 1e3


async def _session(backend: Backend, requests: list[Request], outs: list[Outcome], s: LoadSettings, origin: float,
                   deadline: float | None) -> None:
    for i, (request, outcome) in enumerate(zip(requests, outs, strict=True)):
        if i and s.think_time_s:
            await asyncio.sleep(s.think_time_s)
        if deadline is not None and time.perf_counter() >= deadline:
            return
        await _one(backend, request, outcome, origin)


async def _level(backend: Backend, sessions: list[list[Request]], s: LoadSettings) -> tuple[list[list[Outcome]], dict]:
    outs = [[Outcome(session=k, turn=t) for t in range(len(reqs))] for k, reqs in enumerate(sessions)]
    stats = _Sampler(backend)
    gpu = GpuTelemetry().__enter__()  # its own thread: power, utilisation, memory and energy over the level
    origin = time.perf_counter()
    deadline = origin + s.seconds if s.seconds else None
    sampler = asyncio.create_task(stats.run())
    if s.rate_rps:
        rng = random.Random(s.seed)
        tasks, at = [], 0.0
        for k, reqs in enumerate(sessions):
            wait = origin + at - time.perf_counter()
            if wait > 0:
                await asyncio.sleep(wait)
            if deadline is not None and time.perf_counter() >= deadline:
                break
            tasks.append(asyncio.create_task(_session(backend, reqs, outs[k], s, origin, deadline)))
            at += rng.expovariate(s.rate_rps)
        await asyncio.gather(*tasks)
    else:
        queue = list(range(len(sessions)))[::-1]

        async def worker() -> None:
            while queue and (deadline is None or time.perf_counter() < deadline):
                k = queue.pop()
                await _session(backend, sessions[k], outs[k], s, origin, deadline)

        await asyncio.gather(*(worker() for _ in range(max(1, s.concurrency or 1))))
    wall_s = time.perf_counter() - origin
    sampler.cancel()
    gpu.__exit__(None, None, None)
    facts = {"wall_s": wall_s, **stats.facts(), **gpu.facts()}
    return outs, facts


class _Sampler:
    """The backend's engine figures at the level's start and end, and the peaks of its gauges in between."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.first = backend.load_stats()
        self.peaks: dict[str, float] = {}

    def sample(self) -> dict[str, float]:
        now = self.backend.load_stats()
        for k, v in now.items():
            if k.endswith("_now") and isinstance(v, int | float):
                self.peaks[k] = max(self.peaks.get(k, v), v)
        return now

    async def run(self) -> None:
        await asyncio.sleep(FIRST_SAMPLE_S)  # the first sample once requests are in flight, not before
        while True:  # on a thread: a scrape of a server's /metrics must not hold up the token stamps
            await asyncio.to_thread(self.sample)
            await asyncio.sleep(SAMPLE_EVERY_S)

    def facts(self) -> dict[str, Any]:
        """Counters as differences over the level (``*_total``), gauges as their peak (``*_now`` -> ``*_peak``)."""
        last = self.sample()
        out: dict[str, Any] = {}
        for k, v in last.items():
            if k.endswith("_total") and isinstance(self.first.get(k), int | float):
                out[k.removesuffix("_total")] = v - self.first[k]
            elif k.endswith("_now"):
                out[k.removesuffix("_now") + "_peak"] = self.peaks.get(k, v)
            elif not k.endswith("_total"):
                out[k] = v
        return out


def run_level(backend: Backend, sessions: list[list[Request]], settings: LoadSettings) -> tuple[list[list[Outcome]], dict]:
    """Run one load level to the end; per session its requests' outcomes, and the level's engine facts."""
    return backend.run_async(_level(backend, sessions, settings))
