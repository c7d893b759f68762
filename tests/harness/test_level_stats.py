"""A load level's steady state (contract.level_stats) from hand-made request rows whose figures are known:
the first wave apart, the window, throughput over it, the share with C in flight, and the bootstrap."""

from __future__ import annotations

import math

import pytest

from llm_call_anatomy.contract.level_stats import level_stats


def row(submit, ttft_ms, tokens=4, gap=0.01, error=None, prompt=100):
    first = submit + ttft_ms / 1e3
    times = [first + i * gap for i in range(tokens)]
    return {
        "submit_s": submit,
        "first_token_s": first,
        "finish_s": times[-1],
        "token_times_s": times,
        "ttft_ms": ttft_ms,
        "decode_ms_per_token": gap * 1e3,
        "e2e_ms": (times[-1] - submit) * 1e3,
        "output_tokens": tokens,
        "prompt_tokens": prompt,
        "error": error,
    }


def closed_loop(c=2, waves=6, service=0.1, gap=0.01):
    """C workers, each running requests back to back: the first wave (cold, TTFT 300 ms) then steady (20
    ms)."""
    rows = []
    for _ in range(c):
        t = 0.0
        for k in range(waves):
            ttft = 300.0 if k == 0 else 20.0
            r = row(t, ttft, gap=gap)
            rows.append(r)
            t = r["finish_s"]
    return rows


def test_the_first_wave_is_the_first_c_requests_and_is_kept_apart():
    rows = closed_loop()
    s = level_stats(rows, 2)
    assert len(s.first_wave) == 2 and all(r["ttft_ms"] == 300.0 for r in s.first_wave)
    assert (
        len(s.steady) == 10 and s.samples()["ttft"] == [20.0] * 10
    )  # the cold burst is not in the percentiles
    t0 = min(r["submit_s"] for r in rows if r["ttft_ms"] == 20.0)
    assert s.window == (pytest.approx(t0), pytest.approx(max(r["submit_s"] for r in rows)))
    # both workers are busy from the first steady submit to the last submit
    assert s.in_flight_share == pytest.approx(1.0)
    assert s.samples()["itl"] == pytest.approx([10.0] * 30)


def test_throughput_counts_the_tokens_that_arrived_in_the_window():
    rows = closed_loop()
    s = level_stats(rows, 2)
    t0, t1 = s.window
    arrived = sum(1 for r in rows for t in r["token_times_s"] if t0 <= t <= t1)
    assert s.output_tps == pytest.approx(arrived / (t1 - t0)) and s.input_tps == pytest.approx(
        10 * 100 / (t1 - t0)
    )


def test_a_gap_in_flight_shows_in_the_share():
    # worker A runs back to back for 2 s; worker B thinks 1 s after its first request, then does the same:
    # both are in flight for about the second half of the window only
    def back_to_back(start, until):
        out, t = [], start
        while t < until:
            out.append(row(t, 20.0))
            t = out[-1]["finish_s"]
        return out

    rows = back_to_back(0.0, 2.0) + [row(0.0, 20.0)] + back_to_back(1.05, 2.0)
    s = level_stats(rows, 2)
    t0, t1 = s.window
    assert s.in_flight_share == pytest.approx((t1 - 1.05) / (t1 - t0), abs=0.03)
    assert level_stats(back_to_back(0.0, 2.0) + back_to_back(0.0, 2.0), 2).in_flight_share == pytest.approx(
        1.0
    )


def test_an_open_loop_has_no_first_wave_and_failures_are_counted():
    rows = [row(0.1 * i, 20.0, error="RuntimeError: no" if i == 3 else None) for i in range(10)]
    s = level_stats(rows, None)
    assert s.first_wave == [] and len(s.steady) == 10 and s.failed == 1 and s.in_flight_share is None
    assert len(s.samples()["ttft"]) == 9


def test_a_level_all_in_its_first_wave_has_no_steady_state():
    s = level_stats([row(0.0, 10.0), row(0.0, 12.0)], 4)
    assert s.window is None and s.output_tps is None and s.steady == []


def test_the_bootstrap_interval_brackets_the_figure_and_is_seeded():
    rows = [row(0.05 * i, 20.0 + (i % 7) * 5) for i in range(60)]
    s = level_stats(rows, None)

    def ttft_p90(rs, _span):
        import numpy as np

        return float(np.percentile([r["ttft_ms"] for r in rs], 90)) if rs else None

    lo, hi = s.interval(ttft_p90)
    whole = ttft_p90(s.steady, 0)
    assert lo <= whole <= hi and lo < hi and s.interval(ttft_p90) == (lo, hi)
    tps = s.tps_interval()
    assert tps[0] <= s.output_tps <= tps[1] and tps[0] < tps[1] and not math.isnan(tps[0])
    assert s.tps_interval() == tps  # seeded


def test_a_window_shorter_than_one_request_has_no_throughput():
    """The CPU demo's 4-user level: the steady window (first submit after the wave to the last submit)
    lasted a few milliseconds while a request took seconds, and read 15,001 tok/s with an interval of
    [40,003-120,008] that did not hold it. Such a window has latencies but no steady throughput."""
    # C=2, three requests each of 1 s; the third submits 5 ms after the second wave's first
    rows = [
        row(0.0, 100.0, tokens=90),
        row(0.0, 100.0, tokens=90),
        row(1.0, 100.0, tokens=90),
        row(1.005, 100.0, tokens=90),
    ]
    s = level_stats(rows, 2)
    assert s.window is not None and s.window_s < 0.1
    assert s.output_tps is None and s.tps_interval() is None and "shorter than" in s.no_steady
    assert len(s.samples()["ttft"]) == 2  # its latencies still count
    long = level_stats(closed_loop(waves=12), 2)
    assert long.no_steady is None and long.output_tps > 0


def test_two_engine_starts_of_one_level_are_each_their_own_steady_state():
    """Each start ran the level on its own clock (submit_s from 0): pooled into one window their tokens
    would count twice over one start's seconds. Over the starts: throughput the median of the starts',
    its interval the envelope of theirs, the latency samples and counts pooled."""
    from llm_call_anatomy.contract.level_stats import over_starts

    slow, fast = closed_loop(gap=0.02), closed_loop(gap=0.01)
    one, other = level_stats(slow, 2), level_stats(fast, 2)
    both = over_starts([one, other])
    assert one.output_tps < other.output_tps
    assert both.output_tps == pytest.approx((one.output_tps + other.output_tps) / 2)
    (lo, hi), (lo1, _), (_, hi2) = both.tps_interval(), one.tps_interval(), other.tps_interval()
    assert lo == lo1 and hi == hi2  # the envelope: every start's interval inside it
    assert len(both.steady) == len(one.steady) + len(other.steady) and both.requests == 24
    assert both.samples()["ttft"] == [20.0] * 20 and len(both.first_wave) == 4
    assert over_starts([one]) is one
    # steady requests a second ($ per request divides by it): the median of the starts', not "no window"
    assert both.window is None and one.requests_per_s and other.requests_per_s
    assert both.requests_per_s == pytest.approx((one.requests_per_s + other.requests_per_s) / 2)
