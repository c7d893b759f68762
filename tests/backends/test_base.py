"""The one timing loop: the caller's clock (one TTFT for all), the engine's figures beside it, the
differential, and the cache reset rule."""

from __future__ import annotations

import time

import pytest

from llm_call_anatomy.backends.base import Backend, TokenClock
from llm_call_anatomy.contract.adapter import BackendSettings, RawOutput, Request

SETTINGS = BackendSettings(model_path="unused", model_label="unused")


class Scripted(Backend):
    """Sleeps 10 ms per token; reports engine timing or ticks the clock as told."""

    def __init__(self, *, engine: bool = False, ticks: bool = False, differential: bool = False) -> None:
        super().__init__(SETTINGS)
        self.engine, self.ticks, self.differential_timing = engine, ticks, differential
        self.resets = 0
        self.calls: list[int] = []

    def reset_cache(self) -> None:
        self.resets += 1

    def _generate(self, request: Request, clock: TokenClock) -> RawOutput:
        self.calls.append(request.max_new_tokens)
        for _ in range(request.max_new_tokens):
            time.sleep(0.01)
            if self.ticks:
                clock.tick()
        out = RawOutput(token_ids=list(range(request.max_new_tokens)), text="")
        if self.engine:
            out.engine_ttft_ms, out.engine_decode_ms_per_token = 1.5, 0.5
        return out


def test_the_callers_clock_gives_ttft_and_the_engines_figures_stay_beside_it():
    b = Scripted(engine=True, ticks=True)
    b.clock_source = "engine-step"
    r = b.generate(Request([1], max_new_tokens=4))
    assert r.timing_source == "engine-step" and 9 <= r.ttft_ms < 30 and 9 <= r.decode_ms_per_token < 30
    assert (r.engine_ttft_ms, r.engine_decode_ms_per_token) == (1.5, 0.5)
    assert r.e2e_ms >= 40


def test_engine_figures_never_stand_in_for_the_common_ttft():
    r = Scripted(engine=True).generate(Request([1], max_new_tokens=2))
    assert (r.ttft_ms, r.decode_ms_per_token, r.timing_source) == (None, None, "e2e-only")
    assert r.engine_ttft_ms == 1.5


def test_clock_ticks_give_ttft_and_decode_over_the_later_tokens():
    b = Scripted(ticks=True)
    b.clock_source = "cuda-sync"
    r = b.generate(Request([1], max_new_tokens=5))
    assert r.timing_source == "cuda-sync"
    assert 9 <= r.ttft_ms < 30 and 9 <= r.decode_ms_per_token < 30
    assert r.ttft_ms + 4 * r.decode_ms_per_token <= r.e2e_ms + 1


def test_differential_times_a_one_token_probe():
    b = Scripted(differential=True)
    r = b.generate(Request([1], max_new_tokens=5, top_logprobs=3))
    assert b.calls == [5, 1] and r.timing_source == "max_tokens-differential"
    assert 9 <= r.ttft_ms < 30 and 9 <= r.decode_ms_per_token < 30


def test_no_timing_at_all_is_said_not_invented():
    r = Scripted().generate(Request([1], max_new_tokens=2))
    assert (r.ttft_ms, r.decode_ms_per_token, r.timing_source) == (None, None, "e2e-only")


def test_cache_is_reset_unless_the_request_may_reuse_a_prefix():
    b = Scripted(engine=True)
    assert b.generate(Request([1], max_new_tokens=1)).cache_state == "reset-before-request"
    assert b.resets == 1
    assert b.generate(Request([1], max_new_tokens=1, reuse_prefix=True)).cache_state == "reuse-allowed"
    assert b.resets == 1


def test_a_backend_without_direct_engine_calls_says_so_and_the_benchmarks_skip_it():
    """The optional hooks of benchmarks/: absent by default (None), the calls refuse, each benchmark writes
    a skipped row."""
    from benchmarks import load_ceiling, overhead

    b = Scripted()
    assert b.raw_call is None and b.batch_call is None and b.no_batch_call
    with pytest.raises(NotImplementedError, match="no raw engine call"):
        b.raw_generate_timed([1, 2], 4)
    with pytest.raises(NotImplementedError, match=b.no_batch_call):
        b.engine_batch([[1, 2]], Request([], max_new_tokens=4))
    skipped = "no raw engine call defined for this backend"
    assert overhead.measure(b, {2: [1, 2]}) == [{"backend": "base", "skipped": skipped}]
    assert b.calls == []  # skipped before anything ran
    load_ceiling.child_hook(b, None)  # a study's hook on such a backend does nothing (no file written)


def test_only_backends_whose_raw_call_is_their_own_path_declare_one() -> None:
    """Benchmark 1 compares the adapter with the engine's own call: hf-graphs' would be hf's eager loop (not
    its compiled static-cache path), and hf-cb's requests go through the manager, so both skip it."""
    from llm_call_anatomy import backends

    assert (
        backends.resolve("hf").raw_call
        and backends.resolve("vllm").raw_call
        and backends.resolve("sglang").raw_call
    )
    assert backends.resolve("hf-graphs").raw_call is None and backends.resolve("hf-cb").raw_call is None


class Detokenizing(Scripted):
    """Ticks two tokens, then decodes them inside a span the clock times (``TokenClock.span``)."""

    def _generate(self, request: Request, clock: TokenClock) -> RawOutput:
        for _ in range(2):
            time.sleep(0.005)
            clock.tick()
        with clock.span("detokenize"):
            time.sleep(0.01)
        return RawOutput(token_ids=[1, 2], text="ab")


def test_the_clock_times_an_adapters_span_and_the_last_token():
    r = Detokenizing().generate(Request([1], max_new_tokens=2))
    assert 9 <= r.spans_ms["detokenize"] < 40
    assert r.ttft_ms <= r.last_token_ms <= r.e2e_ms - r.spans_ms["detokenize"] + 1e-6


def test_no_tick_no_last_token_and_no_span_no_figure():
    r = Scripted().generate(Request([1], max_new_tokens=1))
    assert r.last_token_ms is None and r.spans_ms == {}
