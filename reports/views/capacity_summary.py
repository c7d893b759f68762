"""The capacity half's summary rows: how many users each backend holds per target, and who serves more.

Per variant and target, each backend's capacity (levels are searched per backend, so the numbers are
compared, never ranked); per variant, the steady output tok/s at the level the most backends ran
with the same requests, with a winner only where the intervals do not overlap.
"""

from __future__ import annotations

from typing import Any

from reports import fmt
from reports.views.capacity import capacity_text


def jobs(d: dict[str, Any]) -> list:
    """Per variant and target: each backend's capacity (named with the target); per variant: output tok/s at
    the level the most backends ran with the same mix (the highest such; a backend at other levels or with
    another mix is left out), a winner only where the intervals do not overlap."""
    from reports.analysis.summary import Job

    cap = d["cap"]
    steady, caps = cap["steady"], cap["capacity"]
    out = []
    if caps.empty:
        return out
    for (w, m, loop, target), g in caps.groupby(["workload", "mode", "loop", "target"], sort=False):
        t = next(x for x in cap["targets"] if x.name == target)
        values = [(r["backend"], capacity_text(r)) for r in g.to_dict("records")]
        what = (
            "highest concurrency" if loop == "closed" else "highest Poisson rate"
        ) + f" within {t.label()}"
        out.append(
            Job(
                f"Many users: {target} ({w} · {m}{'' if loop == 'closed' else ', open loop'})",
                what,
                values,
                None,
                "one backend: nothing to choose"
                if len(values) < 2
                else "levels are searched per backend: compare the numbers, not a rank",
            )
        )
    closed = steady[steady["loop"] == "closed"].dropna(subset=["output_tps"])
    for (w, m), g in closed.groupby(["workload", "mode"], sort=False):
        # the level where the most backends ran the same requests (then the highest such level): a backend
        # that ran other levels or another mix (hf, hf-cb at a scaled load) is left out, not compared
        best = None
        for (c, _mix), h in g.groupby(["concurrency", "mix"]):
            if h["backend"].nunique() >= 2 and (best is None or (h["backend"].nunique(), c) > best[0]):
                best = ((h["backend"].nunique(), c), h)
        if best is None:
            continue
        at = best[1].sort_values("output_tps", ascending=False).to_dict("records")
        common = [best[0][1]]
        values = [
            (
                r["backend"],
                f"{fmt.n(r['output_tps'])} tok/s [{fmt.n(r['output_tps_lo'])}–{fmt.n(r['output_tps_hi'])}]",
            )
            for r in at
        ]
        top, second = at[0], at[1]
        clear = (
            None not in (top["output_tps_lo"], second["output_tps_hi"])
            and top["output_tps_lo"] > second["output_tps_hi"]
        )
        out.append(
            Job(
                f"Many users: throughput ({w} · {m}, C={fmt.n(max(common))})",
                "steady output tok/s at the level the most backends "
                "ran with the same requests (the highest such)",
                values,
                top["backend"] if clear else None,
                f"by {fmt.n(100 * (top['output_tps'] / second['output_tps'] - 1))} % over {second['backend']}"
                if clear
                else "within the intervals: not ranked",
            )
        )
    return out
