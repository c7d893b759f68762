"""reports.analysis.caching (what prefix caching buys): tok/s on ÷ off at the levels both runs share, marked
as within the spread where the two levels' bootstrap intervals overlap (the S=0 control on the H200 read
2.19 at an open-loop level of 33 requests), never where they are apart, and not marked at all where a side
has no interval or the two ran other requests."""

from __future__ import annotations

import pandas as pd
import pytest

from reports.analysis.caching import caching_ratios
from reports.views.capacity import caching_table


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
