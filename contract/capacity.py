"""The capacity search: the highest closed-loop concurrency and the highest Poisson rate that meet a target.

Per backend, load workload, variant (shape) and target, from the levels measured so far (each judged
on its steady state, ``contract.level_stats``, against the target, ``contract.slo.evaluate``):

- **bracket**: ``lo`` = the highest level that meets the target below the lowest level that misses
  it (``hi``); a level between them is measured next, the geometric midpoint (levels are 4x apart:
  32 -> 64 -> 48...), until ``hi`` is the next integer concurrency above ``lo`` or within
  ``TOLERANCE`` of it (rates);
- every level meets it: one level above, twice the highest, up to the search's ceiling
  (``search_max``); without a ceiling above the levels, capacity is "at least the highest";
- even the lowest misses: half of it (concurrency down to 1).

The search adds at most ``search_levels`` levels per variant and loop (closed, open), over all
targets, tightest first. It assumes latency grows with load (one crossing); a level that meets the
target above one that misses it is reported (``non_monotone``), not searched around. What limited it
is the next level up's first missed limit, with the engine's KV-cache peak and preemptions there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from contract.level_stats import LevelStats
from contract.slo import Target, Verdict, evaluate

TOLERANCE = 0.1  # rates: stop when the bracket is within 10 %
KV_FULL = 0.95  # a KV-cache peak at least this high is named as the limiter's cause


@dataclass(frozen=True)
class Capacity:
    target: str
    loop: str  # "closed" (concurrency) or "open" (rate)
    value: float | None  # the highest level that met the target (None: none did)
    # "exact" (hi is the next step), "bracket" (levels between lo and hi not measured), "floor" (nothing
    # missed), "none"
    bound: str
    next_up: float | None  # the lowest level above it that missed
    limiter: str | None
    non_monotone: bool = False


def limiter_text(verdict: Verdict, facts: dict) -> str | None:
    """The missed limit, and the engine's evidence for why (KV cache full, preemptions)."""
    parts = [verdict.limiter] if verdict.limiter else []
    kv, pre = facts.get("kv_cache_usage_peak"), facts.get("preemptions")
    if isinstance(kv, int | float) and kv == kv and kv >= KV_FULL:
        parts.append(f"KV cache full (peak {kv:.0%})")
    if isinstance(pre, int | float) and pre == pre and pre > 0:
        parts.append(f"{pre:g} preemptions")
    return "; ".join(parts) or None


def judge(target: Target, stats: LevelStats) -> Verdict:
    """The level against the target: its steady-state samples, and every failed request a miss (the first
    wave's too: a level does not meet a target by failing requests, wherever they fall)."""
    return evaluate(target, stats.samples(), stats.failed + stats.failed_in(stats.first_wave))


def _mid(lo: float, hi: float, integer: bool) -> float | None:
    m = math.sqrt(lo * hi) if lo > 0 else hi / 2
    if integer:
        m = int(round(m))
        m = min(max(m, int(lo) + 1), int(hi) - 1)
        return m if lo < m < hi else None
    return m if hi / max(lo, 1e-12) > 1 + TOLERANCE else None


def bracket(met: dict[float, bool]) -> tuple[float | None, float | None, bool]:
    """(lo, hi, non_monotone) over the judged levels: hi the lowest miss, lo the highest meet below it."""
    levels = sorted(met)
    misses = [x for x in levels if not met[x]]
    hi = misses[0] if misses else None
    below = [x for x in levels if met[x] and (hi is None or x < hi)]
    lo = below[-1] if below else None
    non_monotone = hi is not None and any(met[x] for x in levels if x > hi)
    return lo, hi, non_monotone


def next_level(met: dict[float, bool], integer: bool, ceiling: float | None) -> float | None:
    """The next level to measure for one target, or None when the bracket is as fine as it goes."""
    if not met:
        return None
    lo, hi, _ = bracket(met)
    if hi is None:  # every level met it: above the highest, up to the ceiling
        top = max(met)
        if ceiling is None or top >= ceiling:
            return None
        up = min(top * 2, ceiling)
        return int(up) if integer else up
    if lo is None:  # even the lowest missed: below it
        low = hi / 2
        if integer:
            return int(low) if int(low) >= 1 and int(low) < hi else None
        return low
    return _mid(lo, hi, integer)


def capacity(
    target: Target, loop: str, judged: dict[float, tuple[Verdict, dict]], ceiling: float | None = None
) -> Capacity:
    """The target's capacity from the judged levels (level -> (verdict, the level's engine facts))."""
    met = {x: bool(v.met) for x, (v, _) in judged.items() if v.met is not None}
    lo, hi, non_monotone = bracket(met)
    if not met:
        return Capacity(target.name, loop, None, "none", None, "no level was measured")
    if hi is None:
        return Capacity(target.name, loop, lo, "floor", None, None)
    verdict, facts = judged[hi]
    integer = loop == "closed"
    more = next_level(met, integer, ceiling)
    bound = "exact" if more is None else "bracket"
    return Capacity(
        target.name,
        loop,
        lo,
        bound if lo is not None else "none",
        hi,
        limiter_text(verdict, facts),
        non_monotone,
    )


def choose(
    targets: tuple[Target, ...],
    judged: dict[str, dict[float, bool]],
    integer: bool,
    ceiling: float | None,
    measured: set[float],
) -> tuple[Target, float] | None:
    """The next (target, level) for the search: the first target (tightest first) with a level still to
    measure."""
    ordered = sorted(
        (t for t in targets if not t.throughput_only), key=lambda t: min(lim.ms for lim in t.limits)
    )
    for t in ordered:
        x = next_level(judged.get(t.name, {}), integer, ceiling)
        if x is not None and x not in measured:
            return t, x
    return None
