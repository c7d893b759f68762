"""What prefix caching buys: one backend measured with its prefix cache on and off (two runs,
``--no-prefix-caching``), as ratios at the same levels (tok/s on ÷ off, TTFT p50 off ÷ on, where the two
ran the same requests) and per target, capacity on ÷ off, from the level and capacity rows of
``workloads.load.report.capacity``. A tok/s ratio whose two bootstrap intervals overlap is marked as within
the spread: the study's rule names a difference only where the gap exceeds it (the S=0 control, and open-loop
levels of a few dozen requests, are that). A floor on one side bounds the ratio from that side; floors on
both sides give none; each side's planned levels above its capacity that never ran are kept for the page to
name.

Which column ran with the cache on is the engine's own word where it said it (:func:`caching_settings`:
env.json ``engine.scheduler.prefix_caching``, from a started server's /metrics or /get_server_info, or
``engine.prefix_caching`` read back from an engine in process), else the setting asked (env.json
``prefix_caching``) where the backend applies it; a backend that does not (a server someone else started:
``settings_not_applied``) with no word from its engine is not said, and never paired. Where the asked and
the effective setting differ, :func:`caching_caveats` says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from llm_call_anatomy.reports.model import Caveat
from llm_call_anatomy.reports.stats import num
from llm_call_anatomy.workloads.load.report.capacity import not_run_between, tps_above


@dataclass(frozen=True)
class CachingSetting:
    """A column's prefix cache: as asked (None: its backend does not apply the setting) and as its engine said
    it ran (None: not said)."""

    asked: bool | None
    effective: bool | None

    @property
    def on(self) -> bool | None:
        """What the page pairs and names the column by: the effective setting where said, else the asked."""
        return self.effective if self.effective is not None else self.asked


def effective_caching(engine: dict[str, Any]) -> bool | None:
    """The prefix cache as the engine said it ran (env.json's engine block): ``scheduler.prefix_caching`` (a
    started server), else ``prefix_caching`` (an engine in process read back); None where it says nothing."""
    scheduler = engine.get("scheduler") if isinstance(engine.get("scheduler"), dict) else {}
    for found in (scheduler.get("prefix_caching"), engine.get("prefix_caching")):
        if isinstance(found, bool):
            return found
    return None


def caching_settings(ds, labels: list[str]) -> dict[str, CachingSetting]:
    """Each column's prefix cache, asked and effective, from its run's env.json (``ds``: the report's runs).
    An older run that does not say what was asked ran with the cache on."""
    out = {}
    for label in labels:
        run = ds.run_env_of(label)
        name = ds.sources.get(label, ("", label))[1]
        not_applied = (run.get("settings_not_applied") or {}).get(name) or {}
        asked = None if "prefix_caching" in not_applied else run.get("prefix_caching", True)
        out[label] = CachingSetting(asked, effective_caching(ds.env_of(label).get("engine") or {}))
    return out


def caching_caveats(settings: dict[str, CachingSetting]) -> list:
    """One caveat per column whose engine ran its prefix cache otherwise than asked (the column is paired and
    named as it ran), and, on a page with a column that ran it off, one for the columns whose backend does not
    apply the setting and whose engine did not say (they are never paired)."""

    def word(on: bool) -> str:
        return "on" if on else "off"

    out = [
        Caveat(
            "caching",
            f"{label}: prefix caching was asked {word(c.asked)} and its engine says it ran "
            f"{word(c.effective)} (env.json engine.scheduler.prefix_caching): the column is named and paired "
            "as it ran.",
        )
        for label, c in settings.items()
        if c.asked is not None and c.effective is not None and c.asked != c.effective
    ]
    unsaid = [label for label, c in settings.items() if c.on is None]
    if unsaid and any(c.on is False for c in settings.values()):
        out.append(
            Caveat(
                "caching",
                f"{', '.join(unsaid)}: the backend does not apply --no-prefix-caching (a server someone else "
                "started keeps its own cache) and the engine did not say whether its cache was on: no "
                "caching ratio is drawn from it.",
            )
        )
    return out


def caching_ratios(
    steady: pd.DataFrame, capacity_rows: pd.DataFrame, caching: dict[str, bool | None], names: dict[str, str]
) -> pd.DataFrame:
    """For each backend measured with the cache on and off (column labels -> ``caching``, the adapter's
    ``names``): at every level both ran with the same mix, tok/s on ÷ off and TTFT p50 off ÷ on; per target,
    capacity on ÷ off."""
    rows = []
    by_name: dict[str, dict[bool, str]] = {}
    for label, on in caching.items():
        if on is not None:
            by_name.setdefault(names.get(label, label), {})[on] = label
    for name, pair in by_name.items():
        if set(pair) != {True, False} or steady.empty:
            continue
        on, off = _on_and_off(steady, pair, ["workload", "mode", "case"])
        for key in on.index.intersection(off.index):
            a, z = on.loc[key], off.loc[key]
            same = a["mix"] == z["mix"]
            rows.append(
                {
                    "backend": name,
                    "workload": key[0],
                    "mode": key[1],
                    "case": key[2],
                    "level": a["level"],  # as shown (U=N for users who think)
                    "what": "level",
                    "tps_ratio": _ratio(a["output_tps"], z["output_tps"]) if same else None,
                    "tps_within_spread": _overlap(a, z) if same else None,
                    "ttft_ratio": _ratio(z["ttft_p50"], a["ttft_p50"]) if same else None,
                    "same_mix": same,
                }
            )
        if not capacity_rows.empty:
            # the same target, limits and all: a run made with other limits is not paired (#44 item 6)
            index = [
                "workload",
                "mode",
                "loop",
                "target",
                *(["target_label"] if "target_label" in capacity_rows else []),
            ]
            cap_on, cap_off = _on_and_off(capacity_rows, pair, index)
            for key in cap_on.index.intersection(cap_off.index):
                a, z = cap_on.loc[key], cap_off.loc[key]
                if {"peak", "not run"} & {a["bound"], z["bound"]}:
                    # throughput only (the level of peak tok/s is no capacity: the level rows say), or one
                    # side never ran the variant (its row says so)
                    continue
                bound = capacity_bound(a["bound"], z["bound"])
                rows.append(
                    {
                        "backend": name,
                        "workload": key[0],
                        "mode": key[1],
                        "case": f"{key[2]} · {key[3]}",
                        "level": f"{key[2]} · {key[3]}",
                        "what": "capacity",
                        "capacity_ratio": _capacity_ratio(a, z, bound),
                        "capacity_bound": bound,
                        # where a side met the target at no level: the lowest level it missed at (on, off)
                        "capacity_missed_at": (a["next_up"], z["next_up"]),
                        "capacity_floors": (a["value"], z["value"]) if bound == "both floors" else None,
                        # each side's kind of lower bound: "floor" (at the stated maximum) or "unbracketed"
                        "capacity_floor_bounds": (a["bound"], z["bound"]),
                        # each side's planned levels above its capacity that did not run (a floor cut short)
                        "capacity_not_run": (
                            not_run_between(a, lo=a["value"]),
                            not_run_between(z, lo=z["value"]),
                        ),
                        "loop": key[2],
                        "rate_unit": a["rate_unit"],
                    }
                )
    return pd.DataFrame(rows)


def _on_and_off(
    frame: pd.DataFrame, pair: dict[bool, str], index: list[str]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The cache-on column's rows and the cache-off one's (``pair``: on -> label), by ``index``."""
    on, off = (frame[frame["backend"] == pair[v]].set_index(index) for v in (True, False))
    return on, off


def capacity_bound(on: str, off: str) -> str:
    """What capacity on ÷ off is, from the two capacities' bounds: a ratio, at least or at most one (a floor,
    "every level met it" or the run stopped before the next planned level, on one side), more or less than
    one where a side met the target at no level (its capacity is below the lowest level it missed at,
    whatever the other side's bound), or none (floors on both sides, or no level met on either: their
    quotient says nothing). A capacity with no miss below where its search stopped ("unbracketed") bounds
    the ratio as a floor does."""
    on, off = (LOWER_BOUNDS.get(b, b) for b in (on, off))
    if on == off == "floor":
        return "both floors"
    if on == off == "none":
        return "both none"
    if "none" in (on, off):
        return "more than" if off == "none" else "less than"
    return "at least" if on == "floor" else "at most" if off == "floor" else "ratio"


LOWER_BOUNDS = {"unbracketed": "floor"}  # a capacity that is only a lower bound, as a floor is


def _capacity_ratio(on: pd.Series, off: pd.Series, bound: str) -> float | None:
    """Capacity on ÷ off; where a side held no level, the bound from the level it missed at."""
    if bound == "more than":
        return _ratio(on["value"], off["next_up"])
    if bound == "less than":
        return _ratio(on["next_up"], off["value"])
    return None if bound == "both none" else _ratio(on["value"], off["value"])


def _overlap(a: pd.Series, b: pd.Series) -> bool | None:
    """Whether two levels' output tok/s intervals overlap (neither lies wholly above the other); None where
    either has none."""
    above = (tps_above(a, b), tps_above(b, a))
    return None if None in above else not any(above)


def _ratio(a: Any, b: Any) -> float | None:
    a, b = num(a), num(b)
    return a / b if a is not None and b else None
