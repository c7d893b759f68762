"""The seed article's quantitative claims, one check each (see :mod:`reports.analysis.claims`), one module
per experiment of the article.

Each check reads this report's figures (never typed in), quotes the article's from
:mod:`reports.reference`, and says whether the claim holds here, is specific to the seed's
setup (HF eager on an A100, its workload) and why, or cannot be measured here and why.

- ``sweep``: the length sweep: decode flat in N, its bandwidth share, a short prefill as one decode
  step, prefill vs decode per token, decode's share of a short call;
- ``conversation``: prefix reuse over the conversation: tokens computed, summed TTFT, where reuse stops;
- ``json_extraction``: every grammar-constrained JSON reply valid;
- ``template``: attention on special tokens.

``reports.analysis.claims.MODULES`` lists them in the page's order. This module holds what they
share: the claims' source, a section of the report by kind and a range of figures as text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from reports import fmt

if TYPE_CHECKING:
    from reports.assemble import Report, Section

SEED = "seed article"


def section_of(report: Report, kind: str) -> Section | None:
    """The report's first section of ``kind`` that has data, if any."""
    return next((s for s in report.sections if s.kind == kind and s.data), None)


def value_range(values: list[float], digits: int | None = None, unit: str = "") -> str:
    """``lo–hi unit`` of ``values`` as the page prints them (one figure where both print the same)."""
    lo, hi = min(values), max(values)
    text = (
        fmt.n(lo, digits)
        if fmt.n(lo, digits) == fmt.n(hi, digits)
        else f"{fmt.n(lo, digits)}–{fmt.n(hi, digits)}"
    )
    return f"{text} {unit}".strip()
