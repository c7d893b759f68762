"""The capacity search: the highest closed-loop concurrency and the highest offered rate that meet a target,
as a bracket [last pass, first miss], never a bare floor.

Per backend, load workload, variant (shape) and target, from the levels measured so far, each judged
(:func:`judge`) on its steady state (``contract.level_stats``) against the target (``contract.slo``),
with a verdict that has an interval and flags:

- **pass / miss / undecided**: the deciding percentile of every limit gets a bootstrap interval over
  time blocks of the steady window (``LevelStats.interval``, 5th-95th percentile); the level passes
  when every limit's interval lies within it, misses when a limit's lies wholly above it (or failures
  put its percentile at infinity), and is **undecided** when the limit lies inside an interval. The
  runner runs an undecided level once more for twice the time; undecided then, it stays so, and the
  capacity is a range (``bound`` "range", ``undecided`` the levels).
- **not offered / overloaded / young users** (``contract.level_flags``): a level whose arrivals were not
  those planned is never a pass ("not offered"); a level whose queue grew through the window is a miss,
  whatever its percentiles; a closed loop of users who think that judged only their early turns is
  undecided ("young users"), pass or miss; one that left more sessions open than it has users ("more users
  than planned") keeps a pass and leaves a miss undecided.

The search (:func:`next_level`): upward, twice the highest level, until the first level that does not
pass, up to the ceiling (:func:`search_ceiling`: ``search_max``, the user's stated maximum, or in a closed
loop the engine's own limit on requests running at once where the runner knows it and it is lower: vLLM's
``max_num_seqs``, SGLang's ``max_running_requests``); then the geometric midpoint of [last pass, lowest
level not passing] until that bracket is no wider than ``ratio`` (default :data:`DEFAULT_RATIO`, 1.25x)
or the integer concurrencies are adjacent, or the level budget (``search_levels``) ends. Even the lowest
level missing: half of it (concurrency down to 1). Both ends are reported (``value``, ``next_up``); "at
least" (``bound`` "floor") only where every level passed up to the stated maximum; no miss below it when
the budget ended, or at the engine's limit, is "unbracketed", not a floor (the page names the engine's
limit). The search assumes latency grows with load (one crossing); a pass
above a miss is reported (``non_monotone``), not searched around. What limited it is the first miss's
first missed limit or flag, with the engine's KV-cache peak and preemptions there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from llm_call_anatomy.contract.level_facts import LevelFacts
from llm_call_anatomy.contract.level_flags import level_flags
from llm_call_anatomy.contract.level_stats import LevelStats
from llm_call_anatomy.contract.slo import Target, Verdict, evaluate, percentile

TOLERANCE = 0.1  # older callers: a rate bracket within 10 % (the ratio's default is now 1.25)
DEFAULT_RATIO = 1.25  # the search stops when the bracket's ends are within this factor
KV_FULL = 0.95  # a KV-cache peak at least this high is named as the limiter's cause
PASS, MISS, UNDECIDED, NOT_OFFERED = "pass", "miss", "undecided", "not offered"


@dataclass(frozen=True)
class Capacity:
    target: str
    loop: str  # "closed" (concurrency) or "open" (rate)
    value: float | None  # the last pass: the highest level that met the target below the first miss
    # "exact" (hi is the next integer), "bracket" (lo < hi; ``ratio`` says how wide), "range" (undecided
    # levels inside the bracket), "floor" (every level passed up to the ceiling: "at least"),
    # "unbracketed" (no miss below the ceiling when the search stopped), "none" (no level passed)
    bound: str
    next_up: float | None  # the first miss: the lowest level above ``value`` that missed
    limiter: str | None
    non_monotone: bool = False
    ratio: float | None = None  # next_up / value
    undecided: tuple[float, ...] = ()  # levels between value and next_up (or above value) left undecided
    ceiling: float | None = None  # the highest level the search could try (None: not known)


def search_ceiling(stated: float | None, engine_limit: int | None, loop: str) -> float | None:
    """The highest level the search may try: the stated maximum, or in a closed loop the engine's own limit on
    requests running at once where it is known and lower (a concurrency above it only queues inside the
    engine: the level would measure the queue, not the engine). An open loop's rate has no such limit."""
    if loop != "closed" or engine_limit is None or engine_limit < 1:
        return stated
    return engine_limit if stated is None else min(stated, engine_limit)


def limiter_text(verdict: Verdict, facts: LevelFacts | dict | None) -> str | None:
    """The missed limit or flag, and the engine's evidence for why (KV cache full, preemptions; ``facts``:
    the level's, or its ``extra.level`` dict)."""
    facts = LevelFacts.of(facts)
    flags = verdict.flags or {}
    parts = [verdict.limiter] if verdict.limiter else []
    parts += [f"overloaded: {flags['overloaded']}"] if flags.get("overloaded") else []
    parts += [f"not offered as planned: {flags['not_offered']}"] if flags.get("not_offered") else []
    for flag in ("young_users", "users_over"):
        said = flags.get(flag)
        parts += [said] if said and not any(said in p for p in parts) else []
    kv, pre = facts.kv_cache_usage_peak, facts.preemptions
    if isinstance(kv, int | float) and kv == kv and kv >= KV_FULL:
        parts.append(f"KV cache full (peak {kv:.0%})")
    if isinstance(pre, int | float) and pre == pre and pre > 0:
        parts.append(f"{pre:g} preemptions")
    return "; ".join(parts) or None


def _figure(stats: LevelStats, metric: str, p: float):
    """The limit's percentile over a resample of the level's rows: the metric's samples of each row (its
    ``LevelStats.samples``, read once a row: a bootstrap draws the same rows hundreds of times), a failed
    request as infinity (not for ITL)."""
    per_row: dict[int, tuple[list[float], int]] = {}

    def of(r: dict) -> tuple[list[float], int]:
        found = per_row.get(id(r))
        if found is None:
            found = per_row[id(r)] = (stats.samples([r])[metric], stats.failed_in([r]))
        return found

    def figure(rows: list[dict], _span: float) -> float | None:
        xs: list[float] = []
        failed = 0
        for r in rows:
            values, fails = of(r)
            xs += values
            failed += fails
        if metric != "itl":
            xs += [math.inf] * failed
        return percentile(xs, p)

    return figure


def judge(
    target: Target, stats: LevelStats, facts: LevelFacts | dict | None = None, level: LevelStats | None = None
) -> Verdict:
    """The level against the target: its steady-state samples, and every failed request a miss (the first
    wave's too: a level does not meet a target by failing requests, wherever they fall); each limit's
    percentile with its bootstrap interval, and the level's flags (``facts``: the level record's, or its
    ``extra.level`` dict, for the arrival process of an open loop). ``level``: the whole level's stats where
    ``stats`` are a part of it (one traffic class's requests): the flags are the whole level's (its offered
    rate, its queue), the percentiles the part's. See the module docstring for the decision."""
    facts = LevelFacts.of(facts)
    base = evaluate(target, stats.samples(), stats.failed + stats.failed_in(stats.first_wave))
    whole = level or stats
    rows = whole.first_wave + whole.steady
    rate = next((r.get("load_rate_rps") for r in rows if r.get("load_rate_rps")), None)
    rate = None if whole.concurrency else rate
    flags = level_flags(
        rows,
        whole.window,
        rate,
        facts.arrival or "poisson",
        facts.burstiness or 1.0,
        facts,
        whole.concurrency,
    )
    if base.met is None:
        return replace(base, flags=flags.to_dict())
    intervals, decision, deciding = {}, PASS if base.met else MISS, None
    if not target.throughput_only:
        worst = PASS
        for lim in target.limits:
            v = base.values.get(lim.key)
            iv = (
                None
                if v is None or v == math.inf
                else stats.interval(_figure(stats, lim.metric, lim.percentile))
            )
            intervals[lim.key] = iv
            if v is None:
                continue
            if v == math.inf or (iv is not None and iv[0] > lim.ms) or (iv is None and v > lim.ms):
                deciding = deciding if worst == MISS else lim.key  # the first limit missed
                worst = MISS
            elif (iv is not None and iv[1] > lim.ms or v > lim.ms) and worst == PASS:
                worst = UNDECIDED
        decision = worst
        if worst == PASS:  # the limit nearest its bound: the one that would fail first
            near = [
                (v / lim.ms, lim.key) for lim in target.limits if (v := base.values.get(lim.key)) is not None
            ]
            deciding = max(near)[1] if near else None
    limiter = base.limiter
    if decision == UNDECIDED:
        key = next((k for k, iv in intervals.items() if iv is not None and iv[1] > _ms(target, k)), None)
        deciding = key
        if key is not None:
            lo, hi = intervals[key]
            limiter = (
                f"{key} interval {lo:.0f}-{hi:.0f} ms holds the limit {_ms(target, key):g} ms (undecided)"
            )
    if flags.overloaded:
        decision = MISS
    elif flags.not_offered and decision != MISS:
        decision = NOT_OFFERED
    elif flags.young_users:
        decision, limiter = UNDECIDED, flags.young_users
    if flags.users_over and decision == MISS:  # a miss under more than its users' load: undecided
        decision, limiter = UNDECIDED, "; ".join(x for x in (limiter, flags.users_over) if x)
    met = base.met and decision == PASS if decision != UNDECIDED else base.met
    return replace(
        base,
        met=met,
        limiter=limiter,
        decision=decision,
        intervals=intervals,
        flags=flags.to_dict(),
        deciding=deciding,
    )


def _ms(target: Target, key: str) -> float:
    return next(lim.ms for lim in target.limits if lim.key == key)


def _decision(v) -> str:
    """A judged level as a decision: a Verdict's, or an older caller's bool (True: pass, False: miss)."""
    if isinstance(v, Verdict):
        return v.decision or (PASS if v.met else MISS)
    if isinstance(v, str):
        return v
    return PASS if v else MISS


def bracket(met: dict) -> tuple[float | None, float | None, bool]:
    """(lo, hi, non_monotone) over the judged levels (level -> decision, or bool): hi the lowest miss (or
    level not offered), lo the highest pass below it."""
    d = {x: _decision(v) for x, v in met.items()}
    levels = sorted(d)
    misses = [x for x in levels if d[x] in (MISS, NOT_OFFERED)]
    hi = misses[0] if misses else None
    below = [x for x in levels if d[x] == PASS and (hi is None or x < hi)]
    lo = below[-1] if below else None
    non_monotone = hi is not None and any(d[x] == PASS for x in levels if x > hi)
    return lo, hi, non_monotone


def _mid(lo: float, hi: float, integer: bool, ratio: float) -> float | None:
    if hi / max(lo, 1e-12) <= ratio:
        return None
    m = math.sqrt(lo * hi) if lo > 0 else hi / 2
    if integer:
        m = int(round(m))
        m = min(max(m, int(lo) + 1), int(hi) - 1)
        return m if lo < m < hi else None
    return m


def next_level(met: dict, integer: bool, ceiling: float | None, ratio: float = DEFAULT_RATIO) -> float | None:
    """The next level to measure for one target, or None when the bracket is as fine as it goes: up to the
    first level not passing, then bisect [last pass, lowest level not passing] down to ``ratio``."""
    if not met:
        return None
    d = {x: _decision(v) for x, v in met.items()}
    lo, hi, _ = bracket(d)
    upper = min((x for x, v in d.items() if v != PASS and (lo is None or x > lo)), default=None)
    if upper is None:  # every level passed: above the highest, up to the ceiling
        top = max(d)
        if ceiling is None or top >= ceiling:
            return None
        up = min(top * 2, ceiling)
        return int(up) if integer else up
    if lo is None:  # even the lowest did not pass: below it
        low = min(d) / 2
        if integer:
            return int(low) if int(low) >= 1 and int(low) < min(d) else None
        return low
    return _mid(lo, upper, integer, ratio)


def capacity(
    target: Target,
    loop: str,
    judged: dict[float, tuple[Verdict, LevelFacts | dict | None]],
    ceiling: float | None = None,
    ratio: float = DEFAULT_RATIO,
) -> Capacity:
    """The target's capacity from the judged levels (level -> (verdict, the level's engine facts)).
    ``ceiling``: the highest level the search could try (None: not known, as for older callers: a level
    that passed at the top is then a floor)."""
    d = {x: _decision(v) for x, (v, _) in judged.items() if v.met is not None or v.decision is not None}
    if not d:
        return Capacity(target.name, loop, None, "none", None, "no level was measured", ceiling=ceiling)
    lo, hi, non_monotone = bracket(d)
    undecided = tuple(
        sorted(
            x for x, v in d.items() if v == UNDECIDED and (lo is None or x > lo) and (hi is None or x < hi)
        )
    )
    if hi is None:
        top = max(d)
        at_ceiling = ceiling is None or (lo is not None and lo >= ceiling)
        bound = "range" if undecided else "floor" if at_ceiling and lo is not None else "unbracketed"
        if lo is None and not undecided:
            bound = "none"
        limiter = None if lo == top else limiter_text(judged[top][0], judged[top][1])
        return Capacity(target.name, loop, lo, bound, None, limiter, False, None, undecided, ceiling)
    verdict, facts = judged[hi]
    if lo is None:
        bound = "range" if undecided else "none"
    elif undecided:
        bound = "range"
    elif loop == "closed" and hi == lo + 1:
        bound = "exact"
    else:
        bound = "bracket"
    r = hi / lo if lo else None
    return Capacity(
        target.name, loop, lo, bound, hi, limiter_text(verdict, facts), non_monotone, r, undecided, ceiling
    )


def choose(
    targets: tuple[Target, ...],
    judged: dict[str, dict],
    integer: bool,
    ceiling: float | None,
    measured: set[float],
    ratio: float = DEFAULT_RATIO,
) -> tuple[Target, float] | None:
    """The next (target, level) for the search: the first target (tightest first) with a level still to
    measure."""
    ordered = sorted(
        (t for t in targets if not t.throughput_only), key=lambda t: min(lim.ms for lim in t.limits)
    )
    for t in ordered:
        x = next_level(judged.get(t.name, {}), integer, ceiling, ratio)
        if x is not None and x not in measured:
            return t, x
    return None
