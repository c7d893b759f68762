"""A GPU-hour's price: one price or a range of two (``--gpu-hour-usd 3.5`` or ``--gpu-hour-usd 2.5-7``).

A price depends on the provider and the term (H200 on-demand ran $2.50 to $7.00 an hour in May 2026), so a
deployment's question is asked at a range: ``compare.py --gpu-hour-usd`` (kept in env.json) and ``python
compare.py report --gpu-hour-usd`` take either, and the load report prices every figure at each end.

- ``PRICE``: a positive, finite number of dollars a GPU-hour; ``LO-HI`` (or ``LO–HI``, the page's dash): two,
  ``LO <= HI`` (``3.5-3.5`` is the one price 3.5: a script that writes ``$LO-$HI`` need not special-case
  it; ``7-2.5`` is refused, as a slip more likely than a meaning);
- :meth:`GpuPrice.recorded` is what env.json keeps: one price as the number it always was (a run recorded
  before ranges reads the same), a range as ``[LO, HI]``; :func:`price_from` reads either back.

A mistake is a ValueError of one line that names the flag (the command lines make it exit 2).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

FLAG = "--gpu-hour-usd"
# two unsigned decimals joined by a hyphen or an en dash ("-2.5" stays one negative price, refused as such)
RANGE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*[-–]\s*(\d+(?:\.\d*)?|\.\d+)\s*$")
WHAT = f"{FLAG} must be a positive price in dollars per GPU-hour, or a range LO-HI such as 2.5-7"


@dataclass(frozen=True)
class GpuPrice:
    """Dollars a GPU-hour at the low and the high end (one price: both the same)."""

    lo: float
    hi: float

    @property
    def is_range(self) -> bool:
        return self.hi != self.lo

    @property
    def ends(self) -> tuple[float, ...]:
        """The prices every figure is worked out at: one, or the low end then the high."""
        return (self.lo, self.hi) if self.is_range else (self.lo,)

    def spec(self) -> str:
        """The price as ``--gpu-hour-usd`` takes it (parses back to the same)."""
        return f"{self.lo:g}-{self.hi:g}" if self.is_range else f"{self.lo:g}"

    def text(self) -> str:
        """The price in cents for a sentence: ``$3.50``, ``$2.50–7.00``."""
        return f"${self.lo:.2f}–{self.hi:.2f}" if self.is_range else f"${self.lo:.2f}"

    def recorded(self) -> float | list[float]:
        """env.json's value: one price a number (as before ranges), a range ``[LO, HI]``."""
        return [self.lo, self.hi] if self.is_range else self.lo


def _positive(value: float, text: str) -> float:
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{WHAT} (got {text!r})")
    return value


def parse_price(text: str) -> GpuPrice:
    """``PRICE`` or ``LO-HI`` -> :class:`GpuPrice`; ValueError (one line) on a mistake."""
    match = RANGE.match(text)
    if match:
        lo, hi = (_positive(float(x), text) for x in match.groups())
        if lo > hi:
            raise ValueError(f"{FLAG} {text!r}: a range's low end is above its high end (LO-HI, LO <= HI)")
        return GpuPrice(lo, hi)
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{WHAT} (got {text!r})") from None
    value = _positive(value, text)
    return GpuPrice(value, value)


def price_from(value: Any) -> GpuPrice | None:
    """A price as a caller or a run's env.json gives it: a :class:`GpuPrice`, a positive number, ``[LO, HI]``
    or the flag's text; None for anything else (no price, or one no run could have recorded)."""
    if isinstance(value, GpuPrice) or value is None:
        return value
    try:
        if isinstance(value, str):
            return parse_price(value)
        if isinstance(value, (list, tuple)) and len(value) == 2:
            lo, hi = (_positive(float(v), str(value)) for v in value)
            return GpuPrice(lo, hi) if lo <= hi else None
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return GpuPrice(_positive(float(value), str(value)), float(value))
    except (TypeError, ValueError):
        return None
    return None
