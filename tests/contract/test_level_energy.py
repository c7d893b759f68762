"""A level's energy over its steady window (contract/level_energy.py), against hand computations: a counter
series read by linear interpolation at the window's ends, J per 1,000 output tokens, the idle floor and the
share above it, over one engine start and two."""

from __future__ import annotations

import pytest

from llm_call_anatomy.contract.level_energy import energy_at, energy_between, window_energy
from llm_call_anatomy.contract.level_facts import LevelFacts
from llm_call_anatomy.contract.level_stats import LevelStats

# 70 W idle for the second before the origin, then 300 W for 20 s: J since the first pair
SERIES = [[-1.0, 0.0], [0.0, 70.0], [10.0, 3070.0], [20.0, 6070.0]]


def steady(t0: float, t1: float, tokens: int) -> LevelStats:
    s = LevelStats(concurrency=4, requests=10, failed=0, window=(t0, t1))
    s.arrivals = [t0 + (t1 - t0) * k / tokens for k in range(tokens)]
    s.output_tps = tokens / (t1 - t0)
    return s


def test_the_counter_is_read_linearly_between_its_pairs():
    assert energy_at(SERIES, 12.0) == pytest.approx(3070.0 + 0.2 * 3000.0)  # 3670 J
    assert energy_at(SERIES, -0.5) == pytest.approx(35.0)
    assert energy_at(SERIES, 20.5) is None and energy_at(SERIES, -2.0) is None  # outside: no guess
    assert energy_between(SERIES, 2.0, 12.0) == pytest.approx(3670.0 - 670.0)  # 300 W x 10 s
    assert energy_between(SERIES, 5.0, 5.0) is None and energy_between(None, 0.0, 1.0) is None


def test_j_per_1k_output_tokens_over_the_window_the_idle_floor_and_the_share_above_it():
    """Window 2-12 s: 3,000 J; 1,500 output tokens arrived in it: 2,000 J per 1,000; idle 70 W x 10 s = 700 J
    of the 3,000: 76.7 % above the floor."""
    facts = LevelFacts(gpu_energy_series=SERIES, gpu_idle_w=70.0, gpu_energy_j=6070.0)
    e = window_energy([(steady(2.0, 12.0, 1500), facts)])
    assert (e.joules, e.tokens, e.seconds) == (pytest.approx(3000.0), 1500, pytest.approx(10.0))
    assert e.j_per_1k == pytest.approx(2000.0)
    assert e.idle_w == pytest.approx(70.0) and e.above_idle_share == pytest.approx(1 - 700 / 3000)


def test_two_starts_add_their_windows_and_weigh_their_floors_by_time():
    """Start A: 2-12 s, 3,000 J, 1,500 tokens, floor 70 W; start B: 0-5 s of its own clock, 1,500 J, 500
    tokens, floor 100 W: 4,500 J ÷ 2,000 tokens = 2,250 J per 1,000; floor (700 + 500) J ÷ 15 s = 80 W."""
    b = LevelFacts(gpu_energy_series=SERIES, gpu_idle_w=100.0)
    e = window_energy(
        [
            (steady(2.0, 12.0, 1500), LevelFacts(gpu_energy_series=SERIES, gpu_idle_w=70.0)),
            (steady(0, 5, 500), b),
        ]
    )
    assert e.j_per_1k == pytest.approx(2250.0) and e.idle_w == pytest.approx(80.0)
    assert e.above_idle_share == pytest.approx(1 - 1200 / 4500)


def test_no_series_no_steady_throughput_or_a_window_past_the_series_gives_no_figure():
    old = LevelFacts(gpu_energy_j=6070.0)  # a run from before the series: the whole level's energy only
    assert window_energy([(steady(2.0, 12.0, 1500), old)]) is None
    short = steady(2.0, 12.0, 1500)
    short.output_tps = None  # a window too short for a steady throughput
    assert window_energy([(short, LevelFacts(gpu_energy_series=SERIES))]) is None
    assert window_energy([(steady(2.0, 25.0, 1500), LevelFacts(gpu_energy_series=SERIES))]) is None
    with_and_without = [(steady(2, 12, 1500), LevelFacts(gpu_energy_series=SERIES)), (steady(0, 5, 500), old)]
    assert window_energy(with_and_without) is None
    no_floor = window_energy([(steady(2.0, 12.0, 1500), LevelFacts(gpu_energy_series=SERIES))])
    assert no_floor.j_per_1k == pytest.approx(2000.0) and no_floor.above_idle_share is None
