"""Confidence intervals for the claims' numeric tests, and the one rule that turns an interval into a verdict.

A claim with a numeric test states a band of values that count as "the claim holds" (decode
flat in N: the fitted change over the swept lengths within ±15 %). The data's 95 % interval
then decides: wholly inside the band -> holds; wholly outside -> does not hold; across an edge
-> not decided (the noise is larger than the question). Intervals come from a bootstrap over the
raw records (every repeat of every engine start, resampled within each stratum, fixed seed, so a
report rebuilt from the same records says the same), or, for counts, Wilson's score interval
and Newcombe's interval for a difference of two proportions.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

LEVEL = 0.95
RESAMPLES = 2000
SEED = 24
Z = 1.959963984540054  # the normal quantile of 0.975
INSIDE, OUTSIDE, ACROSS = "inside", "outside", "across"


def against_band(interval: tuple[float, float] | None, lo: float, hi: float) -> str | None:
    """Where ``interval`` lies against the band [lo, hi]:
    inside, outside, or across an edge (None: no interval)."""
    if interval is None:
        return None
    a, b = interval
    if lo <= a and b <= hi:
        return INSIDE
    if b < lo or a > hi:
        return OUTSIDE
    return ACROSS


def bootstrap(
    strata: Sequence[Sequence[tuple[float, float]]],
    statistic: Callable[[np.ndarray, np.ndarray], float | None],
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> tuple[float, float] | None:
    """Percentile interval of ``statistic(x, y)`` with the (x, y) pairs resampled within each stratum."""
    arrays = [np.asarray(s, dtype=float) for s in strata if len(s)]
    if not arrays:
        return None
    rng = np.random.default_rng(seed)
    values = []
    for _ in range(resamples):
        sample = np.concatenate([a[rng.integers(0, len(a), len(a))] for a in arrays])
        v = statistic(sample[:, 0], sample[:, 1])
        if v is not None and math.isfinite(v):
            values.append(v)
    if len(values) < resamples // 2:
        return None
    tail = (1 - LEVEL) / 2 * 100
    lo, hi = np.percentile(values, [tail, 100 - tail])
    return float(lo), float(hi)


def relative_change(x: np.ndarray, y: np.ndarray) -> float | None:
    """The least-squares line's change over the range of ``x``, relative to the median of ``y``."""
    if len(set(x.tolist())) < 2:
        return None
    slope = np.polyfit(x, y, 1)[0]
    med = float(np.median(y))
    return float(slope * (x.max() - x.min()) / med) if med else None


FLAT = 0.15  # "flat": a fitted change within ±15 % of the median (decode over N; TTFT below the seed's floor)


@dataclass(frozen=True)
class Flatness:
    """How flat y is in x: the fitted change over the pairs (``relative_change``), its bootstrap interval over
    the strata, and where that interval lies against ±FLAT (``against_band``)."""

    xs: np.ndarray
    ys: np.ndarray
    change: float | None
    interval: tuple[float, float] | None
    where: str | None

    @property
    def fitted(self) -> str:
        """``+3.1 %`` (never ``-0.0 %``), or ``–`` where no line was fitted."""
        return "–" if self.change is None else f"{round(self.change * 100, 1) + 0.0:+.1f} %"


def flatness(strata: Sequence[Sequence[tuple[float, float]]]) -> Flatness | None:
    """The flatness of the (x, y) pairs of ``strata`` (one stratum a value of x, resampled within), or None
    where there are no pairs."""
    pairs = [xy for stratum in strata for xy in stratum]
    if not pairs:
        return None
    xs, ys = (np.asarray(v, dtype=float) for v in zip(*pairs, strict=True))
    interval = bootstrap(strata, relative_change)
    return Flatness(xs, ys, relative_change(xs, ys), interval, against_band(interval, -FLAT, FLAT))


def ratio_of_medians(x: np.ndarray, y: np.ndarray) -> float | None:
    """median(x) / median(y) of a sample of (x, y) pairs (pairs: one record's two figures)."""
    den = float(np.median(y))
    return float(np.median(x)) / den if den else None


def wilson(k: int, n: int) -> tuple[float, float] | None:
    """Wilson's 95 % score interval for k successes in n trials."""
    if n <= 0:
        return None
    p = k / n
    centre = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
    half = Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n)) / (1 + Z * Z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def difference(k1: int, n1: int, k2: int, n2: int) -> tuple[float, float] | None:
    """Newcombe's 95 % interval for p1 - p2 (hybrid score, from the two Wilson intervals)."""
    a, b = wilson(k1, n1), wilson(k2, n2)
    if a is None or b is None:
        return None
    p1, p2 = k1 / n1, k2 / n2
    lo = p1 - p2 - math.sqrt((p1 - a[0]) ** 2 + (b[1] - p2) ** 2)
    hi = p1 - p2 + math.sqrt((a[1] - p1) ** 2 + (p2 - b[0]) ** 2)
    return lo, hi


def show(interval: tuple[float, float] | None, percent: bool = True) -> str:
    """``[-3.1 %, +4.0 %]`` (or plain numbers), for a verdict's reason."""
    if interval is None:
        return "no interval"
    if percent:
        return f"[{interval[0] * 100:+.1f} %, {interval[1] * 100:+.1f} %]"
    return f"[{interval[0]:.2f}, {interval[1]:.2f}]"
