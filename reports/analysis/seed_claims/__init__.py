"""What the seed article's quantitative claims share (see :mod:`reports.analysis.claims`): the claims'
source, a section of the report by kind, a range of figures as text and the (x, y) pairs of records that the
numeric tests resample.

The claims themselves live in the kinds' rooms, one module per experiment of the article
(``workloads/<kind>/report/claims.py``: the length sweep, the conversation's prefix reuse, JSON by
grammar, attention on special tokens; ``workloads/conversation/report/claims_tokens.py``: the token
figures), found and ordered by ``reports.analysis.claims.claim_modules``. Each check reads this report's
figures (never typed in), quotes the article's from :mod:`reports.reference`, and says whether the claim
holds here, is specific to the seed's setup (HF eager on an A100, its workload) and why, or cannot be
measured here and why.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from llm_call_anatomy.reports import fmt
from llm_call_anatomy.reports.stats import num

if TYPE_CHECKING:
    import pandas as pd

    from llm_call_anatomy.reports.model import Report, Section

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


def record_pairs(g: pd.DataFrame, x: str, y: str) -> list[tuple[float, float]]:
    """Each record's (x, y) where both are numbers: one stratum of a claim's bootstrap."""
    return [
        (num(a), num(b)) for a, b in zip(g[x], g[y], strict=True) if num(a) is not None and num(b) is not None
    ]


def strata_by(g: pd.DataFrame, x: str, y: str) -> list[list[tuple[float, float]]]:
    """The records' (x, y) pairs, one stratum per value of x (ascending): what a fitted change over x is
    bootstrapped within (``reports.intervals.flatness``)."""
    return [record_pairs(s, x, y) for _, s in g.groupby(x, sort=True)]
