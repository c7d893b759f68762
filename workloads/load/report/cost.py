"""What a GPU-hour buys at each capacity point (``--gpu-hour-usd PRICE``), input and output priced apart.

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

A level with no steady window (too short) or a target with no capacity has no row.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from llm_call_anatomy.reports.stats import num

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


def cost_table(caps: pd.DataFrame, steady: pd.DataFrame, price: float | None) -> pd.DataFrame:
    """A row per capacity row that has a level (its last pass, or a throughput-only target's peak), priced at
    ``price`` $ a GPU-hour; empty without a price (the page shows the formula)."""
    rows = []
    if price and not caps.empty and not steady.empty:
        for r in caps.to_dict("records"):
            if num(r.get("value")) is None:
                continue
            at = _at(steady, r)
            figures = prices(at, price) if at else None
            if figures is None:
                continue
            tin, tout = num(at.get("input_tps")), num(at.get("output_tps"))
            rows.append(
                {
                    "backend": r["backend"],
                    "variant": f"{r['workload']} · {r['mode']}",
                    "loop": r["loop"],
                    "target": r["target"],
                    "level": r["value"],
                    "input:output": tin / tout if tin and tout else None,
                    **figures,
                }
            )
    return pd.DataFrame(rows, columns=COLUMNS)
