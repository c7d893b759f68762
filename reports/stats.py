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
        rows.append({**dict(zip(by, key, strict=True)), f"{p}_med": s.median, f"{p}_q1": s.q1,
                     f"{p}_q3": s.q3, f"{p}_n": s.n})
    return pd.DataFrame(rows, columns=[*by, f"{p}_med", f"{p}_q1", f"{p}_q3", f"{p}_n"])


def stat_of(row: pd.Series | dict, prefix: str) -> Stat:
    """Read back the ``agg`` columns of one row as a :class:`Stat` (no min/max)."""
    get = row.get if isinstance(row, dict) else row.get

    def num(key: str) -> float | None:
        v = get(f"{prefix}_{key}")
        return None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)

    n = get(f"{prefix}_n")
    return Stat(num("med"), num("q1"), num("q3"), None, None, 0 if n is None or n != n else int(n))


def num(value: object) -> float | None:
    """A float, or None for missing / NaN."""
    if value is None or isinstance(value, bool):
        return None
    try:
        f = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return None if math.isnan(f) else f


def ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b == 0:
        return None
    return a / b
