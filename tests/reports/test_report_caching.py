"""workloads.load.report.caching (what prefix caching buys): tok/s on ÷ off at the levels both runs share,
marked as within the spread where the two levels' bootstrap intervals overlap (the S=0 control on the H200
read 2.19 at an open-loop level of 33 requests), never where they are apart, and not marked at all where a
side has no interval or the two ran other requests."""

from __future__ import annotations

import pandas as pd
import pytest

from workloads.load.report.caching import caching_ratios
from workloads.load.report.capacity_tables import caching_table


def _level(backend: str, case: str, tps: float, lo: float | None, hi: float | None, mix: str = "m") -> dict:
    return {
        "backend": backend,
        "workload": "load-fixed",
        "mode": "S=0",
        "case": case,
        "mix": mix,
        "output_tps": tps,
        "output_tps_lo": lo,
        "output_tps_hi": hi,
        "ttft_p50": 100.0,
    }


@pytest.mark.parametrize(
    ("off", "within", "cell"),
    [
        ((690.0, 600.0, 760.0), True, "2.00 (within the spread)"),  # on 1,380 [700, 1,500] reaches 760
        ((690.0, 600.0, 680.0), False, "2.00"),  # apart: a difference beyond the spread
        ((690.0, None, None), None, "2.00"),  # no interval on one side: nothing to say either way
    ],
)
def test_a_tok_s_ratio_is_marked_only_where_the_intervals_overlap(off, within, cell) -> None:
    steady = pd.DataFrame([_level("on", "rate=32", 1380.0, 700.0, 1500.0), _level("off", "rate=32", *off)])
    ratios = caching_ratios(steady, pd.DataFrame(), {"on": True, "off": False}, {"on": "vllm", "off": "vllm"})
    (row,) = ratios.to_dict("records")
    assert row["tps_ratio"] == pytest.approx(2.0) and row["tps_within_spread"] is within
    assert caching_table(ratios).rows[0][3] == cell


def test_levels_of_other_requests_give_no_ratio_and_no_mark() -> None:
    steady = pd.DataFrame(
        [_level("on", "C=8", 900.0, 800.0, 1000.0), _level("off", "C=8", 900.0, 800.0, 1000.0, mix="other")]
    )
    ratios = caching_ratios(steady, pd.DataFrame(), {"on": True, "off": False}, {"on": "vllm", "off": "vllm"})
    (row,) = ratios.to_dict("records")
    assert row["tps_within_spread"] is None and caching_table(ratios).rows[0][3] == "other mix"


def _capacity(backend: str, value: float | None, bound: str, next_up: float | None) -> dict:
    return {
        "backend": backend,
        "workload": "load-sessions",
        "mode": "sessions",
        "loop": "open",
        "target": "chat",
        "value": value,
        "bound": bound,
        "next_up": next_up,
        "not_run": [],
        "rate_unit": "sessions/s",
    }


@pytest.mark.parametrize(
    ("on", "off", "cell"),
    [
        # the H200's vLLM sessions, chat, open loop: >= 32 sessions/s on, none (missed at 4) off: read '–'
        ((32.0, "floor", None), (None, "none", 4.0), "> 8.00 (off: none, missed at 4 sessions/s)"),
        ((16.0, "bracket", 32.0), (None, "none", 4.0), "> 4.00 (off: none, missed at 4 sessions/s)"),
        ((None, "none", 8.0), (16.0, "bracket", 32.0), "< 0.50 (on: none, missed at 8 sessions/s)"),
        (
            (None, "none", 8.0),
            (None, "none", 4.0),
            "– (neither met it: missed at 8 sessions/s on, 4 sessions/s off)",
        ),
    ],
)
def test_a_side_that_met_the_target_at_no_level_bounds_the_capacity_ratio(on, off, cell) -> None:
    caps = pd.DataFrame([_capacity("on", *on), _capacity("off", *off)])
    steady = pd.DataFrame(
        [_level("on", "C=8", 900.0, 800.0, 1000.0), _level("off", "C=8", 800.0, 700.0, 900.0)]
    )
    ratios = caching_ratios(steady, caps, {"on": True, "off": False}, {"on": "vllm", "off": "vllm"})
    (capacity_row,) = [r for r in caching_table(ratios).rows if r[2] == "open · chat"]
    assert capacity_row[5] == cell
