"""The two-GPU comparison (issue 25): per configuration (tp=2, dp=2 behind each router) and load level,
throughput, TTFT and TPOT percentiles, and the prefix-cache hit share expected from the prompts beside the
one reported, in all and per replica.

A column's configuration comes from its run's env.json: ``parallel`` (tp, dp, router flag, written by the
harness) and the backend's ``engine.parallel`` (router and policy as the adapter recorded them,
``backends.parallel``); a run made before ``--dp`` existed is tp from its ``args`` and dp=1. The view is
shown only where some column of the section ran with dp > 1: otherwise there is nothing to compare.

Figures (one definition each, as the rest of the Load section):
- output tok/s, TTFT p50/p99 and TPOT p50/p99 are ``analysis.many_users``'s (caller side, every request);
- expected hit share = tokens each prompt shares with what came before it ÷ prompt tokens
  (``expected_reuse``): what a perfect cache-aware router could serve from cache; reported = the engine's
  cached tokens ÷ prompt tokens over the level's requests (``reported_reuse``);
- users within each latency target: the capacity section's figure for the column (``analysis.capacity``),
  beside its configuration;
- per replica: that replica's prefix-cache hits ÷ the prompt tokens it looked up over the level (the server's
  /metrics counters per ``engine`` / ``dp_rank`` label, differenced over the level:
  ``extra.level.replica{R}_prefix_cache_hits`` / ``..._queries``), and its share of all lookups (how evenly
  the router spread the work).
"""

from __future__ import annotations

import re
from typing import Any

import pandas as pd

from llm_call_anatomy.contract.level_facts import LevelFacts
from llm_call_anatomy.reports.stats import num
from llm_call_anatomy.workloads.load.report import levels as mu

COLUMNS = [
    "config",
    "engine",
    "backend",
    "workload",
    "mode",
    "case",
    "level",
    "requests",
    "output_tps",
    "ttft_p50",
    "ttft_p99",
    "tpot_p50",
    "tpot_p99",
    "expected_reuse",
    "reported_reuse",
    "replicas",
]
# what the level table's row gives as it is (the rest of COLUMNS is worked out here)
FROM_LEVEL = [c for c in COLUMNS if c not in ("config", "engine", "tpot_p99", "replicas")]
REPLICA_KEY = re.compile(r"^replica(?P<r>[^_]+)_prefix_cache_(?P<what>hits|queries)$")


def configuration(ds: Any, label: str) -> dict[str, Any]:
    """tp, dp, router and policy of one column, and its name on the page (``tp=2``,
    ``dp=2 · sglang-router cache_aware``)."""
    run_env, engine = ds.run_env_of(label), (ds.env_of(label).get("engine") or {})
    flags = run_env.get("parallel") or {}
    recorded = engine.get("parallel") or {}
    tp = int(recorded.get("tp") or flags.get("tp") or (run_env.get("args") or {}).get("tp") or 1)
    dp = int(recorded.get("dp") or flags.get("dp") or 1)
    router, policy = recorded.get("router"), recorded.get("policy")
    name = (
        f"tp={tp}"
        if dp == 1
        else f"dp={dp}"
        + (f" (tp={tp} each)" if tp > 1 else "")
        + " · "
        + " ".join(str(x) for x in (router or flags.get("router") or "internal", policy) if x)
    )
    return {
        "tp": tp,
        "dp": dp,
        "router": router,
        "policy": policy,
        "config": name,
        "engine": engine_of(engine, label),
    }


def engine_of(engine: dict[str, Any], label: str) -> str:
    """The engine a column ran, from what it recorded (a server's ``server_kind``; an in-process engine's
    version key), never from its backend name; the label where it says neither."""
    if engine.get("server_kind"):
        return str(engine["server_kind"])
    return next((name for name in ("vllm", "sglang") if name in engine), label)


def per_replica(facts: LevelFacts) -> dict[str, dict[str, float | None]]:
    """{replica: {"hit_share": hits ÷ queries, "lookup_share":
    its queries ÷ all}} from a level record's facts (its ``replica_figures``)."""
    counts: dict[str, dict[str, float]] = {}
    for key, value in facts.replica_figures.items():
        m = REPLICA_KEY.match(key)
        v = num(value)
        if m and v is not None and v >= 0:  # a counter that went down (a reset) is no figure
            counts.setdefault(m["r"], {})[m["what"]] = v
    total = sum(c.get("queries", 0.0) for c in counts.values())
    return {
        r: {
            "hit_share": c["hits"] / c["queries"] if c.get("queries") and "hits" in c else None,
            "lookup_share": c.get("queries", 0.0) / total if total else None,
        }
        for r, c in sorted(counts.items())
    }


def configurations(rows: pd.DataFrame, levels: pd.DataFrame, ds: Any) -> pd.DataFrame:
    """One row per column and level, where some column ran with dp > 1; else an empty frame."""
    labels = list(dict.fromkeys(levels["backend"]))
    configs = {b: configuration(ds, b) for b in labels}
    if not any(c["dp"] > 1 for c in configs.values()):
        return pd.DataFrame(columns=COLUMNS)
    reqs, facts = mu.requests(rows), mu.level_facts(rows)
    tpot = {
        key: g[g["error"].isna()]["decode_ms_per_token"]
        for key, g in reqs.groupby(["backend", "workload", "mode", "case"], sort=False)
    }
    out = []
    for r in levels.to_dict("records"):
        key = (r["backend"], r["workload"], r["mode"], r["case"])
        values = tpot.get(key, pd.Series(dtype=float))
        out.append(
            {
                "config": configs[r["backend"]]["config"],
                "engine": configs[r["backend"]]["engine"],
                **{k: r[k] for k in FROM_LEVEL},
                "tpot_p99": mu.percentile(values, 99),
                "replicas": per_replica(facts.get(key) or LevelFacts()),
            }
        )
    return pd.DataFrame(out, columns=COLUMNS)


def capacities(capacity_rows: pd.DataFrame, configs: pd.DataFrame) -> pd.DataFrame:
    """The capacity section's rows (users within each latency target, ``analysis.capacity``) of the columns in
    ``configs``, each with its configuration and engine; empty without both."""
    if configs.empty or capacity_rows is None or capacity_rows.empty:
        return pd.DataFrame()
    names = configs.drop_duplicates("backend").set_index("backend")[["config", "engine"]]
    rows = capacity_rows[capacity_rows["backend"].isin(names.index)]
    return rows.join(names, on="backend")
