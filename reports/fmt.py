"""Number and text formatting shared by the caveats and the page (plain strings; the page escapes them)."""

from __future__ import annotations

import json
import math

from llm_call_anatomy.reports.stats import Stat, num


def digits(x: float) -> int:
    """Decimals that keep about three significant figures."""
    ax = abs(x)
    if ax >= 100 or ax == 0:
        return 0
    if ax >= 10:
        return 1
    if ax >= 1:
        return 2
    return max(2, 2 - int(math.floor(math.log10(ax))))


def n(value: object, places: int | None = None) -> str:
    """A number with sensible precision: 5,549 · 28.3 · 2.64 · 0.0123;
    whole numbers as such; '–' when missing."""
    x = num(value)
    if x is None:
        return "–"
    if places is None:
        places = 0 if x == int(x) else digits(x)
    return f"{x:,.{places}f}"


def text(value: object) -> str:
    """A text cell: '' when missing (None, or the NaN that pandas 3 puts for None in a column of strings)."""
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)


def count(value: object) -> str:
    """A large count: 8.19 B, 369 k, 12.3 M."""
    x = num(value)
    if x is None:
        return "–"
    for size, unit in ((1e9, " B"), (1e6, " M"), (1e3, " k")):
        if abs(x) >= size:
            return f"{n(x / size, digits(x / size))}{unit}"
    return n(x)


def times(value: object, places: int | None = None) -> str:
    x = num(value)
    if x is None:
        return "–"
    return f"{x:,.{places}f}×" if places is not None else f"{x:,.1f}×" if x < 100 else f"{x:,.0f}×"


def pct(value: object, places: int = 0) -> str:
    x = num(value)
    return "–" if x is None else f"{100 * x:.{places}f}%"


def rel(value: object) -> str:
    """A relative spread or margin: one decimal below 10 % (``1.9%``), none above (``57%``)."""
    x = num(value)
    return "–" if x is None else pct(x, 1 if abs(x) < 0.1 else 0)


def stat(s: Stat, unit: str = "") -> str:
    """``28.3 ms [27.1–29.0] n=3``; a single value shows ``(n=1)``."""
    if not s.ok:
        return "–"
    u = f" {unit}" if unit else ""
    values = (s.median, s.q1, s.q3)
    places = None if all(v == int(v) for v in values) else digits(s.median)  # type: ignore[arg-type]
    if s.n == 1 or s.q1 == s.q3:
        return f"{n(s.median, places)}{u} (n={s.n})"
    return f"{n(s.median, places)}{u} [{n(s.q1, places)}–{n(s.q3, places)}] n={s.n}"


# The characters that reorder the text around them (Unicode's bidirectional controls: the embeddings and
# overrides, the isolates, the marks): a workload name, an error or a prompt holding U+202E would reverse
# the rest of its line on the page (issue 44). The page shows each as its escape (``\u202e``).
BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
_VISIBLE = {ord(c): f"\\u{ord(c):04x}" for c in BIDI}


def visible(text: str) -> str:
    """``text`` with each bidirectional control character written as its escape (``\\u202e``): the page's
    every text goes through it (``reports.page.environment``'s ``finalize``), so none reorders the page."""
    return text.translate(_VISIBLE)


def token(text: object) -> str:
    """A token's text made visible: escapes for control characters, ␣ for spaces."""
    s = json.dumps(str(text), ensure_ascii=False)[1:-1]
    return s.replace(" ", "␣")
