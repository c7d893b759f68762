"""The seed article's claim about grammar-constrained JSON (kind ``json``): every reply valid.

Valid replies of all constrained calls, per backend; the mask guarantees the form, not the truth of
the values.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from llm_call_anatomy.reports import reference
from llm_call_anatomy.reports.analysis.claims import claim, does_not_hold, holds, not_measurable
from llm_call_anatomy.reports.analysis.seed_claims import SEED, section_of
from llm_call_anatomy.reports.model import Claim

if TYPE_CHECKING:
    from llm_call_anatomy.reports.model import Report


ORDER = 3  # where this module's claims stand on the page (reports.analysis.claims)


@claim
def mask_valid(report: Report) -> Claim:
    """The seed's claim that grammar-constrained JSON replies are all valid: valid of all constrained calls,
    per backend."""
    statement = "With a grammar mask, every JSON reply is valid (80 of 80)"
    theirs = f"{reference.JSON_MASK['valid']} of {reference.JSON_MASK['calls']}"
    s = section_of(report, "json")
    rates = s.data["rates"] if s is not None else pd.DataFrame()
    over = s.data["overhead"] if s is not None else pd.DataFrame()
    modes = set(over["mode"]) if not over.empty else set()
    rows = rates[rates["mode"].isin(modes)] if modes else rates.iloc[0:0]
    if rows.empty:
        return Claim(
            SEED, statement, theirs, not_measurable("no grammar-constrained JSON calls in these runs")
        )
    here, all_valid = {}, True
    for b, g in rows.groupby("backend", sort=False):
        valid, n = int(g["valid"].sum()), int(g["n"].sum())
        here[b] = f"{valid} of {n}"
        all_valid &= valid == n
    if all_valid:
        return Claim(
            SEED,
            statement,
            theirs,
            holds(
                "the mask guarantees the form on every backend (n as shown; form, "
                "not truth: the values can still be wrong)"
            ),
            here,
        )
    return Claim(
        SEED,
        statement,
        theirs,
        does_not_hold("some constrained replies are invalid (cut off by the token budget?)"),
        here,
    )
