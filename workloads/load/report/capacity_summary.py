"""The capacity half's summary rows: how many users each backend holds per target, and who serves more.

Per variant and target, each backend's capacity (levels are searched per backend, so the numbers are
compared, never ranked); per variant, the steady output tok/s at the level the most backends ran
with the same requests, with a winner only where the gap beats the spread within the run (the intervals)
and between engine starts (``throughput_verdict``). Where an engine in process did not predict its own
server's capacity (``inproc_server``), the server's value comes first and the in-process one says so.
Backends that ran other requests (``capacity.mix_classes``: the H200's HF mix, fewer turns a session) get rows
of their own, compared only with each other.
"""

from __future__ import annotations

from typing import Any

from llm_call_anatomy.reports import fmt
from llm_call_anatomy.reports.model import Job
from llm_call_anatomy.reports.stats import StartStat, rank, verdict
from llm_call_anatomy.workloads.load.report.capacity import mix_classes, tps_above
from llm_call_anatomy.workloads.load.report.capacity_cells import capacity_text, headline_text
from llm_call_anatomy.workloads.load.report.inproc_server import lead
from llm_call_anatomy.workloads.load.report.labels import STEADY_TPS
from llm_call_anatomy.workloads.load.report.mix_groups import by_class, mix_label


def jobs(d: dict[str, Any]) -> list:
    """Per variant and target: each backend's capacity (named with the target; a backend whose run never
    reached the variant, as not run, in the main group's row); per variant: output tok/s at the level the
    most backends ran with the same mix (the highest such; a backend at other levels or with another mix is
    left out), a winner only where the intervals do not overlap."""
    cap = d["cap"]
    steady, caps = cap["steady"], cap["capacity"]
    out = []
    if caps.empty:
        return out
    classes = mix_classes(steady)
    if "target_label" not in caps:  # rows from before each carried its target's limits
        caps = caps.assign(target_label=caps["target"])
    # a target's name with other limits (runs run with other targets) is another target: its own rows
    by = ["workload", "mode", "loop", "target", "target_label"]
    for (w, m, loop, target, label), whole in caps.groupby(by, sort=False):
        t = next((x for x in cap["targets"] if x.label() == label), None) or next(
            x for x in cap["targets"] if x.name == target
        )
        what = (
            "highest concurrency" if loop == "closed" else "highest Poisson rate"
        ) + f" within {t.label()}"
        # a backend whose run never reached the variant, or that skipped it (not installed, needs a GPU), ran
        # no requests: it is named in the main group's row, never in a group "other requests: ..." of its own
        unreached = whole["bound"].isin(["not run", "skipped"])
        not_run = [(r["backend"], capacity_text(r)) for r in whole[unreached].to_dict("records")]
        for i, g in enumerate(list(by_class(classes, w, m, whole[~unreached])) or [whole[~unreached]]):
            values = [(r["backend"], headline_text(r)) for r in g.to_dict("records")] + (
                not_run if i == 0 else []
            )
            # a server before its engine in process where that one did not predict it (inproc_server)
            values = lead(values, cap.get("inproc_server") or [], target, w, m, loop)
            out.append(
                Job(
                    f"Many users: {target} ({w} · {m}{'' if loop == 'closed' else ', open loop'}"
                    f"{mix_label(classes, w, m, g['backend'])})",
                    what,
                    values,
                    None,
                    "one backend: nothing to choose"
                    if len(g) < 2
                    else "levels are searched per backend: compare the numbers, not a rank",
                )
            )
    closed = steady[steady["loop"] == "closed"].dropna(subset=["output_tps"])
    for (w, m), whole in closed.groupby(["workload", "mode"], sort=False):
        for g in by_class(classes, w, m, whole):
            out += _throughput(w, m, g, mix_label(classes, w, m, g["backend"]))
    return out


def _throughput(w: str, m: str, g, mix_note: str) -> list:
    """The throughput row of one group of backends that ran the same requests: at the level the most of them
    ran with one mix (then the highest such level; a backend that ran other levels is left out, not
    compared), a winner only by ``throughput_verdict``."""
    best = None
    for (c, _mix), h in g.groupby(["concurrency", "mix"]):
        if h["backend"].nunique() >= 2 and (best is None or (h["backend"].nunique(), c) > best[0]):
            best = ((h["backend"].nunique(), c), h)
    if best is None:
        return []
    at = best[1].sort_values("output_tps", ascending=False).to_dict("records")
    values = [
        (
            r["backend"],
            f"{fmt.n(r['output_tps'])} {STEADY_TPS} "
            f"[{fmt.n(r['output_tps_lo'])}–{fmt.n(r['output_tps_hi'])}]",
        )
        for r in at
    ]
    top, second = at[0], at[1]
    winner, why = throughput_verdict(top, second)
    return [
        Job(
            f"Many users: throughput ({w} · {m}, C={fmt.n(best[0][1])}{mix_note})",
            f"{STEADY_TPS} at the level the most backends ran with the same requests (the highest such)",
            values,
            winner,
            why,
        )
    ]


def throughput_verdict(top: dict[str, Any], second: dict[str, Any]) -> tuple[str | None, str]:
    """The study's winner rule on two level rows (the faster first). Within the run, the spread is the
    bootstrap interval: the intervals must not overlap. Between engine starts, ``reports.stats.rank``'s
    rule and ``reports.stats.verdict``'s words, as for every ranked figure: two or more starts each, every
    start of the faster ahead of every start of the other, the gap beyond the wider range of per-start
    tok/s. One start each leaves the spread between starts unmeasured: not decided."""
    if not tps_above(top, second):  # overlapping, or an interval missing
        return None, "within the intervals: not ranked"
    stats = {r["backend"]: _over_starts(r) for r in (top, second)}
    return verdict(rank(stats, higher=True), "the intervals")


def _over_starts(row: dict[str, Any]) -> StartStat:
    """A level row's tok/s as a :class:`StartStat`: the level's figure, its per-start tok/s and their half
    range relative to it (None with one start); no spread within a start (the intervals stand for it)."""
    xs = tuple(float(x) for x in (row.get("per_start_tps") or ()) if x is not None)
    tps = float(row["output_tps"])
    across = (max(xs) - min(xs)) / 2 / abs(tps) if len(xs) > 1 and tps else None
    return StartStat(tps, None, across, len(xs), len(xs), xs)
