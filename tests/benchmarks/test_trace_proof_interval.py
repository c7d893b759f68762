"""The trace proof's interval (``benchmarks/trace_proof_interval.py``): a percentile's gap between the harness
and the benches over the window's requests drawn again, the same draw for the three replays."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.trace_proof_interval import interval_cell, percentile_gap_interval, percentile_intervals

RNG = np.random.default_rng(7)
BENCH = list(RNG.exponential(50.0, size=41) + 20.0)  # a window's TTFTs, ms: a long tail


def test_a_harness_that_adds_the_same_to_every_request_gets_that_gap_and_no_width():
    shifted = [x + 12.5 for x in BENCH]
    lo, hi = percentile_gap_interval(shifted, BENCH, BENCH, 90)
    assert lo == pytest.approx(12.5) and hi == pytest.approx(12.5)
    assert interval_cell({"interval_requests_drawn_again": (lo, hi)}, 1) == "12.5 to 12.5 (0 outside)"


def test_the_same_requests_in_another_order_give_an_interval_around_a_gap_of_zero():
    """The harness's TTFTs are the bench's, shuffled over the requests: the same percentile, so the gap is 0,
    but on a draw the two differ, and on a tail that is long the interval is wide and holds 0."""
    shuffled = list(np.random.default_rng(3).permutation(BENCH))
    assert np.percentile(shuffled, 90) == pytest.approx(np.percentile(BENCH, 90))
    lo, hi = percentile_gap_interval(shuffled, BENCH, BENCH, 90)
    assert lo < -5 < 5 < hi
    assert interval_cell({"interval_requests_drawn_again": (lo, hi)}, 1).endswith("(holds 0)")


def test_failed_requests_are_left_out_and_too_few_give_none():
    with_failure = [None, *BENCH[1:]]
    assert percentile_gap_interval(with_failure, BENCH, BENCH, 50) is not None
    assert percentile_gap_interval(BENCH[:9], BENCH[:9], BENCH[:9], 50) is None
    assert interval_cell({"interval_requests_drawn_again": None}, 1) == "-"


def test_every_percentile_figure_of_three_replays_gets_an_interval():
    row = {"ttfts_ms": BENCH, "tpots_ms": [x / 10 for x in BENCH]}
    got = percentile_intervals(row, row, row)
    assert set(got) == {"ttft_p50_ms", "ttft_p90_ms", "tpot_p50_ms", "tpot_p90_ms"}
    assert all(iv == (0.0, 0.0) for iv in got.values())  # three identical replays: no gap on any draw
