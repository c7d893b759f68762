"""How many users one GPU holds: each level's steady state, the capacity within each target, what prefix
caching buys, energy and cost, from the load records (``contract.level_stats``, ``contract.capacity``).

- a level's figures are its **steady state** (the first wave of C requests apart, the window from the
  first submit after it to the last submit; ``contract.level_stats``), with the first wave's TTFT in
  its own columns and the share of the window that had C in flight; tok/s carries a bootstrap
  interval over 5 time blocks of the window (one run, not repeats);
- per-user tok/s = 1000 ÷ the steady TPOT p50 (the decode speed a user sees); per-GPU tok/s = the
  steady output tok/s (one GPU a backend here);
- **capacity**: per backend, workload, variant and loop (closed: concurrency, open: Poisson rate) and
  target, the highest level meeting the target (``contract.capacity``: "≥ C" when every level met it,
  a bracket when the search's budget ran out), what limited it at the next level up; a target with
  no limits (throughput only, as the default ``batch:``) has the level of peak tok/s without a failed
  request instead (bound "peak"); the rows of one backend, workload, variant and loop come from one
  ``CapacityGroup``, with the levels its run planned and never reached (``not_run``: a run cut by its
  deadline), neither met nor missed;
- **energy** (``contract.level_energy``, one definition each): J per 1,000 output tokens (steady window) =
  the GPU's energy between the steady window's two ends (NVML's counter, read along the level on the
  records' clock, interpolated at each end) ÷ the output tokens that arrived in the window (those the steady
  output tok/s counts) × 1000; beside it the **idle floor** (the GPU's power with no request in flight,
  measured for about a second before the level's first request) and the **share of the window's energy
  above the floor** (1 − floor × window s ÷ window J). A record from before the series was kept has only the
  level's whole energy: its J per 1,000 output tokens (whole level) = the GPU's energy over the whole level
  (first wave, drain and all) ÷ the output tokens of its requests that did not fail × 1000, a figure of its
  own under its own name (``energy_j_per_1k_level``), never shown as the steady one;
  cost per million output tokens = PRICE ÷ (3600 × output tok/s) × 10⁶ with ``--gpu-hour-usd PRICE``
  (a range ``LO-HI``: at each end, ``cost_per_m`` and ``cost_per_m_hi``);
- **caching**: a backend measured with its prefix cache on and off, as ratios at the same levels
  (``workloads.load.report.caching``);
- **mix**: a digest of a level's requests (each one's prompt length and turn, so their count too):
  backends are compared only at the same level with the same mix; per variant, :func:`mix_classes` groups
  the backends that ran the same requests at every level they share (the H200's hf-server and hf-cb run
  fewer turns a session: their sessions rows form a group of their own, their fixed-shape rows join the
  others').
"""

from __future__ import annotations

import hashlib
from typing import Any

import pandas as pd

from llm_call_anatomy.contract.level_energy import window_energy
from llm_call_anatomy.contract.level_facts import LevelFacts
from llm_call_anatomy.contract.level_flags import level_kind, level_name
from llm_call_anatomy.contract.level_stats import LevelStats, level_stats, over_starts
from llm_call_anatomy.contract.price import GpuPrice, price_from
from llm_call_anatomy.contract.slo import DEFAULT_SPECS, Target, parse_targets, percentile
from llm_call_anatomy.reports.analysis.status import unreached_levels
from llm_call_anatomy.reports.stats import num
from llm_call_anatomy.workloads.load.report import targets as slo_targets
from llm_call_anatomy.workloads.load.report.capacity_group import CapacityGroup
from llm_call_anatomy.workloads.load.report.levels import level_facts, requests

KEY = ["backend", "workload", "mode", "case"]
SMALL_N = 100  # a p99 from fewer requests is close to their maximum


def targets_of(envs: dict[str, dict]) -> tuple[Target, ...]:
    """The run's targets (``compare.py --slo``; the first run whose targets parse: ``slo_targets.read``, whose
    ``note`` names a run passed over), else an older run's --slo pair, else the defaults."""
    if (targets := slo_targets.read(envs).first) is not None:
        return targets
    legacy = next((e["slo"] for e in envs.values() if isinstance(e.get("slo"), dict)), None)
    if legacy:  # a run made before named targets: its --slo pair, as the target "custom"
        pair = {"ttft_ms": 2000.0, "tpot_ms": 200.0, **{k: v for k, v in legacy.items() if num(v)}}
        try:
            return parse_targets([f"ttft_ms={pair['ttft_ms']:g},tpot_ms={pair['tpot_ms']:g}"])
        except ValueError:  # a pair no --slo would take (a limit of 0 or below): the defaults, as before
            pass
    return parse_targets(list(DEFAULT_SPECS))


def targets_by_column(envs: dict[str, dict], runs: dict[str, str]) -> dict[str, tuple[Target, ...]]:
    """Each column's targets (``runs``: column label -> its run id): its own run's ``slo_targets``, so that a
    merged report judges every run against the targets it was run with (issue 44 item 6: it took the first
    run's for all, and the capacities changed with the order of the run directories); a run with none that
    parse (an older run, a broken env.json) gets the page's (:func:`targets_of`)."""
    page = targets_of(envs)
    own = {run_id: slo_targets.read({run_id: env}).first for run_id, env in envs.items()}
    return {label: own.get(run_id) or page for label, run_id in runs.items()}


def distinct(targets: dict[str, tuple[Target, ...]]) -> tuple[Target, ...]:
    """Every target of the columns once, in the order of their first appearance."""
    return tuple(dict.fromkeys(t for ts in targets.values() for t in ts))


def price_of(envs: dict[str, dict]) -> GpuPrice | None:
    """The first run's recorded ``--gpu-hour-usd`` (one price, or a range: ``contract.price``), else None."""
    return next((p for p in (price_from(e.get("gpu_hour_usd")) for e in envs.values()) if p), None)


def mix_of(rows: list[dict]) -> str:
    """The level's requests as a short digest: same digest, same work."""
    shape = sorted((int(num(r.get("prompt_tokens")) or 0), int(num(r.get("turn")) or 0)) for r in rows)
    return hashlib.sha1(repr(shape).encode()).hexdigest()[:8]


def mix_classes(steady: pd.DataFrame) -> dict[tuple[str, str], list[list[str]]]:
    """Per (workload, variant): its backends in groups that ran the same requests, the largest group first
    (then in order of appearance). A backend joins a group when it ran at least one level whole (not
    stopped early, not cut) that a member ran whole too, and at every such level its mix is that member's;
    a level only one of them ran, or one cut short, says nothing either way."""
    out: dict[tuple[str, str], list[list[str]]] = {}
    if steady.empty:
        return out
    for (w, m), g in steady.groupby(["workload", "mode"], sort=False):
        whole = g[~(g["partial"].astype(bool) | g["cut"].astype(bool))]
        mixes = {
            b: dict(zip(h["case"], h["mix"], strict=True)) for b, h in whole.groupby("backend", sort=False)
        }
        out[(w, m)] = _same_request_groups(mixes, list(dict.fromkeys(g["backend"])))
    return out


def _same_request_groups(mixes: dict[str, dict[str, str]], backends: list[str]) -> list[list[str]]:
    """``backends`` grouped by their whole levels' mixes (case -> mix each), the largest group first."""

    def shared(a: str, b: str) -> list[str]:
        return [c for c in mixes.get(a, {}) if c in mixes.get(b, {})]

    groups: list[list[str]] = []
    for b in backends:
        home = next(
            (
                grp
                for grp in groups
                if any(shared(b, o) for o in grp)
                and all(mixes[b][c] == mixes[o][c] for o in grp for c in shared(b, o))
            ),
            None,
        )
        if home is None:
            groups.append([b])
        else:
            home.append(b)
    return sorted(groups, key=len, reverse=True)


def _p(xs: list[float], q: float) -> float | None:
    return percentile(xs, q) if xs else None


def level_row(
    key: tuple,
    rows: list[dict],
    level: LevelFacts | None,
    stats: LevelStats,
    starts: list[tuple[LevelStats, LevelFacts | None]] | None = None,
) -> dict[str, Any]:
    """One load level's row: its key, steady-state TTFT / TPOT / e2e / ITL percentiles with the first wave's
    TTFT apart, output tok/s with its bootstrap interval, per-user tok/s (1000 ÷ TPOT p50), energy (J per
    1,000 output tokens over the steady window, the idle floor and the share above it; an older record's
    whole-level figure under its own key), and the engine's facts (``level``: its level record's; None:
    none; ``starts``: each engine start's stats and facts, default the level's one). ``partial``: fewer
    requests started than planned; ``small_p99``: fewer than SMALL_N latencies."""
    facts = level or LevelFacts()
    window = window_energy(starts or [(stats, level)])
    s = stats.samples()
    first = stats.samples(stats.first_wave)
    served_tokens = sum(num(r.get("output_tokens")) or 0 for r in rows if not _failed(r))
    energy = num(facts.gpu_energy_j)
    tps_lo_hi = stats.tps_interval()
    tpot50 = _p(s["tpot"], 50)
    planned, started = num(facts.requests_planned), num(facts.requests_started)
    rate = num(rows[0].get("load_rate_rps")) if rows else None
    # an open loop of a sessions load starts sessions (a user's turns), not requests, at its rate
    unit = "sessions/s" if any(num(r.get("user")) is not None for r in rows) else "req/s"
    return {
        **dict(zip(KEY, key, strict=True)),
        "concurrency": stats.concurrency,
        "rate_rps": rate,
        "loop": "closed" if stats.concurrency else "open",
        "n_steady": len(stats.steady),
        "failed": stats.failed,
        "first_n": len(stats.first_wave),
        "first_ttft_p50": _p(first["ttft"], 50),
        "first_ttft_p90": _p(first["ttft"], 90),
        **{f"ttft_p{q}": _p(s["ttft"], q) for q in (50, 90, 99)},
        "tpot_p50": tpot50,
        "tpot_p90": _p(s["tpot"], 90),
        "e2e_p50": _p(s["e2e"], 50),
        "e2e_mean": sum(s["e2e"]) / len(s["e2e"]) if s["e2e"] else None,  # Little's law's R (sizing)
        "e2e_p90": _p(s["e2e"], 90),
        "itl_p50": _p(s["itl"], 50),
        "itl_p99": _p(s["itl"], 99),
        "n_latency": len(s["ttft"]),
        "small_p99": len(s["ttft"]) < SMALL_N,
        "output_tps": stats.output_tps,
        "output_tps_lo": tps_lo_hi[0] if tps_lo_hi else None,
        "output_tps_hi": tps_lo_hi[1] if tps_lo_hi else None,
        "input_tps": stats.input_tps,
        # steady requests (submitted in the window) a second: what a $ per request divides
        "requests_per_s": stats.requests_per_s,
        "requests_per_session": _per_session(rows),
        "total_tps": stats.total_tps,
        "in_flight_share": stats.in_flight_share,
        "no_steady": stats.no_steady,
        "per_user_tps": 1000 / tpot50 if tpot50 else None,
        "energy_j_per_1k_steady": window.j_per_1k if window else None,
        "idle_w": window.idle_w if window else num(facts.gpu_idle_w),
        "above_idle_share": window.above_idle_share if window else None,
        "window_energy_j": window.joules if window else None,
        # a record without the energy series: the whole level's energy, under its own name
        "energy_j_per_1k_level": energy / served_tokens * 1000
        if window is None and energy is not None and served_tokens
        else None,
        "power_w": num(facts.gpu_power_w_mean),
        "gpu_util": num(facts.gpu_util_pct_mean),
        "gpu_memory_gb": (num(facts.gpu_memory_used_peak_bytes) or 0) / 1e9 or None,
        "telemetry": facts.gpu_telemetry,
        "kv_peak": num(facts.kv_cache_usage_peak),
        "preemptions": num(facts.preemptions),
        "searched_for": facts.searched_for,
        "level_kind": level_kind(stats.concurrency, rate, facts, unit),
        "level": level_name(key[KEY.index("case")], facts.think_time_s),  # as shown: U=N for users who think
        "users": num(facts.users),
        "in_flight_mean": num(facts.in_flight_mean),
        "in_flight_p90": num(facts.in_flight_p90),
        "arrivals_per_s": num(facts.arrivals_per_s),
        "think_time_s": num(facts.think_time_s),
        "partial": bool(planned and started is not None and started < planned),
        "cut": level is None,  # no level record: the run stopped inside the level (a deadline, a crash)
        "mix": mix_of(rows),
        "rate_unit": unit,
        "mean_prompt": sum(num(r.get("prompt_tokens")) or 0 for r in rows) / len(rows) if rows else None,
    }


def _per_session(rows: list[dict]) -> float | None:
    """A sessions level's requests per user (its turns), None for a level without users (fixed shape)."""
    users = [u for r in rows if (u := num(r.get("user"))) is not None]
    return len(users) / len(set(users)) if users else None


def tps_above(a: Any, b: Any) -> bool | None:
    """Whether level row ``a``'s output tok/s interval (``output_tps_lo``-``hi``; a dict or a Series) lies
    wholly above ``b``'s; None where either bound is missing. The one reading of "beyond the spread within a
    run" for level rows: the throughput verdict and the caching ratios both use it."""
    lo, hi = num(a.get("output_tps_lo")), num(b.get("output_tps_hi"))
    return None if lo is None or hi is None else lo > hi


def _failed(r: dict) -> bool:
    e = r.get("error")
    return e is not None and e == e


def analyse(
    rows: pd.DataFrame,
    facts: dict[tuple, LevelFacts],
    targets: tuple[Target, ...] | dict[str, tuple[Target, ...]],
    price: GpuPrice | None,
    planned: dict[str, list[tuple[str, str, str]]] | None = None,
    skipped: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The steady levels, the capacities (with energy and cost at each) for the Load section; ``targets``:
    one set for every column, or each column's own (:func:`targets_by_column`; a column missing from it is
    judged against the first column's); ``planned``: per backend column, the load levels its run planned,
    (workload, mode, case) (``Dataset.planned_levels``), so that each capacity row names the planned levels
    of its loop that have no records (``not_run``); ``skipped``: backend column -> why it skipped the workload
    (its rows then say so, never "not run"). Each capacity row carries its target's ``target_label``
    (name and limits): two columns judged against one name with other limits are never the same target."""
    by_column = targets if isinstance(targets, dict) else {}
    fallback = next(iter(by_column.values()), ()) if by_column else targets

    def of(backend: str) -> tuple[Target, ...]:
        return by_column.get(backend, fallback)

    reqs = requests(rows)
    start_facts = level_facts(rows, by_start=True)
    stats: dict[tuple, LevelStats] = {}
    starts: dict[tuple, dict[str, tuple[LevelStats, LevelFacts | None]]] = {}
    out = []
    for key, g in reqs.groupby(KEY, sort=False):
        c = num(g["load_concurrency"].iloc[0])
        # each engine start ran the level on its own clock: its steady state is its own (over_starts)
        by_start = g.groupby("start", sort=True) if "start" in g else []
        labelled = [(s, part.to_dict("records")) for s, part in by_start]
        per_start = [part for _, part in labelled] or [g.to_dict("records")]
        recs = [r for part in per_start for r in part]
        parts = [level_stats(part, int(c) if c else None) for part in per_start]
        stats[key] = over_starts(parts)
        starts[key] = {
            s: (st, start_facts.get((*key, s), facts.get(key)))
            for (s, _), st in zip(labelled, parts, strict=True)
        }
        row = level_row(key, recs, facts.get(key), stats[key], list(starts[key].values()) or None)
        # each start's steady output tok/s: what a throughput ranking across backends must beat
        row["per_start_tps"] = tuple(p.output_tps for p in stats[key].parts or [stats[key]])
        if len(per_start) > 1:  # each start runs the level's requests once: the mix is one start's
            mixes = {mix_of(part) for part in per_start}  # (starts that differ keep the pool's)
            row["mix"] = mixes.pop() if len(mixes) == 1 else row["mix"]
        out.append(row)
    levels = pd.DataFrame(out)
    unreached = {b: not_run_levels(levels) for b, levels in unreached_levels(rows, planned).items()}
    caps, made = [], set()
    if not levels.empty:
        for (b, w, m, loop), g in levels.groupby(["backend", "workload", "mode", "loop"], sort=False):
            made.add((b, w, m, loop))
            unit = "sessions/s" if (g["rate_unit"] == "sessions/s").any() else "req/s"
            not_run = unreached.get(b, {}).get((w, m, loop), ())
            group = CapacityGroup(
                backend=b,
                workload=w,
                mode=m,
                loop=loop,
                rate_unit=unit,
                gpu_hour_usd=price,
                not_run=not_run,
                facts=facts,
                starts=starts,
                think_s=max((num(x) or 0.0 for x in g["think_time_s"]), default=0.0)
                if loop == "closed"
                else 0.0,
            )
            caps.extend(
                with_label(group.peak_row(t, g) if t.throughput_only else group.capacity_row(t, g, stats), t)
                for t in of(b)
            )
    # a variant and loop the run planned and never reached (cut before it): rows that say so, one a target;
    # an open loop's unit is its workload's (a workload's loads are all sessions or none)
    workloads = set(rows["workload"])
    sessions = set(levels["workload"][levels["rate_unit"] == "sessions/s"]) if len(levels) else set()
    for b, groups in unreached.items():
        for (w, m, loop), xs in groups.items():
            if w in workloads and (b, w, m, loop) not in made:
                unit = "sessions/s" if w in sessions else "req/s"
                group = CapacityGroup(b, w, m, loop, unit, price, not_run=xs)
                why = (skipped or {}).get(b)
                caps.extend(
                    with_label(group.skipped_row(t, why) if why else group.not_run_row(t), t) for t in of(b)
                )
    own = {b: of(b) for b in dict.fromkeys(r["backend"] for r in caps)}
    return {
        "steady": levels,
        "capacity": pd.DataFrame(caps),
        "targets": distinct(own) if own else tuple(fallback),
        "targets_of": own,  # column -> the targets its capacity rows were judged against
        "price": price,
    }


def with_label(row: dict[str, Any], target: Target) -> dict[str, Any]:
    return {**row, "target_label": target.label()}


def planned_level(case: str) -> tuple[str, float] | None:
    """A planned level's loop and value from its case (``C=8``: closed, 8; ``rate=0.5``: open, 0.5); None for
    a case that names neither."""
    for prefix, loop in (("C=", "closed"), ("rate=", "open")):
        if case.startswith(prefix):
            try:
                return loop, float(case[len(prefix) :])
            except ValueError:
                return None
    return None


def not_run_levels(unreached: list[tuple[str, str, str]]) -> dict[tuple[str, str, str], tuple[float, ...]]:
    """Per (workload, mode, loop): the levels of ``unreached`` (one column's planned levels with no record,
    (workload, mode, case): ``reports.analysis.status.unreached_levels``), sorted."""
    out: dict[tuple[str, str, str], set[float]] = {}
    for w, m, case in unreached:
        found = planned_level(case)
        if found is not None:
            out.setdefault((w, m, found[0]), set()).add(found[1])
    return {key: tuple(sorted(xs)) for key, xs in out.items()}


def known(x: object) -> bool:
    """A value that is there: neither None nor NaN (``reports.stats.num``'s reading of a missing number)."""
    return num(x) is not None


def not_run_between(r: dict, lo: object = None, hi: object = None) -> list[float]:
    """``r``'s planned levels that did not run (``not_run``) strictly between ``lo`` and ``hi`` (None or NaN:
    no bound on that side)."""
    xs = r.get("not_run")
    xs = list(xs) if isinstance(xs, list | tuple) else []
    return [x for x in xs if (not known(lo) or x > lo) and (not known(hi) or x < hi)]
