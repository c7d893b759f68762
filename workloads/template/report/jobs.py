"""The ``template`` kind's rows of the page's Summary (``ReportKind.jobs``), built with the summary's
shared rules (:mod:`reports.analysis.summary`: a winner only beyond the noise)."""

from __future__ import annotations

from llm_call_anatomy.reports import fmt
from llm_call_anatomy.reports.analysis.summary import rate_ranking
from llm_call_anatomy.reports.model import Job


def template_job(s, quality: str | None) -> Job | None:
    """The summary row of a template workload: each backend's clean-answer rate in its best format, best
    first; a winner is named only when it is strictly ahead of the next (not with one backend or a tie).
    ``quality`` is the caution under the row (random weights); None without rates."""
    rates = s.data["rates"]
    if rates.empty:
        return None
    best = {
        b: g.sort_values("rate", ascending=False).iloc[0] for b, g in rates.groupby("backend", sort=False)
    }
    order, winner, verdict = rate_ranking({b: float(r["rate"]) for b, r in best.items()})
    shown = [
        (b, f"{fmt.pct(best[b]['rate'])} ({best[b]['clean']} of {best[b]['n']}, {best[b]['format']})")
        for b in order
    ]
    return Job(
        f"Short exact answers ({s.name})",
        "clean-answer rate of each backend's best format",
        shown,
        winner,
        verdict,
        quality,
    )
