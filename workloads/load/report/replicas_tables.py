"""The Load section's replica view (issue 25): tp=2 against dp=2 behind each router, per engine and level.

Built from ``analysis.replicas``; shown only where a column ran with dp > 1. One table per engine: a row per
configuration and level with output tok/s, TTFT and TPOT p50 / p99, the hit share expected from the prompts
beside the one the engine reported, and each replica's own hit share and share of the lookups.
"""

from __future__ import annotations

import pandas as pd

from llm_call_anatomy.reports import fmt
from llm_call_anatomy.reports.model import Caveat
from llm_call_anatomy.reports.views import Block, Table, compact, h3, p, table
from llm_call_anatomy.workloads.load.report.capacity_cells import capacity_text


def replica_cell(replicas: dict) -> str:
    if not replicas:
        return "–"
    return "; ".join(
        f"#{r}: {fmt.pct(v['hit_share'])} hit, {fmt.pct(v['lookup_share'])} of lookups"
        for r, v in replicas.items()
    )


def engine_table(rows: pd.DataFrame) -> Table:
    """One engine's replica table: a row per configuration and level with output tok/s, TTFT and TPOT p50 /
    p99, the hit share expected vs reported, and each replica's own hit share and share of the lookups."""
    t = Table(
        [
            "configuration",
            "variant",
            "load",
            "requests",
            "output tok/s",
            "TTFT p50 / p99 ms",
            "TPOT p50 / p99 ms",
            "hit share expected / reported",
            "per replica (its hits ÷ its lookups; its share of lookups)",
        ],
        numeric={3, 4, 5, 6},
    )
    for r in rows.to_dict("records"):
        t.add(
            [
                r["config"],
                f"{r['workload']} · {r['mode']}",
                r["level"],
                f"{r['requests']}",
                fmt.n(r["output_tps"]),
                f"{fmt.n(r['ttft_p50'])} / {fmt.n(r['ttft_p99'])}",
                f"{fmt.n(r['tpot_p50'], 2)} / {fmt.n(r['tpot_p99'], 2)}",
                f"{fmt.pct(r['expected_reuse'])} / {fmt.pct(r['reported_reuse'])}",
                replica_cell(r["replicas"]),
            ]
        )
    return t


def capacity_rows_table(caps: pd.DataFrame) -> Table:
    """The capacities of the replica configurations: per engine configuration, variant, loop and target, the
    cell written as the capacity table writes it (:func:`capacity_cells.capacity_text`)."""
    t = Table(["configuration", "variant", "loop", "target", "users within it (capacity)"])
    for r in caps.sort_values(["engine", "workload", "mode", "loop", "target"], kind="stable").to_dict(
        "records"
    ):
        t.add(
            [
                f"{r['engine']} {r['config']}",
                f"{r['workload']} · {r['mode']}",
                "concurrency" if r["loop"] == "closed" else "Poisson rate",
                r["target"],
                capacity_text(r),
            ]
        )
    return t


def blocks(configs: pd.DataFrame, caps: pd.DataFrame | None = None) -> list[Block]:
    """The two-GPU comparison's blocks (tp against dp behind a router): one table per engine of each
    configuration's levels, and the capacity per configuration where there is one."""
    if configs is None or configs.empty:
        return []
    out: list[Block | None] = [
        h3("Two GPUs, two ways: one model split (tp) against replicas behind a router (dp)"),
        p(
            "Each row is one run's configuration at one load level: tp=N splits one model over N GPUs; dp=N "
            "runs N replicas, each with its own KV cache, behind the engine's own balancer (vLLM's DP "
            "coordinator, SGLang's data-parallel controller) or SGLang's router (sglang-router) with its "
            "policy. Hit share expected = tokens each prompt shares with what came before it ÷ prompt tokens "
            "(what a router that always finds the turn's history could serve from cache); reported = the "
            "engine's cached tokens ÷ prompt tokens. Per replica: the server's /metrics prefix-cache "
            "counters of that replica over the level (hits ÷ tokens looked up), and its share of all "
            "lookups. TTFT and TPOT at the caller, every request of the level.",
            muted=True,
        ),
    ]
    for engine, rows in configs.groupby("engine", sort=False):
        out += [p(f"{engine}"), table(engine_table(rows))]
    if caps is not None and not caps.empty:
        out += [
            p(
                "Users within each latency target, per configuration (the capacity section's figures: the "
                "highest level whose steady state met the target).",
                muted=True,
            ),
            table(capacity_rows_table(caps)),
        ]
    return compact(out)


def caveats(section) -> list:
    """What the replica table cannot say: a ranking from one run per configuration, and a dp > 1 configuration
    whose replicas reported no counters."""
    configs = section.data.get("replicas")
    if configs is None or configs.empty:
        return []
    out = []
    if configs["config"].nunique() > 1:
        out.append(
            Caveat(
                section.name,
                "Two GPUs, two ways: each row is one level of one configuration's run, with "
                "no spread between engine starts on it, so the table compares the "
                "configurations and ranks none of them.",
            )
        )
    silent = sorted(
        {
            r["config"]
            for r in configs.to_dict("records")
            if r["config"].startswith("dp=") and not r["replicas"]
        }
    )
    if silent:
        out.append(
            Caveat(
                section.name,
                f"{', '.join(silent)}: no per-replica prefix-cache counters in the level "
                "records (the engine's /metrics said nothing per replica): its hit share "
                "is the total only.",
            )
        )
    return out
