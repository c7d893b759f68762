"""The trace kind's figures, from its records: the trace window's shape, and per backend and time scale the
open-loop level's latency, throughput and verdicts against the run's targets.

One definition of every figure, the load kind's (``contract.level_stats``: an open level has no first wave,
its window runs from the first to the last submit; ``contract.capacity.judge``: each target's verdict with
its bootstrap interval, and the level's flags: submit lag, offered rate, overload):

- **shape** (per workload, from the level records' ``extra.level.trace``, written by the planner): the
  window's requests, those sent and dropped (and the rule), input and output tokens p50 / p99, arrivals
  per minute in the trace's own time, and the share of prefix blocks seen before in the window (what an
  unbounded prefix cache could reuse);
- **levels** (per backend, workload and time scale): requests, failed, output and input tok/s over the
  steady window, TTFT and TPOT p50 / p99, the p99 submit lag (``submit_s - planned_submit_s``), the prefix
  reuse the trace allows (``shared_prefix_tokens`` ÷ prompt tokens) beside what the engine reported
  (``cached_tokens`` ÷ prompt tokens, where it reports them), and each target's decision;
- **capacity** (per backend, workload and target): the bracket of time scales the traffic holds, [last
  pass, first miss] (``contract.capacity.capacity``, the load kind's search's judgement: the levels the
  search added over the time scale count with the planned ones), the trace's requests and input tokens per
  second at the last pass, and the GPUs the trace needs at 1x over that bracket (:func:`gpus_at_1x`).
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from llm_call_anatomy.contract.capacity import DEFAULT_RATIO, judge
from llm_call_anatomy.contract.capacity import capacity as contract_capacity
from llm_call_anatomy.contract.level_facts import LevelFacts
from llm_call_anatomy.contract.level_stats import level_stats
from llm_call_anatomy.contract.records import record_place
from llm_call_anatomy.contract.slo import Target, parse_targets, percentile
from llm_call_anatomy.contract.traffic_classes import ALL, every_class, judge_classes
from llm_call_anatomy.reports.stats import num

KEY = ["backend", "workload", "mode", "case"]


def targets_of(envs: dict[str, dict]) -> tuple[Target, ...]:
    """The first run's ``--slo`` targets that parse, else the defaults (``contract.slo.DEFAULT_SPECS``)."""
    for env in envs.values():
        specs = env.get("slo_targets")
        if isinstance(specs, list) and specs:
            try:
                return parse_targets(specs)
            except ValueError:
                continue
    return parse_targets(None)


def _rows(df: pd.DataFrame, levels: bool) -> pd.DataFrame:
    if df.empty or "kind" not in df:
        return df.iloc[0:0]
    rows = df[(df["kind"] == "trace") & df["skipped"].isna()]
    if levels:
        return rows[rows["rep"].isna()]
    return rows[rows["rep"].notna() & rows["submit_s"].notna()] if "submit_s" in rows else rows.iloc[0:0]


def level_facts(df: pd.DataFrame) -> dict[tuple, LevelFacts]:
    """(backend, workload, mode, case) -> the level record's ``extra.level``."""
    out = {}
    for r in _rows(df, levels=True).to_dict("records"):
        level = (r.get("extra") or {}).get("level")
        if isinstance(level, dict):
            out[tuple(r[k] for k in KEY)] = LevelFacts.from_dict(level, record_place(r))
    return out


def _share(rows: list[dict], key: str) -> float | None:
    prompt = sum(num(r.get("prompt_tokens")) or 0 for r in rows)
    have = [num(r.get(key)) for r in rows]
    if not prompt or all(v is None for v in have):
        return None
    return sum(v or 0 for v in have) / prompt


def analyse(df: pd.DataFrame, targets: tuple[Target, ...]) -> dict[str, Any]:
    """The section's data: ``shape`` (per workload), ``levels`` (per backend and scale), ``capacity``."""
    facts = level_facts(df)
    shape = {}
    for key, f in facts.items():
        if isinstance(f.trace, dict):
            shape.setdefault(key[1], {k: v for k, v in f.trace.items() if k != "time_scale"})
    out = []
    # (backend, workload, what is judged) -> (its target, time scale -> (verdict, facts))
    judged: dict[tuple, tuple[Target, dict[float, tuple]]] = {}
    for key, g in _rows(df, levels=False).groupby(KEY, sort=False):
        rows = g.to_dict("records")
        f = facts.get(key) or LevelFacts()
        stats = level_stats(rows, None)
        samples = stats.samples(rows)
        lags = [
            (num(r.get("submit_s")) - num(r.get("planned_submit_s"))) * 1e3
            for r in rows
            if num(r.get("planned_submit_s")) is not None and num(r.get("submit_s")) is not None
        ]
        row = dict(zip(KEY, key, strict=True))
        row.update(
            time_scale=num((f.trace or {}).get("time_scale")),
            rate_rps=num(g["load_rate_rps"].iloc[0]) if "load_rate_rps" in g else None,
            requests=len(rows),
            failed=sum(bool(r.get("error")) and not isinstance(r.get("error"), float) for r in rows),
            output_tps=stats.output_tps,
            input_tps=stats.input_tps,
            no_steady=stats.no_steady,
            ttft_p50=percentile(samples["ttft"], 50),
            ttft_p99=percentile(samples["ttft"], 99),
            tpot_p50=percentile(samples["tpot"], 50),
            tpot_p99=percentile(samples["tpot"], 99),
            lag_p99_ms=percentile(lags, 99),
            reuse_trace=_share(rows, "shared_prefix_tokens"),
            reuse_engine=_share(rows, "cached_tokens"),
        )
        k = row["time_scale"]

        def add(label: str, t: Target, verdict: Any, key: tuple = key, k: Any = k, f: LevelFacts = f) -> None:
            if k is not None:
                judged.setdefault((key[0], key[1], label), (t, {}))[1][k] = (verdict, f)

        for t in targets:
            if not t.throughput_only:
                verdict = judge(t, stats, f)
                row[f"verdict:{t.name}"] = verdict.decision
                add(t.label(), t, verdict)
        per_class = judge_classes(rows, stats, f, targets)  # mixed traffic: each class at its own target
        for c, (t, verdict) in per_class.items():
            row[f"class:{c}"] = verdict.decision
            add(f"{c} requests: {t.label()}", t, verdict)
        both = every_class(per_class)
        if both is not None:
            row[f"class:{ALL}"] = both.decision
            add(ALL, next(iter(per_class.values()))[0], both)
        out.append(row)
    levels = pd.DataFrame(out)
    caps = capacity(judged, targets, shape)
    return {"shape": shape, "levels": levels, "capacity": caps, "targets": targets}


def capacity(
    judged: dict[tuple, dict[float, tuple]], targets: tuple[Target, ...], shape: dict
) -> pd.DataFrame:
    """Per backend, workload and target: the bracket of time scales the traffic holds (``contract.capacity``:
    [last pass, first miss], in scales of the trace), the trace's requests and input tokens per second at
    its last pass, and the GPUs the trace needs at 1x over that bracket (:func:`gpus_at_1x`)."""
    out = []
    for (b, w, label), (target, levels) in judged.items():
        s = shape.get(w) or {}
        ceiling = max(
            (num(((f.trace or {}).get("search_max_scale"))) or 0 for _, f in levels.values()), default=0
        )
        ratio = next((num((f.trace or {}).get("search_ratio")) for _, f in levels.values()), None)
        c = contract_capacity(target, "open", levels, ceiling or None, ratio or DEFAULT_RATIO)
        span = num(s.get("window_s"))

        def per_s(n: float | None, c=c, span=span) -> float | None:  # at the last pass
            return c.value * n / span if c.value and span and n is not None else None

        lo_gpus, hi_gpus = gpus_at_1x(c.value, c.next_up)
        out.append(
            {
                "backend": b,
                "workload": w,
                "target": label,
                "holds": c.value,
                "next_up": c.next_up,
                "bound": c.bound,
                "why": c.limiter,
                "undecided": c.undecided,
                "ratio": c.ratio,
                "rps": per_s(num(s.get("sent"))),
                "input_tps": per_s(num(s.get("input_tokens"))),
                "gpus_low": lo_gpus,
                "gpus_high": hi_gpus,
            }
        )
    return pd.DataFrame(out)


def gpus_at_1x(lo: float | None, hi: float | None) -> tuple[int | None, int | None]:
    """The GPUs the trace needs at 1x, as (fewest, most), from the bracket of the time scale one GPU holds,
    k in [lo, hi): n GPUs each taking 1/n of the traffic hold it when 1/n <= k, so n = ceil(1/k), between
    floor(1/hi) + 1 (k < hi) and ceil(1/lo) (k >= lo). None where an end is unknown (no pass: at least the
    fewest; no miss: at most the most)."""
    most = max(1, math.ceil(1 / lo - 1e-9)) if lo else None
    fewest = math.floor(1 / hi + 1e-9) + 1 if hi else None
    if fewest is not None and most is not None:
        fewest = min(fewest, most)
    return fewest, most
