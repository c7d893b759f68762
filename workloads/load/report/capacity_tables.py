"""The Load section's capacity tables: the capacity per target and the steady state of every level.

:func:`capacity_table` is a row per backend, variant, loop and target (the capacity, its evidence, what
limited it, tok/s, energy and cost); :func:`steady_table` one backend's levels side by side with the
others' (their population, each target's verdict, latency percentiles, tok/s and energy); the energy
columns both share (:func:`energy_columns`). Data from ``capacity``; a capacity cell's words are
``capacity_cells``'. The page blocks around the tables and the section's caveat are
``capacity_blocks``' (all in this folder).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from llm_call_anatomy.reports import fmt
from llm_call_anatomy.reports.views import Table
from llm_call_anatomy.workloads.load.report import labels as names
from llm_call_anatomy.workloads.load.report.capacity import known
from llm_call_anatomy.workloads.load.report.capacity_cells import (
    capacity_text,
    evidence_text,
    population_text,
    starts_text,
)
from llm_call_anatomy.workloads.load.report.cost import cost_cell
from llm_call_anatomy.workloads.load.report.mix_groups import variants


def differ(targets_of: dict[str, tuple] | None) -> bool:
    """Whether the columns were judged against different targets (their runs were run with others)."""
    return len(set((targets_of or {}).values())) > 1


def capacity_table(
    caps: pd.DataFrame, via: dict[str, str] | None = None, classes: dict | None = None, differ: bool = False
) -> Table:
    """The capacity table: a row per backend, variant, loop and target, sorted so that a variant's rows stay
    together, with its capacity, what limited it at the next level up, tok/s there and per user, energy and
    cost. ``via`` says how each backend was served (in process or HTTP); a backend of a group that ran other
    requests (``classes``) has its variant say so, its rows after the main group's. ``differ``: the columns
    were judged against different targets, so each row names its target's limits too."""
    cols = [
        "variant",
        "backend",
        "served",
        "loop",
        "target",
        "capacity",
        "deciding percentile [5–95 %] at both ends",
        "engine starts",
        "what limited it (next level up)",
        names.STEADY_TPS,
        "tok/s a user",
        *energy_columns(caps),
        "$ per M tok",
    ]
    t = Table(cols, numeric=set(range(9, len(cols))))
    caps = caps.assign(variant=variants(caps, classes)) if len(caps) else caps.assign(variant="")
    order = ["workload", "mode", "variant", "loop", "target"]
    for r in caps.sort_values(order, kind="stable").to_dict("records"):
        t.add(
            [
                r["variant"],
                r["backend"],
                (via or {}).get(r["backend"], ""),
                "concurrency" if r["loop"] == "closed" else "Poisson rate",
                fmt.text(r.get("target_label")) or r["target"] if differ else r["target"],
                capacity_text(r),
                evidence_text(r),
                starts_text(r),
                fmt.text(r["limiter"]),
                fmt.n(r["output_tps"]),
                fmt.n(r["per_user_tps"], 1),
                *energy_cells(r, cols),
                cost_cell(r),
            ]
        )
    return t


STEADY_ENERGY = (names.STEADY_J, names.IDLE_W, names.ABOVE_IDLE)


def _has(rows: pd.DataFrame, key: str) -> bool:
    return key in rows and bool(rows[key].notna().any())


def energy_columns(rows: pd.DataFrame) -> list[str]:
    """The energy columns of a table of level or capacity rows: the steady window's J per 1k output tokens,
    the idle floor and the share above it (unless every figure there is an older run's whole-level one); and
    the whole level's J per 1k output tokens, under its own name, only where a row has it (a run recorded
    before the energy series: the two are never one column)."""
    whole = _has(rows, "energy_j_per_1k_level")
    steady = _has(rows, "energy_j_per_1k_steady") or _has(rows, "idle_w") or not whole
    return [*(STEADY_ENERGY if steady else ()), *([names.LEVEL_J] if whole else [])]


def energy_cells(r: dict[str, Any], cols: list[str]) -> list[str]:
    """A row's cells under the energy columns of ``cols`` (:func:`energy_columns`), in their order."""
    cells = {
        names.STEADY_J: fmt.n(r.get("energy_j_per_1k_steady")),
        names.IDLE_W: fmt.n(r.get("idle_w")),
        names.ABOVE_IDLE: fmt.pct(r.get("above_idle_share")),
        names.LEVEL_J: fmt.n(r.get("energy_j_per_1k_level")),
    }
    return [cells[c] for c in cols if c in cells]


def energy_text(rows: pd.DataFrame) -> str:
    """The definitions of the energy columns ``rows`` get (:func:`energy_columns`), once."""
    cols = energy_columns(rows)
    texts = [names.STEADY_J_TEXT, names.IDLE_TEXT] if names.STEADY_J in cols else []
    return "; ".join(texts + ([names.LEVEL_J_TEXT] if names.LEVEL_J in cols else []))


def steady_table(
    steady: pd.DataFrame, backend: str, all_cases: dict[tuple, list[str]], verdicts: dict | None = None
) -> Table:
    """One backend's steady-state table: a row per level of every variant any backend ran (``all_cases``),
    'not run' where this one lacks it, so that the side-by-side tables line up. The load names the level's
    kind (closed C, users U with think Z, open rate); its population (users, in flight, arrivals/s) and each
    target's verdict there (``verdicts``, :func:`verdicts_by_level`) follow. A p99 from fewer than SMALL_N
    requests is starred; the note says whether the search added the level, it stopped early, requests failed,
    and the request mix."""
    verdicts = verdicts or {}
    cols = [
        "variant",
        "load",
        "verdict",
        "users · in flight mean / p90 · arrivals/s",
        "n steady (first wave)",
        "first-wave TTFT p50",
        "TTFT p50 / p90 / p99 ms",
        "TPOT p50 / p90",
        "e2e p50 / p90 ms",
        f"{names.STEADY_TPS} [5–95 %]",
        "input / total tok/s (steady window)",
        "tok/s a user",
        "C in flight",
        "GPU W mean (whole level)",
        *energy_columns(steady),
        "note",
    ]
    t = Table(cols, numeric=set(range(4, len(cols) - 1)))
    mine = steady[steady["backend"] == backend]
    have = {(r["workload"], r["mode"], r["case"]): r for r in mine.to_dict("records")}
    shown = {(r["workload"], r["mode"], r["case"]): r["level"] for r in steady.to_dict("records")}
    for (w, m), cases in all_cases.items():
        for case in cases:
            r = have.get((w, m, case))
            if r is None:
                t.add(
                    [
                        f"{w} · {m}",
                        shown[(w, m, case)],
                        "",
                        "",
                        "not run",
                        "",
                        "",
                        "",
                        "",
                        "",
                        "",
                        "",
                        "",
                        *[""] * (len(cols) - 12),
                        "not run for this backend",
                    ]
                )
                continue
            p99 = fmt.n(r["ttft_p99"]) + ("*" if r["small_p99"] else "")
            note = "; ".join(
                x
                for x in (
                    f"added by the search ({fmt.text(r['searched_for'])})"
                    if fmt.text(r["searched_for"])
                    else "",
                    "stopped early (seconds)" if r["partial"] else "",
                    f"{r['failed']} failed" if r["failed"] else "",
                    f"mix {r['mix']}",
                )
                if x
            )
            level = r["concurrency"] if r["loop"] == "closed" else r["rate_rps"]
            t.add(
                [
                    f"{w} · {m}",
                    fmt.text(r.get("level_kind")) or r["level"],
                    verdicts.get((backend, w, m, r["loop"], float(level)), "–") if known(level) else "–",
                    population_text(r),
                    f"{r['n_steady']} ({r['first_n']})",
                    fmt.n(r["first_ttft_p50"]),
                    f"{fmt.n(r['ttft_p50'])} / {fmt.n(r['ttft_p90'])} / {p99}",
                    f"{fmt.n(r['tpot_p50'], 1)} / {fmt.n(r['tpot_p90'], 1)}",
                    f"{fmt.n(r['e2e_p50'])} / {fmt.n(r['e2e_p90'])}",
                    f"{fmt.n(r['output_tps'])} [{fmt.n(r['output_tps_lo'])}–{fmt.n(r['output_tps_hi'])}]",
                    f"{fmt.n(r['input_tps'])} / {fmt.n(r['total_tps'])}",
                    fmt.n(r["per_user_tps"], 1),
                    fmt.pct(r["in_flight_share"]),
                    fmt.n(r["power_w"]),
                    *energy_cells(r, cols),
                    note,
                ]
            )
    return t
