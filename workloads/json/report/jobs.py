"""The ``json`` kind's rows of the page's Summary (``ReportKind.jobs``), built with the summary's
shared rules (:mod:`reports.analysis.summary`: a winner only beyond the noise)."""

from __future__ import annotations

from llm_call_anatomy.reports import fmt
from llm_call_anatomy.reports.analysis.summary import rate_ranking
from llm_call_anatomy.reports.model import Job


def json_jobs(s, quality: str | None) -> list[Job | None]:
    """The JSON section's summary rows: the valid share per mode (a winner only without a tie) and the
    grammar's decode cost per backend, shown as not resolved where it is inside the noise."""
    out: list[Job | None] = []
    rates = s.data["rates"]
    for mode in s.data["modes"]:
        g = rates[rates["mode"] == mode]
        per = {
            b: (int(x["valid"].sum()), int(x["n"].sum()))
            for b, x in g.groupby("backend", sort=False)
            if x["n"].sum()
        }
        if not per:
            continue
        order, best, verdict = rate_ranking({b: k / n for b, (k, n) in per.items()})
        shown = [(b, f"{fmt.pct(per[b][0] / per[b][1])} ({per[b][0]} of {per[b][1]})") for b in order]
        out.append(
            Job(
                f"JSON output, mode '{mode}' ({s.name})",
                "valid JSON, all temperatures",
                shown,
                best,
                verdict,
                quality,
            )
        )
    over = s.data["overhead"]
    if not over.empty:
        shown = []
        for r in over.to_dict("records"):
            c, u = r["constrained"], r["unconstrained"]
            noise = ((c.q3 - c.q1) + (u.q3 - u.q1)) / 2
            sign = "+" if r["extra_ms"] >= 0 else "−"
            text = (
                f"{sign}{fmt.n(abs(r['extra_ms']))} ms/token ({sign}{fmt.rel(abs(r['extra_ms']) / u.median)})"
            )
            shown.append(
                (
                    r["backend"],
                    text
                    if abs(r["extra_ms"]) > noise
                    else f"not resolved ({text}, inside ±{fmt.n(noise)} ms)",
                )
            )
        out.append(
            Job(
                f"Grammar cost ({s.name})",
                f"decode ms/token, '{over['mode'].iloc[0]}' − '{over['base'].iloc[0]}' on the same prompts",
                shown,
                None,
                "a cost, not ranked",
            )
        )
    return out
