"""The Load section's capacity half on the page: the blocks around its tables, and its caveat.

How many users within each target (the capacity table, the targets it is judged against, how a capacity
is decided), the energy and price notes, the steady-state levels with the first wave apart, what prefix
caching buys; a caveat where backends ran different requests at one level. The tables are
``capacity_tables``', a capacity cell's words ``capacity_cells``', the per-user vs per-GPU chart is
``capacity_chart``'s, the summary rows ``capacity_summary``'s (all in this folder).
"""

from __future__ import annotations

from typing import Any

import pandas as pd
from markupsafe import Markup

from llm_call_anatomy.contract.slo import SOURCES
from llm_call_anatomy.reports import fmt
from llm_call_anatomy.reports.model import Caveat
from llm_call_anatomy.reports.views import Block, chart, compact, h3, p, side, table
from llm_call_anatomy.workloads.load.report import labels as names
from llm_call_anatomy.workloads.load.report.caching_tables import caching_mix_caveats, caching_table
from llm_call_anatomy.workloads.load.report.capacity_cells import names_text, verdicts_by_level
from llm_call_anatomy.workloads.load.report.capacity_tables import (
    capacity_table,
    differ,
    energy_text,
    steady_table,
)
from llm_call_anatomy.workloads.load.report.cost import price_text

PRICE_FORMULA = "cost per million output tokens = PRICE ($ per GPU-hour) ÷ (3600 × output tok/s) × 10⁶"


def targets_text(targets: tuple, targets_of: dict[str, tuple], runs: dict[str, str]) -> str:
    """The targets the capacities were judged against, as a sentence: one list where every column shares
    them; else each column's (its own run's, columns with the same targets together), so that a merged page
    says which targets each column was judged against (issue 44 item 6)."""
    if not differ(targets_of):
        return f"Targets: {'; '.join(t.label() for t in targets)}."
    groups: dict[tuple, list[str]] = {}
    for label, ts in targets_of.items():
        groups.setdefault(ts, []).append(label)
    each = "; ".join(
        f"{names_text(f'{b} (run {runs[b]})' if runs.get(b) else b for b in labels)} against "
        f"{', '.join(t.label() for t in ts)}"
        for ts, labels in groups.items()
    )
    return (
        f"Targets differ between the runs: each column is judged against its own run's targets: {each}. "
        "Capacities judged against other targets are not compared."
    )


def blocks(d: dict[str, Any], backends: list[str], slots) -> list[Block]:
    """The capacity half of the Load section: the capacity table and how it is decided, the energy and price
    notes, each backend's steady-state table side by side with the chart slots, and what prefix caching buys
    where a backend ran both ways. Empty without steady-state levels."""
    cap = d["cap"]
    steady, caps, targets, price = cap["steady"], cap["capacity"], cap["targets"], cap["price"]
    if steady.empty:
        return []
    cases: dict[tuple, list[str]] = {}
    for r in steady.sort_values(["concurrency", "rate_rps"], na_position="last").to_dict("records"):
        cases.setdefault((r["workload"], r["mode"]), [])
        if r["case"] not in cases[(r["workload"], r["mode"])]:
            cases[(r["workload"], r["mode"])].append(r["case"])
    why_not = sorted({str(x) for x in steady["telemetry"].dropna()})
    verdicts = verdicts_by_level(caps)
    out: list[Block | None] = [
        h3(f"How many users one {cap.get('unit', 'GPU')} holds, per target"),
        p(
            Markup(
                "{} A level meets a target when each percentile over its <b>steady-state</b> "
                "requests is within the limit; a failed request is a miss. ({})"
            ).format(
                targets_text(targets, cap.get("targets_of") or {}, cap.get("target_runs") or {}), SOURCES
            )
        ),
        table(
            capacity_table(caps, cap.get("via"), cap.get("mix_classes"), differ=differ(cap.get("targets_of")))
        )
        if not caps.empty
        else None,
        *inproc_server_blocks(cap.get("inproc_server") or []),
        p(
            "Capacity = a bracket: the highest level that met the target and the lowest level above it that "
            "missed, refined by the capacity search until the two are within its ratio. Each level's verdict "
            "is pass, miss or undecided: the deciding percentile carries a bootstrap interval (5th–95th "
            "percentile over time blocks of the steady window); a target inside it is undecided (the search "
            "runs such a level once more for twice the time), and the capacity is then a range. A level "
            "whose arrivals were not the sustained rate it names (submits late, or the achieved rate off "
            "the offered one beyond noise; a burst) is 'not offered' and never a pass; a level whose queue "
            "grew through the window is 'overloaded', a miss. '≥' only where every level met the target up "
            "to the stated maximum; 'no miss up to' where the search or the run stopped below it. Where "
            "several engine starts ran the levels, each start is judged apart and the capacity is the "
            "median start's (never the best), every start's bracket beside it. The limiter is the first "
            "miss's first missed limit or flag, with the engine's KV-cache peak and preemptions there. "
            "Compared across backends only on the same request mix (the 'mix' in the steady-state tables' "
            "notes); a closed C and an open rate are never in one column.",
            muted=True,
        ),
        p(
            (
                f"Energy (NVML, on a thread of its own): {energy_text(steady)}. "
                if cap.get("unit", "GPU") == "GPU"
                else "Energy: not measured (NVML reads NVIDIA GPUs; this run had none). "
            )
            + PRICE_FORMULA
            + (
                f"; PRICE = {price_text(price)} (--gpu-hour-usd)."
                if price
                else "; no --gpu-hour-usd given: the $ column is empty."
            )
            + (
                f" GPU telemetry: {'; '.join(why_not)}."
                if why_not and cap.get("unit", "GPU") == "GPU"
                else ""
            ),
            muted=True,
        ),
        h3("Steady state of every level"),
        p(
            "The first wave (the C requests that start together) is kept apart: its TTFT in its own column, "
            "never in the percentiles. The window runs from the first submit after it to the last submit; "
            f"{names.STEADY_TPS_TEXT}. 'C "
            "in flight' is the share of the window that really had C requests between submit and "
            "finish. tok/s interval: bootstrap over 5 time blocks of the window (one run, not repeats). * a "
            "p99 from fewer than 100 requests (close to the maximum). 'served': in process (the engine in "
            "the harness's process, tokens stamped as the engine hands them over) or HTTP (an "
            "OpenAI-compatible server, tokens stamped as the stream delivers them); the engine's own figures "
            "(KV peak, preemptions) come from the engine in process or from the server's /metrics.",
            muted=True,
        ),
        chart_block(slots),
        side(
            [
                (b, [table(steady_table(steady, b, cases, verdicts))])
                for b in backends
                if (steady["backend"] == b).any()
            ]
        ),
    ]
    ratios = cap.get("caching")
    if ratios is not None and not ratios.empty:
        out += [
            h3("What prefix caching buys"),
            p(
                "The same backend run with its prefix cache on and off (--no-prefix-caching), at the same "
                'levels and mix: tok/s on ÷ off, TTFT p50 off ÷ on, capacity on ÷ off. "Within the spread": '
                "the two levels' tok/s intervals (bootstrap over time blocks) overlap, so the ratio is no "
                "difference; one engine start each, so the spread between starts is not in it.",
                muted=True,
            ),
            table(caching_table(ratios)),
        ]
    return compact(out)


def inproc_server_blocks(found: list[dict[str, Any]]) -> list[Block]:
    """The notes where an engine in process and its own server disagree on a capacity
    (``inproc_server``), under a line that says what they are."""
    if not found:
        return []
    return [
        p(
            "In process beside its server: where an engine's in-process column and its server's disagree on"
            " a capacity, the caller's TTFT at the lowest level where their verdicts differ (pass, miss, "
            "undecided), split into the engine's queue (queued → scheduled), the engine after its queue "
            "(its own TTFT − the queue) and what lies outside the engine (the caller's TTFT − the engine's "
            "own: the step loop in process, the front end, network and client over HTTP); means, which add "
            "up, over the level's served requests (in process each request's engine timestamps, over HTTP "
            "the server's /metrics histograms).",
            muted=True,
        ),
        *(p(n["text"]) for n in found),
    ]


def chart_block(slots) -> Block | None:
    return chart(slots["users"])


# --- caveats --------------------------------------------------------------------------------------
def caveats(d: dict[str, Any], section_name: str) -> list:
    """A level that backends ran with different requests (a backend run at a scaled load, a level cut short):
    which backends ran which requests, so that each row is read against rows of its own mix only (the
    backends that share the level's first mix are compared with each other). And columns that ran with
    prefix caching off beside columns that ran with it on: which, so that no row compares the two unawares.
    And a run whose env.json slo_targets do not parse, with its error, or a column merging runs with other
    targets: the targets counted against are not its own."""
    steady = d["cap"]["steady"]
    out = caching_mix_caveats(d["cap"].get("caching_of") or {})
    if note := d["cap"].get("targets_note"):
        out.append(
            Caveat(
                "targets",
                f"{note}: the capacity table names the targets each column counts against (its run's own, "
                "else another run's, an older run's --slo pair or the defaults).",
            )
        )
    if steady.empty:
        return out
    for (w, m, _), g in steady.groupby(["workload", "mode", "case"], sort=False):
        if g["mix"].nunique() < 2:
            continue
        by_mix = [h for _, h in g.groupby("mix", sort=False)]
        by_mix.sort(key=len, reverse=True)  # the mix most backends ran first (then in order of appearance)

        def what(h: pd.DataFrame) -> str:  # one mix: the same requests, so the same count and mean
            r = h.iloc[0]
            return (
                f"{names_text(h['backend'])} ({fmt.n(r['n_steady'] + r['first_n'])} requests, "
                f"mean prompt {fmt.n(r['mean_prompt'])} tokens)"
            )

        out.append(
            Caveat(
                section_name,
                f"{w} · {m} {g['level'].iloc[0]}: {' and '.join(what(h) for h in by_mix[1:])} ran other "
                f"requests than {what(by_mix[0])}: a row is compared only with rows of its own mix.",
            )
        )
    return out
