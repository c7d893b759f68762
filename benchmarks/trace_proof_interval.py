"""How far a percentile's gap between the harness and the benches moves when the window's requests are drawn
again: the trace proof's interval (``benchmarks/trace_proof_table.py``).

A replay of the proof's window has a few dozen requests, so its p90 is the latency of three or four of them,
and two bench runs that agree on most requests can still differ there by more than the harness does: one pair
of bench runs is a thin measure of that noise. This module resamples the requests instead. Every replay
served the same requests in the same order, so a resample draws request indices with replacement (the same
draw for the harness and both bench runs: a slow request is slow in all three) and computes, on that draw,
the harness's percentile less the mean of the two benches'; the interval is the middle 95 % of those gaps
over :data:`RESAMPLES` draws from a fixed seed. An interval that holds 0 says the gap could be which requests
the window happened to hold; one that does not says the harness's figure differs beyond that.
"""

from __future__ import annotations

from typing import Any

import numpy as np

# the proof's percentile figures: a replay row's key -> (its per-request values' key, the percentile)
PERCENTILES = {"ttft_p50_ms": ("ttfts_ms", 50), "ttft_p90_ms": ("ttfts_ms", 90)}
PERCENTILES |= {"tpot_p50_ms": ("tpots_ms", 50), "tpot_p90_ms": ("tpots_ms", 90)}
RESAMPLES = 4000
SEED = 20261207
LEVEL = 0.95


def percentile_gap_interval(
    harness: list[float | None], bench_1: list[float | None], bench_2: list[float | None], q: float
) -> tuple[float, float] | None:
    """The 95 % interval of (harness's q-th percentile - the mean of the benches') over requests drawn
    again, the same draw for the three; requests failed in any replay left out (None: fewer than 10 left)."""
    rows = [
        (h, a, b)
        for h, a, b in zip(harness, bench_1, bench_2, strict=True)
        if h is not None and a is not None and b is not None
    ]
    if len(rows) < 10:
        return None
    values = np.array(rows, dtype=float)  # requests x (harness, bench 1, bench 2)
    draws = np.random.default_rng(SEED).integers(0, len(rows), size=(RESAMPLES, len(rows)))
    per = np.percentile(values[draws], q, axis=1)  # draws x 3
    gaps = per[:, 0] - (per[:, 1] + per[:, 2]) / 2
    tail = (1 - LEVEL) / 2 * 100
    lo, hi = np.percentile(gaps, [tail, 100 - tail])
    return float(lo), float(hi)


def percentile_intervals(harness: dict[str, Any], bench_1: dict[str, Any], bench_2: dict[str, Any]) -> dict:
    """Each percentile figure of :data:`PERCENTILES` -> its interval, from three replay rows."""
    return {
        key: percentile_gap_interval(harness[each], bench_1[each], bench_2[each], q)
        for key, (each, q) in PERCENTILES.items()
    }


def interval_cell(line: dict[str, Any], digits: int) -> str:
    """An agreement line's interval as the table shows it: ``-3.1 to 18.4 (holds 0)``; ``-``: none."""
    iv = line.get("interval_requests_drawn_again")
    if not iv:
        return "-"
    lo, hi = iv
    return f"{lo:,.{digits}f} to {hi:,.{digits}f} ({'holds 0' if lo <= 0 <= hi else '0 outside'})"
