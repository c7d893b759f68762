"""What a GPU-hour buys at each capacity point (``--gpu-hour-usd PRICE`` or ``LO-HI``), input and output
priced apart.

At the level a target's capacity was measured at (its last pass), over the steady window
(``contract.level_stats``: input tok/s = prompt tokens submitted in it, output tok/s = tokens out in it):

- **blended** $ per M tokens = PRICE ÷ 3600 ÷ (input + output tok/s) × 10⁶: the workload's own input:output
  mix (its ratio is the ``input:output`` column);
- **input and output apart**: the GPU-second is split between the tokens at an output:input cost ratio of
  :data:`OUTPUT_COST_RATIO` (4, GKE Inference Quickstart's default: an output token, decoded one step at a
  time, costs four prompt tokens, prefilled together): $ per input token = PRICE ÷ 3600 ÷ (input tok/s +
  4 × output tok/s), an output token four times that. Blended is their mean weighted by the mix, so the three
  agree;
- $ per request = PRICE ÷ 3600 ÷ steady requests a second; $ per session = that × the level's requests a
  session (its turns; a fixed-shape level has no session);
- **intervals**: the steady output tok/s's bootstrap interval (5 time blocks, 5th–95th percentile) carried
  over to every figure at the same relative width (the window's mix of input and output is one).

A price range (``--gpu-hour-usd 2.5-7``, ``contract.price``) gives each capacity point two rows, the low end
then the high, each worked out from its own price (the figures are linear in it, but computed, not scaled),
the price in the ``$ a GPU-hour`` column; one price gives the one row it always did, that column holding it
(kept at one price too, so that an export's columns do not depend on how the price was given; the page shows
it only for a range, ``sizing_tables.blocks``). A level with no steady window (too short) or a target with no
capacity has no row.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from llm_call_anatomy.contract.price import GpuPrice, price_from
from llm_call_anatomy.reports import fmt
from llm_call_anatomy.reports.stats import num

PRICE = "$ a GPU-hour"  # the column naming the price a cost row is worked out at
OUTPUT_COST_RATIO = 4.0  # an output token's cost in input tokens (GKE Inference Quickstart's default)
FIGURES = (
    "$ per M input tok",
    "$ per M output tok",
    "$ per M tok, blended",
    "$ per request",
    "$ per session",
)
COLUMNS = [
    "backend",
    "variant",
    "loop",
    "target",
    "level",
    PRICE,
    "input:output",
    *[c for f in FIGURES for c in (f, f"{f}, lo", f"{f}, hi")],
]


def _at(steady: pd.DataFrame, r: dict[str, Any]) -> dict[str, Any] | None:
    axis = "concurrency" if r["loop"] == "closed" else "rate_rps"
    g = steady[
        (steady["backend"] == r["backend"])
        & (steady["workload"] == r["workload"])
        & (steady["mode"] == r["mode"])
        & (steady[axis] == r["value"])
    ]
    return g.iloc[0].to_dict() if len(g) else None


def prices(at: dict[str, Any], price: float) -> dict[str, float | None] | None:
    """Each of :data:`FIGURES` at a level row ``at`` (``capacity.level_row``), with ``, lo`` and ``, hi``;
    None without steady tok/s."""
    tin, tout = num(at.get("input_tps")) or 0.0, num(at.get("output_tps"))
    if not tout:
        return None
    per_s = price / 3600
    unit = per_s / (tin + OUTPUT_COST_RATIO * tout)
    rps, turns = num(at.get("requests_per_s")), num(at.get("requests_per_session"))
    point = {
        "$ per M input tok": unit * 1e6 if tin else None,
        "$ per M output tok": OUTPUT_COST_RATIO * unit * 1e6,
        "$ per M tok, blended": per_s / (tin + tout) * 1e6,
        "$ per request": per_s / rps if rps else None,
        "$ per session": per_s / rps * turns if rps and turns else None,
    }
    lo_tps, hi_tps = num(at.get("output_tps_lo")), num(at.get("output_tps_hi"))
    out: dict[str, float | None] = {}
    for name, v in point.items():
        out[name] = v
        # more tok/s, a lower price: the interval's top end gives the low price
        out[f"{name}, lo"] = v * tout / hi_tps if v is not None and hi_tps else None
        out[f"{name}, hi"] = v * tout / lo_tps if v is not None and lo_tps else None
    return out


def cost_table(caps: pd.DataFrame, steady: pd.DataFrame, price: GpuPrice | float | None) -> pd.DataFrame:
    """A row per capacity row that has a level (its last pass, or a throughput-only target's peak) and per
    end of ``price`` (one price: one row), priced at that end's $ a GPU-hour; empty without a price (the page
    shows the formula)."""
    price = price_from(price)
    rows = []
    if price and not caps.empty and not steady.empty:
        for r in caps.to_dict("records"):
            if num(r.get("value")) is None:
                continue
            at = _at(steady, r)
            if at is None:
                continue
            tin, tout = num(at.get("input_tps")), num(at.get("output_tps"))
            for usd in price.ends:
                figures = prices(at, usd)
                if figures is None:
                    break
                rows.append(
                    {
                        "backend": r["backend"],
                        "variant": f"{r['workload']} · {r['mode']}",
                        "loop": r["loop"],
                        "target": r["target"],
                        "level": r["value"],
                        PRICE: usd,
                        "input:output": tin / tout if tin and tout else None,
                        **figures,
                    }
                )
    return pd.DataFrame(rows, columns=COLUMNS)


# --- the price in words -------------------------------------------------------------------------------------
def price_text(price: GpuPrice) -> str:
    """``$3.5`` (one price, as it always read) or ``$2.5–7`` (a range's two ends)."""
    return f"${price.lo:g}–{price.hi:g}" if price.is_range else f"${price.lo:g}"


def cost_cell(r: dict[str, Any]) -> str:
    """The capacity table's ``$ per M tok`` cell: at one price as it always read, at a range its two ends
    (``0.189–0.529``)."""
    lo, hi = r["cost_per_m"], r.get("cost_per_m_hi")
    if num(hi) is None:
        return fmt.n(lo, 3)
    return f"{fmt.n(lo, 3)}–{fmt.n(hi, 3)}"
