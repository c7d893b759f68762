"""The one load loop (backends/load_loop.py) with stand-in backends whose service time is known.

A batching stand-in serves every request in flight at once (each token ``STEP_S`` apart), a
queued one is the base class's default (one request at a time on one worker thread). The loop
must keep exactly C requests in flight, run a session's turns in order, space open-loop arrivals
by the rate, stop at ``seconds``, stamp every token, and keep a failed request as an outcome.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace

import pytest

from llm_call_anatomy.backends.base import Backend, TokenClock
from llm_call_anatomy.backends.load_level import run_level
from llm_call_anatomy.backends.load_loop import LoadSettings, token_times
from llm_call_anatomy.contract.adapter import BackendSettings, Capabilities, RawOutput, Request

STEP_S = 0.004
SETTINGS = BackendSettings(model_path="-", model_label="-")


class Batching(Backend):
    """Every request in flight decodes at once: its n tokens arrive STEP_S apart, whatever else runs."""

    name = "batching"
    capabilities = Capabilities(load=True, batches_requests=True)

    def __init__(self) -> None:
        super().__init__(SETTINGS)
        self.in_flight = self.most = 0
        self.stats = {"preemptions_total": 5.0, "kv_cache_usage_now": 0.1}

    def _generate(
        self, request: Request, clock: TokenClock
    ) -> RawOutput:  # pragma: no cover - not used under load
        raise NotImplementedError

    async def stream(self, request: Request, clock: TokenClock) -> RawOutput:
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        self.stats["kv_cache_usage_now"] = max(self.stats["kv_cache_usage_now"], 0.1 * self.in_flight)
        try:
            if request.prompt_ids[0] == 0:
                raise RuntimeError("engine said no")
            for _ in range(request.max_new_tokens):
                await asyncio.sleep(STEP_S)
                clock.tick(1)
        finally:
            self.in_flight -= 1
        self.stats["preemptions_total"] += 1
        return RawOutput(
            token_ids=list(range(request.max_new_tokens)), text="", cached_tokens=len(request.prompt_ids) // 2
        )

    def load_stats(self) -> dict[str, float]:
        return dict(self.stats)


class Queued(Backend):
    """The default stream: one request at a time behind a queue."""

    name = "queued"

    def _generate(self, request: Request, clock: TokenClock) -> RawOutput:
        for _ in range(request.max_new_tokens):
            time.sleep(STEP_S)
            clock.tick(1)
        return RawOutput(token_ids=[1] * request.max_new_tokens, text="")


def req(tokens: int = 4, prompt: int = 1) -> Request:
    return Request(prompt_ids=[prompt] * 8, max_new_tokens=tokens, ignore_eos=True)


def test_closed_loop_keeps_exactly_c_requests_in_flight_and_runs_turns_in_order():
    backend = Batching()
    sessions = [[req(), req(), req()] for _ in range(6)]
    outs, facts = run_level(backend, sessions, LoadSettings(concurrency=3))
    assert backend.most == 3
    for session in outs:
        assert all(o.started and o.error is None for o in session)
        for a, b in zip(session, session[1:], strict=False):
            assert b.submit_s >= a.finish_s  # a user's next turn only after the previous one finished
        for o in session:
            assert len(o.token_times_s) == 4 and o.first_token_s == o.token_times_s[0]
            assert o.submit_s < o.first_token_s <= o.finish_s
    assert facts.wall_s > 0 and facts.preemptions == 18  # a counter: its rise over the level
    assert facts.kv_cache_usage_peak == pytest.approx(0.3)  # a gauge: its peak


def test_a_failed_request_is_an_outcome_and_the_level_goes_on():
    outs, _ = run_level(Batching(), [[req(prompt=0)], [req()]], LoadSettings(concurrency=2))
    assert outs[0][0].error == "RuntimeError: engine said no" and outs[0][0].finish_s is not None
    assert outs[1][0].error is None and outs[1][0].output is not None


class Hangs(Batching):
    """A request whose prompt starts with 2 never answers; one starting with 3 raises its own TimeoutError.
    Its ``--request-timeout`` is 0.3 s; a cancelled stream is counted as an abort (what an engine frees)."""

    def __init__(self) -> None:
        super().__init__()
        self.settings = replace(SETTINGS, request_timeout_s=0.3)
        self.aborted = 0

    async def stream(self, request: Request, clock: TokenClock) -> RawOutput:
        if request.prompt_ids[0] == 3:
            raise TimeoutError("socket read")
        if request.prompt_ids[0] != 2:
            return await super().stream(request, clock)
        clock.tick(1)  # one token, then nothing
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.aborted += 1
            raise
        raise AssertionError("unreachable")


def test_a_hung_request_ends_at_the_request_timeout_and_the_level_goes_on():
    backend = Hangs()
    sessions = [[req(prompt=2), req()], [req(), req(), req()], [req(prompt=3)]]
    started = time.perf_counter()
    outs, facts = run_level(backend, sessions, LoadSettings(concurrency=2))
    hung = outs[0][0]
    assert (
        hung.error
        == "TimeoutError: no answer within 0.3 s (--request-timeout: the whole request, from submit to its "
        "last token)"
        and backend.aborted == 1
    )
    assert 0.3 <= hung.finish_s - hung.submit_s < 0.3 + 0.2 and len(hung.token_times_s) == 1
    assert outs[0][1].error is None and outs[0][1].submit_s >= hung.finish_s  # the session went on after it
    assert all(o.error is None and len(o.token_times_s) == 4 for o in outs[1])
    assert (
        outs[2][0].error == "TimeoutError: socket read"
    )  # the backend's own, not taken for --request-timeout
    assert time.perf_counter() - started < 2.0 and facts.wall_s < 2.0


def test_open_loop_arrivals_follow_the_rate_however_many_are_in_flight():
    backend = Batching()
    sessions = [[req(tokens=25)] for _ in range(12)]  # each takes ~0.1 s: far longer than the gaps
    outs, _ = run_level(backend, sessions, LoadSettings(rate_rps=100.0, seed=1))
    submits = sorted(s[0].submit_s for s in outs)
    mean_gap = (submits[-1] - submits[0]) / (len(submits) - 1)
    assert 0.002 < mean_gap < 0.04  # 10 ms on average (exponential gaps, 11 of them)
    assert backend.most > 3  # arrivals did not wait for earlier requests


def test_seconds_stops_starting_requests():
    sessions = [[req(tokens=10)] for _ in range(40)]  # 40 ms each, one at a time: 1.6 s in all
    outs, facts = run_level(Batching(), sessions, LoadSettings(concurrency=1, seconds=0.2))
    started = [s[0] for s in outs if s[0].started]
    assert 2 <= len(started) < 40 and all(not s[0].started for s in outs[len(started) :])
    assert max(o.submit_s for o in started) < 0.2 + 0.05


def test_the_default_serves_one_request_at_a_time_and_says_how_long_each_waited():
    outs, _ = run_level(Queued(SETTINGS), [[req(tokens=5)] for _ in range(4)], LoadSettings(concurrency=4))
    served = sorted((o[0] for o in outs), key=lambda o: o.first_token_s)
    for a, b in zip(served, served[1:], strict=False):
        assert b.first_token_s >= a.finish_s - 1e-3  # no overlap: the queue serves one at a time
    waits = sorted(o.queue_ms for o in served)
    assert waits[0] < 10 and waits[-1] >= 3 * 5 * STEP_S * 1e3 * 0.9  # the last waited for three others


def test_token_times_spread_a_tick_of_several_tokens():
    clock = TokenClock(lambda: None)
    clock.stamps = [(10.0, 1), (10.5, 3)]
    assert token_times(clock, origin=9.0) == [1.0, 1.5, 1.5, 1.5]


class OverHttp(Batching):
    """A client of a server that takes text only (no client processes): this process is its client."""

    capabilities = Capabilities(load=True, batches_requests=True, over_http=True)

    async def stream(self, request: Request, clock: TokenClock) -> RawOutput:
        end = time.process_time() + 0.05  # the client's own work: CPU time, not waiting
        while time.process_time() < end:
            pass
        return await super().stream(request, clock)


def test_a_level_driven_from_this_process_over_http_records_its_client_cpu_and_an_engine_does_not():
    """Every level of an HTTP backend records its client's CPU share, also where the client is this process
    (hf-server: text prompts through the openai package); an in-process engine's level does not (its process
    is the engine too, so the share would not be a client's)."""
    sessions = [[req(prompt=2)] for _ in range(2)]
    _, facts = run_level(OverHttp(), sessions, LoadSettings(concurrency=2))
    share = facts.client_busy_max
    assert facts.client_procs == 0 and facts.client_cpu_share == [round(share, 3)]
    assert share > 0 and facts.client_limited == (share > 0.5)
    _, engine = run_level(Batching(), sessions, LoadSettings(concurrency=2))
    assert engine.client_busy_max is None and engine.client_cpu_share is None
