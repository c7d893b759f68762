"""The seed article's claim about attention (kind ``template``): much of it lands on special tokens.

The template workload's attention share on special tokens against their share of the positions,
decided with a bootstrap interval against twice that share; not measurable on random weights
(attention patterns are learned).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from llm_call_anatomy.reports import fmt, intervals, reference
from llm_call_anatomy.reports.analysis.claims import claim, does_not_hold, holds, not_decided, not_measurable
from llm_call_anatomy.reports.analysis.seed_claims import SEED, section_of
from llm_call_anatomy.reports.model import Claim
from llm_call_anatomy.reports.stats import num

if TYPE_CHECKING:
    from llm_call_anatomy.reports.model import Report


ORDER = 4  # where this module's claims stand on the page (reports.analysis.claims)


@claim
def attention_special(report: Report) -> Claim:
    """The seed's claim that much attention lands on special tokens: the template workload's attention share
    on special tokens against their share of the positions (not measurable on random weights)."""
    statement = "Much of the attention lands on special tokens"
    theirs = reference.ATTENTION
    s = section_of(report, "template")
    att = s.data["attention"] if s is not None else pd.DataFrame()
    if att.empty:
        return Claim(
            SEED,
            statement,
            theirs,
            not_measurable("no backend recorded attention (HF eager only, template workload)"),
        )
    att = att.assign(
        positions=[
            num(s) / num(p) if num(s) is not None and num(p) else None
            for s, p in zip(att["special_positions"], att["prompt_tokens"], strict=True)
        ]
    )
    here = {
        b: f"{fmt.pct(g['share'].mean())} on average over {len(g)} layers (special tokens: "
        f"{fmt.pct(g['positions'].mean())} of the positions)"
        for b, g in att.groupby("backend", sort=False)
    }
    if report.random_weights:
        return Claim(
            SEED,
            statement,
            theirs,
            not_measurable(
                "random weights: attention patterns are learned, so random weights say nothing about them"
            ),
            here,
        )
    share = att["share"].mean()
    positions = att["positions"].mean()
    if positions != positions:
        return Claim(
            SEED,
            statement,
            theirs,
            not_measurable("the records do not say which positions are special"),
            here,
        )
    ci = intervals.bootstrap(
        [[(float(x), 0.0) for x in att["share"].dropna()]], lambda x, _y: float(np.mean(x))
    )
    where = intervals.against_band(ci, 2 * positions, 1.0)
    reason = (
        f"{fmt.pct(share)} {intervals.show(ci)} of attention (mean over layers, 95 % bootstrap interval) on "
        f'{fmt.pct(positions)} of the positions; "much" means more than twice their share of the positions'
    )
    verdict = (
        holds if where == intervals.INSIDE else does_not_hold if where == intervals.OUTSIDE else not_decided
    )
    return Claim(SEED, statement, theirs, verdict(reason), here)
