"""What prefix caching buys, as the Load section shows it: the table of tok/s on ÷ off, TTFT p50 off ÷ on and
capacity on ÷ off per backend, variant and level (from ``caching.caching_ratios``), and the caveat of a page
whose columns ran with the cache on and off. Used by ``capacity_blocks.blocks`` and
``capacity_blocks.caveats``.
"""

from __future__ import annotations

import pandas as pd

from llm_call_anatomy.reports import fmt
from llm_call_anatomy.reports.model import Caveat
from llm_call_anatomy.reports.views import Table
from llm_call_anatomy.workloads.load.report.capacity_cells import (
    capacity_ratio_text,
    names_text,
    variant_text,
)


def caching_table(ratios: pd.DataFrame) -> Table:
    """Prefix cache on vs off per backend, variant and level: tok/s on ÷ off ('other mix' where the two runs'
    requests differ), TTFT p50 off ÷ on and capacity on ÷ off (``capacity_ratio_text``)."""
    t = Table(
        [
            "backend",
            "variant",
            "level / capacity",
            "tok/s on ÷ off",
            "TTFT p50 off ÷ on",
            "capacity on ÷ off",
        ],
        numeric={3, 4, 5},
    )
    for r in ratios.to_dict("records"):
        t.add(
            [
                r["backend"],
                variant_text(r),
                r["level"],
                tps_ratio_text(r),
                fmt.n(r.get("ttft_ratio"), 2),
                capacity_ratio_text(r),
            ]
        )
    return t


def tps_ratio_text(r: dict) -> str:
    """tok/s on ÷ off, marked where the two levels' intervals overlap (no difference beyond the spread)."""
    if not r.get("same_mix", True):
        return "other mix"
    text = fmt.n(r.get("tps_ratio"), 2)
    return f"{text} (within the spread)" if r.get("tps_within_spread") is True and text != "–" else text


def caching_mix_caveats(caching: dict[str, bool | None]) -> list:
    """One caveat where some columns ran with prefix caching off and others with it on (or not said: older
    runs, on): a reader of a mixed page (the merged capacity page) must know which is which. A page-wide
    fact under its own topic: every load section finds it, the page (``derive``) shows it once."""
    off = [b for b, on in caching.items() if on is False]
    on = [b for b, v in caching.items() if v is not False]
    if not off or not on:
        return []
    return [
        Caveat(
            "caching",
            f"{names_text(off)} ran with prefix caching off, "
            f"{names_text(on)} with it on: where prompts share a prefix (the sessions, S=960) their "
            "TTFT, throughput and capacity differ by what caching buys, not only by the stack. The caching "
            "ratios compare one backend with itself, on and off.",
        )
    ]
