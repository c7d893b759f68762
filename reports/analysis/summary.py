"""The summary: which stack for which job, read off the figures (lowest latency, highest pass rate).

Each job names the figure it compares, every backend's value and the best one; quality jobs
are flagged when the weights are random. With one backend there is nothing to choose, and the
line says so while still showing its figure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from reports import fmt
from reports.stats import num

if TYPE_CHECKING:
    from reports.assemble import Report


@dataclass(frozen=True)
class Job:
    job: str
    figure: str  # what is compared
    values: list[tuple[str, str]]  # (backend, formatted value), best first
    best: str | None  # None: a single backend, or a tie at the top
    caution: str | None = None


def _job(job: str, figure: str, values: dict[str, float], unit: str, higher: bool = False, caution: str | None = None,
         show=None, extra: dict[str, str] | None = None) -> Job | None:
    values = {b: v for b, v in values.items() if v is not None}
    if not values:
        return None
    ranked = sorted(values, key=lambda b: -values[b] if higher else values[b])
    show = show or (lambda v: f"{fmt.n(v)} {unit}".strip())
    extra = extra or {}
    shown = [(b, show(values[b]) + (f" ({extra[b]})" if b in extra else "")) for b in ranked]
    tie = len(ranked) > 1 and values[ranked[0]] == values[ranked[1]]
    return Job(job, figure, shown, ranked[0] if len(ranked) > 1 and not tie else None, caution)


def jobs(report: Report) -> list[Job]:
    out: list[Job | None] = []
    quality = "weights are random: not a quality figure" if report.random_weights else None
    for s in report.sections:
        if not s.data:
            continue
        if s.kind == "conversation":
            tot = s.data["totals"]
            cached = {r["backend"]: num(r["ttft_med"]) for r in tot[tot["mode"] == "cached"].to_dict("records")}
            full = {r["backend"]: num(r["ttft_med"]) for r in tot[tot["mode"] == "full"].to_dict("records")}
            best = {b: cached.get(b) if cached.get(b) is not None else full.get(b) for b in {**full, **cached}}
            out.append(_job(f"Multi-turn chat ({s.name})", f"summed TTFT over {int(tot['turns'].iloc[0])} turns, prefix "
                            "reuse where the backend has it", best, "ms"))
        elif s.kind == "sweep":
            lengths = s.data["lengths"]
            if lengths.empty:
                continue
            common = set.intersection(*(set(g["N"]) for _, g in lengths.groupby("backend")))
            if common:
                n = max(common)
                rows = lengths[lengths["N"] == n]
                out.append(_job(f"Long prompts ({s.name})", f"prefill time at N={n}",
                                dict(zip(rows["backend"], rows["prefill_med"].map(num), strict=True)), "ms"))
            dec = lengths.groupby("backend", sort=False)["decode_med"].median()
            out.append(_job(f"Generating tokens ({s.name})", "decode ms/token, median over prompt lengths",
                            {b: num(v) for b, v in dec.items()}, "ms/token"))
            n0 = min(common) if common else None
            if n0 is not None:
                rows = lengths[lengths["N"] == n0]
                out.append(_job(f"Many short calls ({s.name})", f"TTFT at the shortest prompt, N={n0}",
                                dict(zip(rows["backend"], rows["prefill_med"].map(num), strict=True)), "ms"))
        elif s.kind == "json":
            rates = s.data["rates"]
            for mode in s.data["modes"]:
                g = rates[rates["mode"] == mode]
                per = {b: (x["valid"].sum() / x["n"].sum() if x["n"].sum() else None) for b, x in g.groupby("backend", sort=False)}
                out.append(_job(f"JSON output, mode '{mode}' ({s.name})", "valid JSON, all temperatures", per, "",
                                higher=True, caution=quality, show=fmt.pct))
        elif s.kind == "template":
            rates = s.data["rates"]
            if not rates.empty:
                best_fmt = {b: g.sort_values("rate", ascending=False).iloc[0] for b, g in rates.groupby("backend", sort=False)}
                out.append(_job(f"Short exact answers ({s.name})", "clean-answer rate of each backend's best format",
                                {b: r["rate"] for b, r in best_fmt.items()}, "", higher=True, caution=quality,
                                show=fmt.pct, extra={b: str(r["format"]) for b, r in best_fmt.items()}))
    return [j for j in out if j is not None]
