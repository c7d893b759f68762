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
- **capacity** (per backend, workload and target): the fastest time scale that passed with every slower
  one passing too, and the first that did not (a bracket), in scales of the trace's traffic.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from contract.capacity import judge
from contract.level_facts import LevelFacts
from contract.level_stats import level_stats
from contract.slo import Target, parse_targets, percentile
from reports.stats import num

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
            out[tuple(r[k] for k in KEY)] = LevelFacts.from_dict(level)
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
        for t in targets:
            if not t.throughput_only:
                row[f"verdict:{t.name}"] = judge(t, stats, f).decision
        out.append(row)
    levels = pd.DataFrame(out)
    return {"shape": shape, "levels": levels, "capacity": capacity(levels, targets), "targets": targets}


def capacity(levels: pd.DataFrame, targets: tuple[Target, ...]) -> pd.DataFrame:
    """Per backend, workload and target: the fastest scale passed with every slower one passed too
    (``holds``), and the first scale above it that did not pass (``next_up``: None: every scale passed)."""
    out = []
    if levels.empty:
        return pd.DataFrame(out)
    for (b, w), g in levels.groupby(["backend", "workload"], sort=False):
        g = g.sort_values("time_scale")
        for t in targets:
            col = f"verdict:{t.name}"
            if col not in g:
                continue
            holds, next_up, why = None, None, None
            for k, d in zip(g["time_scale"], g[col], strict=True):
                if d == "pass":
                    holds = k
                    continue
                next_up, why = k, d
                break
            out.append(
                {
                    "backend": b,
                    "workload": w,
                    "target": t.label(),
                    "holds": holds,
                    "next_up": next_up,
                    "why": why,
                }
            )
    return pd.DataFrame(out)
