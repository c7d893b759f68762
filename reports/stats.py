"""Medians with their spread: the one way every figure in the report is summarised.

A figure is the median over repeats, shown with its interquartile range and the count ``n``
(``28.3 [27.1–29.0] n=3``). Missing values (``None``/NaN: "not reported") are dropped before
counting, never read as zero.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from llm_call_anatomy.contract.records import num as num  # the report's reading of a number, re-exported


@dataclass(frozen=True)
class Stat:
    median: float | None
    q1: float | None
    q3: float | None
    lo: float | None
    hi: float | None
    n: int

    @property
    def ok(self) -> bool:
        return self.n > 0


def _clean(values: Iterable[object]) -> list[float]:
    out = []
    for v in values:
        if v is None or isinstance(v, bool):
            continue
        try:
            f = float(v)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            continue
        if not math.isnan(f):
            out.append(f)
    return out


def spread(values: Iterable[object]) -> Stat:
    """Median, quartiles (linear interpolation), min, max and n of the non-missing values."""
    xs = _clean(values)
    if not xs:
        return Stat(None, None, None, None, None, 0)
    arr = np.asarray(xs, dtype=float)
    q1, med, q3 = np.quantile(arr, [0.25, 0.5, 0.75])
    return Stat(float(med), float(q1), float(q3), float(arr.min()), float(arr.max()), len(xs))


def agg(df: pd.DataFrame, by: Sequence[str], value: str, prefix: str | None = None) -> pd.DataFrame:
    """One row per group of ``by``: ``<prefix>_med``, ``_q1``, ``_q3``, ``_n`` of ``value``."""
    p = prefix or value
    rows = []
    for key, group in df.groupby(list(by), sort=False, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        s = spread(group[value])
        rows.append(
            {
                **dict(zip(by, key, strict=True)),
                f"{p}_med": s.median,
                f"{p}_q1": s.q1,
                f"{p}_q3": s.q3,
                f"{p}_n": s.n,
            }
        )
    return pd.DataFrame(rows, columns=[*by, f"{p}_med", f"{p}_q1", f"{p}_q3", f"{p}_n"])


def stat_of(row: pd.Series | dict, prefix: str) -> Stat:
    """Read back the ``agg`` columns of one row as a :class:`Stat` (no min/max)."""
    get = row.get if isinstance(row, dict) else row.get

    def num(key: str) -> float | None:
        v = get(f"{prefix}_{key}")
        return None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)

    n = get(f"{prefix}_n")
    return Stat(num("med"), num("q1"), num("q3"), None, None, 0 if n is None or n != n else int(n))


def ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b == 0:
        return None
    return a / b


# --- spread across engine starts -------------------------------------------------------------


@dataclass(frozen=True)
class StartStat:
    """A figure over engine starts: the median of each start's median, and two relative spreads.

    ``within``: half the interquartile range of the repeats inside a start, relative to its
    median (the median of that over starts); ``across``: half the range of the per-start medians,
    relative to the figure (None with one start: not measured, which is not zero).
    """

    median: float | None
    within: float | None
    across: float | None
    starts: int
    n: int
    per_start: tuple[float, ...] = ()

    @property
    def noise(self) -> float:
        """The larger of the two relative half-spreads (0 when neither is known)."""
        return max((x for x in (self.within, self.across) if x is not None), default=0.0)


def over_starts(values: Iterable[object], starts: Iterable[object]) -> StartStat:
    """Group ``values`` by their start label and summarise them as a :class:`StartStat`."""
    groups: dict[object, list[object]] = {}
    for v, s in zip(values, starts, strict=True):
        groups.setdefault(s, []).append(v)
    stats = [s for s in (spread(g) for g in groups.values()) if s.ok]
    if not stats:
        return StartStat(None, None, None, 0, 0)
    medians = [s.median for s in stats]
    med = float(np.median(medians))
    within = [(s.q3 - s.q1) / 2 / abs(s.median) for s in stats if s.n > 1 and s.median]  # type: ignore[operator]
    across = (max(medians) - min(medians)) / 2 / abs(med) if len(stats) > 1 and med else None  # type: ignore[type-var]
    return StartStat(
        med,
        float(np.median(within)) if within else None,
        across,
        len(stats),
        sum(s.n for s in stats),
        tuple(medians),
    )  # type: ignore[arg-type]


@dataclass(frozen=True)
class Ranking:
    """Who is best on a figure, and whether the gap to the next survives both spreads."""

    order: list[str]  # best first
    margin: float | None  # relative gap from the best to the next
    noise: float  # the larger relative half-spread of the two (within or across starts)
    winner: (
        str | None
    )  # None: one backend, the gap is within the noise, or a spread across starts is unmeasured
    one_start: tuple[
        str, ...
    ] = ()  # of the top two, those with too few engine starts (spread across starts unknown)
    why_not: str | None = (
        None  # where there is no winner though both have enough starts: which test the gap failed
    )


def rank(values: dict[str, StartStat], higher: bool = False, min_starts: int = 2) -> Ranking:
    """Rank backends on their medians; a winner only where the gap exceeds both backends' spreads added.

    Within a start and across starts are compared separately: the gap must beat the two backends'
    within-start half-spreads added, and the larger of their full ranges across starts; and the two
    backends' per-start medians must not overlap (:func:`separated`). A backend with fewer than
    ``min_starts`` engine starts has no measured spread across starts (one start's is not zero): no
    winner is named then.
    """
    have = {b: v for b, v in values.items() if v.median is not None}
    order = sorted(have, key=lambda b: -have[b].median if higher else have[b].median)  # type: ignore[operator]
    if len(order) < 2:
        return Ranking(order, None, have[order[0]].noise if order else 0.0, None)
    best, second = have[order[0]], have[order[1]]
    # the larger over the smaller, less one: how much slower the next is (lower is better) or how much
    # faster the best is (higher is better)
    smaller = second if higher else best
    margin = abs(second.median - best.median) / abs(smaller.median) if smaller.median else None  # type: ignore[operator]
    noise = max(best.noise, second.noise)
    within = (best.within or 0.0) + (second.within or 0.0)
    # between engine starts: the larger of the two backends' full ranges of per-start medians (across is
    # half one)
    across = 2 * max(best.across or 0.0, second.across or 0.0)
    one_start = tuple(b for b in order[:2] if have[b].starts < min_starts)
    apart = separated(best, second, higher)
    wins = (
        margin is not None and margin > 0 and margin > within and margin > across and not one_start and apart
    )
    why = None
    if not wins and margin is not None and not one_start:
        why = (
            f"the gap is inside the spread within a start (±{_rel(within)} together)"
            if margin <= within
            else f"the gap is inside the spread between engine starts ({_rel(across)})"
            if margin <= across
            else "one backend's engine starts overlap the other's"
            if not apart
            else None
        )
    return Ranking(order, margin, noise, order[0] if wins else None, one_start, why)


def verdict(r: Ranking, beyond: str) -> tuple[str | None, str]:
    """The winner rule's outcome in words, one wording for every ranked figure: (the winner or None, why).

    ``beyond`` names the spread within a run that the gap has beaten (``the noise within a start (±2.0%)``,
    ``the intervals``): said where the gap beats it but one engine start leaves the spread across starts
    unmeasured (not decided)."""
    if len(r.order) < 2:
        return None, "one backend: nothing to choose"
    second = r.order[1]
    if r.one_start and r.margin is not None and r.margin > r.noise:
        return None, (
            f"{r.order[0]} leads by {_rel(r.margin)} over {second}, beyond {beyond}; not decided: one engine "
            f"start of {', '.join(r.one_start)}, so the spread across starts is unmeasured"
        )
    if r.winner:
        return r.winner, f"by {_rel(r.margin)} over {second} (noise ±{_rel(r.noise)})"
    why = f": {r.why_not}" if r.why_not else ""
    return None, f"within noise (gap to {second} {_rel(r.margin)}{why})"


def _rel(x: float | None) -> str:
    if x is None:
        return "–"
    return (
        f"{x * 100:.1f}%" if x < 0.1 else f"{x * 100:.0f}%"
    )  # as reports.fmt.rel (which imports this module)


def separated(best: StartStat, second: StartStat, higher: bool = False) -> bool:
    """Every engine start of ``best`` beats every start of ``second`` (their per-start medians do not
    overlap): a lead one slow start of the other makes is no lead."""
    if not best.per_start or not second.per_start:
        return True  # nothing per start to compare (old summaries): the spreads above decide
    if higher:
        return min(best.per_start) > max(second.per_start)
    return max(best.per_start) < min(second.per_start)
