"""The capacity rows of one backend, workload, variant and loop: each target's capacity as a bracket with its
evidence, over every engine start that ran it.

- **Each level is judged** (``contract.capacity.judge``) on its steady state with its level record's facts:
  the arrival process an open loop planned, so a level whose arrivals were not the sustained rate it names
  (a burst; a lagging submit) is "not offered" and never a pass, and a growing queue is a miss.
- **The bracket** (``contract.capacity.capacity``) is judged against the search's own ceiling and ratio,
  from the level records (``search_ceiling``, ``search_ratio``); a run that did not search states its
  maximum by its planned levels (the highest one, run or not). "≥" is then only a pass at that maximum.
  A search that stopped at the engine's own limit on requests running at once (``search_engine_limit``,
  below the stated maximum) gives the row ``engine_limit``: the page says the bracket stopped there.
- **Engine starts**: each start's levels are judged apart, giving one capacity a start; the row's
  capacity is the **median start's** (the lower median of an even count: never the best start), and
  ``starts`` lists every start's bracket so the page shows the spread. One start: that start's, pooled
  with nothing.
- **Evidence at both ends**: the deciding limit's percentile and its bootstrap interval at the last pass
  and at the first miss (``pass_at``, ``miss_at``), and each judged level's decision (``decisions``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd

from llm_call_anatomy.contract.capacity import DEFAULT_RATIO, Capacity, capacity, judge
from llm_call_anatomy.contract.level_facts import LevelFacts
from llm_call_anatomy.contract.level_stats import LevelStats
from llm_call_anatomy.contract.price import GpuPrice
from llm_call_anatomy.contract.slo import Target, Verdict
from llm_call_anatomy.reports.stats import num

# a level row's energy figures a capacity row carries (capacity.level_row; contract.level_energy defines them)
ENERGY = ("energy_j_per_1k_steady", "idle_w", "above_idle_share", "energy_j_per_1k_level")


def evidence(verdict: Verdict | None) -> dict[str, Any] | None:
    """The verdict's deciding limit (``Verdict.deciding``: a miss's limit missed, an undecided level's limit
    inside its interval, a pass's limit nearest its bound; else the first with an interval): its key, measured
    percentile and interval, the decision, and the flags raised (by name)."""
    if verdict is None or verdict.decision is None:
        return None
    values = {k: v for k, v in verdict.values.items() if v is not None}
    key = next((k for k in verdict.intervals if verdict.intervals.get(k)), None)
    key = verdict.deciding if verdict.deciding in values else key
    key = key or next(iter(values), None)
    flags = [
        name
        for name in ("not_offered", "overloaded", "young_users", "users_over")
        if (verdict.flags or {}).get(name)
    ]
    iv = verdict.intervals.get(key) if key else None
    return {
        "decision": verdict.decision,
        "limit": key,
        "value": values.get(key) if key else None,
        "interval": list(iv) if iv else None,
        "flags": flags,
    }


def flags_of(verdict: Verdict | None) -> list[str]:
    """The flags a verdict raised, by name (none where it decided nothing)."""
    found = evidence(verdict)
    return found["flags"] if found else []


def rank(c: Capacity) -> tuple[float, float]:
    """How far a start's capacity goes: its last pass, then its first miss (an unbracketed top above)."""
    lo = c.value if c.value is not None else 0.0
    hi = c.next_up if c.next_up is not None else float("inf")
    return lo, hi


@dataclass(frozen=True)
class CapacityGroup:
    """What every capacity row of one backend, workload, variant (``mode``) and loop shares; its rows, one a
    target, come from the group's level rows (``capacity.level_row``): ``peak_row`` for a throughput-only
    target, ``capacity_row`` for the others."""

    backend: str
    workload: str
    mode: str
    loop: str  # "closed" (its levels are concurrencies) or "open" (Poisson rates)
    rate_unit: str  # an open loop's unit: "req/s", or "sessions/s" for a sessions load
    gpu_hour_usd: (
        GpuPrice | None
    )  # the price (or range) a cost per million tokens is worked out at (None: no cost)
    not_run: tuple[float, ...] = ()  # planned levels of this loop with no records (the run stopped first)
    facts: dict[tuple, LevelFacts] = field(default_factory=dict)  # level key -> its level record's facts
    # level key -> {start label: (that start's steady state, that start's level facts; None: no level record)}
    starts: dict[tuple, dict[str, tuple[LevelStats, LevelFacts | None]]] = field(default_factory=dict)
    think_s: float = 0.0  # a closed loop of users who think (mean s): its levels are users U, not C in flight

    @property
    def axis(self) -> str:
        """The level rows' column that holds this loop's level."""
        return "concurrency" if self.loop == "closed" else "rate_rps"

    def peak_row(self, target: Target, levels: pd.DataFrame) -> dict[str, Any]:
        """A throughput-only target's row: the level of peak output tok/s among those with no failed request
        (bound "peak": no capacity, nothing searched for)."""
        ok = levels.dropna(subset=["output_tps"])
        ok = ok[ok["failed"] == 0]
        top = ok.loc[ok["output_tps"].idxmax()] if len(ok) else None
        value = None if top is None else top[self.axis]
        return self.row(Capacity(target.name, self.loop, value, "peak", None, None), at=top)

    def not_run_row(self, target: Target) -> dict[str, Any]:
        """A target's row where the run planned this variant and loop and never reached it (bound "not run":
        no level, neither met nor missed; ``not_run`` names the planned levels)."""
        return self.row(Capacity(target.name, self.loop, None, "not run", None, None), at=None)

    def skipped_row(self, target: Target, reason: str) -> dict[str, Any]:
        """A target's row where the backend skipped the workload whole (not installed, no GPU...): bound
        "skipped", the reason beside it; neither met, missed nor cut short."""
        return {
            **self.row(Capacity(target.name, self.loop, None, "skipped", None, None), at=None),
            "skipped": reason,
        }

    def search_bounds(self, levels: pd.DataFrame) -> tuple[float | None, float]:
        """(ceiling, ratio): the search's, from its level records; else the highest planned level, run or
        not (a run that did not search states its maximum by its levels), and the default ratio."""
        facts = [self.facts.get(self._key(r)) or LevelFacts() for r in levels.to_dict("records")]
        ceilings = [num(f.search_ceiling) for f in facts]
        ratios = [num(f.search_ratio) for f in facts]
        ceiling = max((c for c in ceilings if c is not None), default=None)
        planned = [x for x in (*levels[self.axis].tolist(), *self.not_run) if num(x) is not None]
        ceiling = max([ceiling, *planned]) if ceiling is not None else max(planned, default=None)
        ratio = max((r for r in ratios if r is not None and r > 1), default=DEFAULT_RATIO)
        return ceiling, ratio

    def engine_limit(self, levels: pd.DataFrame) -> tuple[float | None, str | None]:
        """The engine's limit on requests running at once where the search stopped at it (its level records'
        ``search_engine_limit``), and the setting's name; (None, None) where no level says."""
        facts = [self.facts.get(self._key(r)) or LevelFacts() for r in levels.to_dict("records")]
        said = [(num(f.search_engine_limit), f.search_engine_limit_name) for f in facts]
        said = [(x, name) for x, name in said if x is not None]
        return max(said, key=lambda s: s[0]) if said else (None, None)

    def _key(self, r: dict) -> tuple:
        return (self.backend, self.workload, self.mode, r["case"])

    def _judged(self, target: Target, levels: pd.DataFrame, pick) -> dict[float, tuple[Verdict, LevelFacts]]:
        """level -> (verdict, engine facts) over the levels ``pick(level key)`` gives (stats, facts) for, the
        engine's KV-cache peak and preemptions as the level row has them."""
        judged = {}
        for r in levels.to_dict("records"):
            x, found = r[self.axis], pick(self._key(r))
            if x is None or x != x or found is None:
                continue
            steady, facts = found
            facts = facts or LevelFacts()
            engine = replace(facts, kv_cache_usage_peak=r["kv_peak"], preemptions=r["preemptions"])
            judged[float(x)] = (judge(target, steady, facts), engine)
        return judged

    def capacity_row(
        self, target: Target, levels: pd.DataFrame, stats: dict[tuple, LevelStats]
    ) -> dict[str, Any]:
        """The target's capacity over the levels, each judged on its steady state with its facts: per
        engine start, the median start's; see the module docstring."""
        ceiling, ratio = self.search_bounds(levels)
        labels = sorted({s for k in self.starts.values() for s in k})
        per_start: dict[str, tuple[Capacity, dict]] = {}
        for s in labels if len(labels) > 1 else ():
            judged = self._judged(target, levels, lambda key, s=s: self.starts.get(key, {}).get(s))
            if judged:
                per_start[s] = (capacity(target, self.loop, judged, ceiling, ratio), judged)
        if per_start:
            order = sorted(per_start, key=lambda s: (rank(per_start[s][0]), s))
            chosen = order[(len(order) - 1) // 2]
            found, judged = per_start[chosen]
        else:
            chosen = None
            judged = self._judged(target, levels, lambda key: (stats[key], self.facts.get(key)))
            found = capacity(target, self.loop, judged, ceiling, ratio)
        measured = levels[self.axis] == found.value
        at = levels[measured].iloc[0] if found.value is not None and measured.any() else None
        unjudged = sorted(x for x, (v, _) in judged.items() if v.met is None and v.decision is None)
        row = self.row(found, at=at, unjudged=unjudged)
        limit, limit_name = self.engine_limit(levels)
        row.update(
            engine_limit=limit,  # the search stopped at the engine's own limit (None: it did not)
            engine_limit_name=limit_name,
            decisions={x: v.decision for x, (v, _) in sorted(judged.items()) if v.decision},
            pass_at=evidence(judged[found.value][0]) if found.value in judged else None,
            miss_at=evidence(judged[found.next_up][0]) if found.next_up in judged else None,
            # why the chosen start's undecided levels are: the flags their verdicts raised (young_users, ...)
            undecided_flags=sorted(
                {f for x in found.undecided if x in judged for f in flags_of(judged[x][0])},
            ),
            start=chosen,
            starts=[
                {
                    "start": s,
                    "value": c.value,
                    "next_up": c.next_up,
                    "bound": c.bound,
                    "undecided": list(c.undecided),  # a start's range ends at its highest undecided level
                }
                for s, (c, _) in sorted(per_start.items())
            ],
        )
        return row

    def row(self, found: Capacity, *, at: pd.Series | None, unjudged: Sequence[float] = ()) -> dict[str, Any]:
        """One capacity row: ``found`` (the target's capacity, or its peak) with the tok/s, per-user tok/s,
        energy and cost of ``at``, the level row it was measured at (None: no such level)."""
        tps = None if at is None else num(at["output_tps"])
        price = self.gpu_hour_usd
        return {
            "rate_unit": self.rate_unit,
            "think_s": self.think_s,
            "unjudged": list(unjudged),  # levels measured with no steady-state request: no verdict
            "not_run": list(self.not_run),  # planned levels never reached: neither met nor missed
            "backend": self.backend,
            "workload": self.workload,
            "mode": self.mode,
            "loop": self.loop,
            "target": found.target,
            "value": found.value,
            "bound": found.bound,
            "next_up": found.next_up,
            "ratio": found.ratio,
            "undecided": list(found.undecided),
            "ceiling": found.ceiling,
            "engine_limit": None,
            "engine_limit_name": None,
            "limiter": found.limiter,
            "non_monotone": found.non_monotone,
            "decisions": {},
            "pass_at": None,
            "miss_at": None,
            "start": None,
            "starts": [],
            "output_tps": tps,
            "per_user_tps": None if at is None else num(at["per_user_tps"]),
            **{k: None if at is None else num(at.get(k)) for k in ENERGY},
            # at one price or a range's low end; its high end apart (None at one price: the cell as before)
            "cost_per_m": price.lo / (3600 * tps) * 1e6 if price and tps else None,
            "cost_per_m_hi": price.hi / (3600 * tps) * 1e6 if price and price.is_range and tps else None,
        }
