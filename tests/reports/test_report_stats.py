"""Medians with spread (reports/stats.py) and number formatting (reports/fmt.py)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from llm_call_anatomy.reports import fmt
from llm_call_anatomy.reports.stats import Stat, agg, spread, stat_of


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


def test_over_starts_separates_within_from_across():
    from llm_call_anatomy.reports.stats import over_starts

    s = over_starts([10, 11, 12, 20, 21, 22], ["a", "a", "a", "b", "b", "b"])
    assert (s.median, s.starts, s.n, s.per_start) == (16.0, 2, 6, (11.0, 21.0))
    assert s.across == pytest.approx(5 / 16)  # half the range of the start medians, relative
    assert s.within == pytest.approx(((0.5 / 11) + (0.5 / 21)) / 2)  # half-IQR relative, median over starts
    one = over_starts([1, 2, 3], [0, 0, 0])
    assert one.across is None and one.noise == pytest.approx(0.5 / 2)
    assert over_starts([None], [0]).median is None


def test_rank_names_a_winner_only_beyond_both_spreads():
    from llm_call_anatomy.reports.stats import StartStat, rank

    fast, slow = StartStat(10.0, 0.01, 0.02, 2, 10), StartStat(12.0, 0.01, 0.02, 2, 10)
    assert rank({"slow": slow, "fast": fast}).winner == "fast"  # gap 20% > 2% within, 4% across
    shaky = StartStat(12.0, 0.01, 0.25, 2, 10)
    r = rank({"slow": shaky, "fast": fast})
    assert r.winner is None and r.noise == 0.25 and r.margin == pytest.approx(0.2)
    lone = rank({"slow": StartStat(12.0, 0.01, None, 1, 5), "fast": fast})
    assert lone.winner is None and lone.one_start == ("slow",)
    assert rank({"slow": slow, "fast": fast}, higher=True).order == ["slow", "fast"]


def test_rank_margin_is_the_larger_over_the_smaller_either_way():
    """One definition of the gap: 12 against 10 is 20% whether lower (10 wins) or higher (12) is better."""
    from llm_call_anatomy.reports.stats import StartStat, rank

    fast, slow = StartStat(10.0, 0.01, 0.02, 2, 10), StartStat(12.0, 0.01, 0.02, 2, 10)
    assert rank({"a": slow, "b": fast}).margin == pytest.approx(0.2)
    assert rank({"a": slow, "b": fast}, higher=True).margin == pytest.approx(0.2)


def test_verdict_words_each_outcome_of_the_rule():
    from llm_call_anatomy.reports.stats import StartStat, rank, verdict

    fast, slow = StartStat(10.0, 0.01, 0.02, 2, 10), StartStat(12.0, 0.01, 0.02, 2, 10)
    assert verdict(rank({"fast": fast}), "x") == (None, "one backend: nothing to choose")
    assert verdict(rank({"slow": slow, "fast": fast}), "x") == ("fast", "by 20% over slow (noise ±2.0%)")
    lone = verdict(rank({"slow": StartStat(12.0, 0.01, None, 1, 5), "fast": fast}), "the noise")
    assert lone == (
        None,
        "fast leads by 20% over slow, beyond the noise; not decided: one engine start of slow, "
        "so the spread across starts is unmeasured",
    )
    shaky = verdict(rank({"slow": StartStat(12.0, 0.01, 0.25, 2, 10), "fast": fast}), "x")
    assert shaky == (
        None,
        "within noise (gap to slow 20%: the gap is inside the spread between engine starts (50%))",
    )
