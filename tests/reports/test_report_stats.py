"""Medians with spread (reports/stats.py) and number formatting (reports/fmt.py)."""

from __future__ import annotations

import math

import pandas as pd

from reports import fmt
from reports.stats import Stat, agg, spread, stat_of


def test_spread_drops_missing_and_uses_linear_quartiles():
    s = spread([4, None, 1, float("nan"), 3, 2])
    assert (s.median, s.q1, s.q3, s.lo, s.hi, s.n) == (2.5, 1.75, 3.25, 1.0, 4.0, 4)


def test_spread_of_nothing_is_empty_not_zero():
    s = spread([None, float("nan")])
    assert s.n == 0 and s.median is None and not s.ok


def test_agg_groups_in_order_of_appearance():
    df = pd.DataFrame({"b": ["y", "x", "y", "x", "y"], "v": [1.0, 10.0, 3.0, None, 2.0]})
    out = agg(df, ["b"], "v", "t")
    assert list(out["b"]) == ["y", "x"]
    y = stat_of(out.iloc[0], "t")
    assert (y.median, y.q1, y.q3, y.n) == (2.0, 1.5, 2.5, 3)
    assert stat_of(out.iloc[1], "t").n == 1


def test_formatting():
    assert fmt.n(5549) == "5,549"
    assert fmt.n(28.34) == "28.3"
    assert fmt.n(2.641) == "2.64"
    assert fmt.n(None) == "–" and fmt.n(math.nan) == "–"
    assert fmt.times(5.554) == "5.6×" and fmt.times(494.2) == "494×"
    assert fmt.pct(0.164) == "16%"
    assert fmt.stat(Stat(28.3, 27.1, 29.0, 27, 30, 3), "ms") == "28.3 ms [27.1–29.0] n=3"
    assert fmt.stat(Stat(5.0, 5.0, 5.0, 5, 5, 1)) == "5 (n=1)"
    assert fmt.stat(Stat(2.5, 2.0, 3.0, 2, 3, 4)) == "2.50 [2.00–3.00] n=4"
    assert fmt.n(0.01234) == "0.0123"
    assert fmt.token("\n") == "\\n" and fmt.token(" im") == "␣im" and fmt.token("<think>") == "<think>"
