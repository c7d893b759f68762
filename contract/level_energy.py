"""A load level's GPU energy over its steady window, and the idle floor beside it (issue 40).

    e = window_energy([(stats, facts)])  # a pair an engine start (contract.level_stats, .level_facts)
    e.j_per_1k, e.idle_w, e.above_idle_share  # None where the level's records hold no energy series

One definition each, used by the report (``workloads/load/report/capacity.py``) and its exports:

- **energy in the window** = the GPU's energy between the steady window's two ends (``LevelStats.window``:
  the first submit after the first wave to the last submit), read off the level's energy series
  (``LevelFacts.gpu_energy_series``: NVML's counter along the level, on the records' clock) by linear
  interpolation between the pairs either side of each end; none where the series does not span the window;
- **J per 1,000 output tokens (steady window)** = energy in the window ÷ the output tokens that arrived in
  the window (the tokens the steady output tok/s counts: every request's that did not fail, the first
  wave's too) × 1000: the window's mean power ÷ its steady output tok/s × 1000;
- **idle floor** (W) = the GPU's power with no request in flight, measured for about a second before the
  level's first request (``LevelFacts.gpu_idle_w``);
- **share above the idle floor** = 1 − idle floor × window length ÷ energy in the window: the part of the
  window's energy the load added to what the GPU draws doing nothing (negative where the window drew less
  than the floor measured before it: noise, or a GPU that had not settled).

Several engine starts (each with its own clock, window and series): energies, tokens and window lengths
add up over the starts, and the idle floor is their time-weighted mean (each start's floor over its
window); a start without a series leaves the level without a steady-window energy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from llm_call_anatomy.contract.level_facts import LevelFacts
from llm_call_anatomy.contract.level_stats import LevelStats
from llm_call_anatomy.contract.records import num


def energy_at(series: Sequence[Sequence[float]], t: float) -> float | None:
    """The series' energy (J) at time ``t``, linear between the pairs either side; None outside the series."""
    if len(series) < 2 or not series[0][0] <= t <= series[-1][0]:
        return None
    for (ta, ja), (tb, jb) in zip(series, series[1:], strict=False):
        if ta <= t <= tb:
            return ja if tb == ta else ja + (jb - ja) * (t - ta) / (tb - ta)
    return None


def energy_between(series: Sequence[Sequence[float]] | None, t0: float, t1: float) -> float | None:
    """The energy (J) between ``t0`` and ``t1`` on the series' clock; None where it does not span them."""
    if not series or t1 <= t0:
        return None
    a, b = energy_at(series, t0), energy_at(series, t1)
    return None if a is None or b is None else b - a


@dataclass(frozen=True)
class WindowEnergy:
    """The steady window's energy, its output tokens and length, over every start; the idle floor's power."""

    joules: float
    tokens: int
    seconds: float
    idle_w: float | None = None  # time-weighted over the starts' windows (None: a start without one)

    @property
    def j_per_1k(self) -> float | None:
        return self.joules / self.tokens * 1000 if self.tokens else None

    @property
    def above_idle_share(self) -> float | None:
        if self.idle_w is None or self.joules <= 0:
            return None
        return 1 - self.idle_w * self.seconds / self.joules


def window_energy(parts: Sequence[tuple[LevelStats, LevelFacts | None]]) -> WindowEnergy | None:
    """The level's steady-window energy from each engine start's (stats, facts); None where a start has no
    steady throughput, no series, or a series that does not span its window."""
    joules, tokens, seconds, idle_j = 0.0, 0, 0.0, 0.0
    idle_known = True
    for stats, facts in parts:
        if stats.output_tps is None or stats.window is None or facts is None:
            return None
        j = energy_between(facts.gpu_energy_series, *stats.window)
        if j is None:
            return None
        joules, tokens, seconds = joules + j, tokens + len(stats.arrivals), seconds + (stats.window_s or 0.0)
        idle = num(facts.gpu_idle_w)
        idle_known = idle_known and idle is not None
        idle_j += (idle or 0.0) * (stats.window_s or 0.0)
    if not parts or seconds <= 0:
        return None
    return WindowEnergy(joules, tokens, seconds, idle_j / seconds if idle_known else None)
