"""Template workload: clean-answer rate per backend × format, one sample reply each, and the attention probe.

``clean`` means the reply is exactly the short answer and the model stopped on its own. The
``attention`` mode is not a format: it is one forward pass (HF eager) that records, per layer,
the share of the last position's attention landing on special tokens.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from llm_call_anatomy.reports.fmt import text as text_cell

PROBE = "attention"


def clean_rates(df: pd.DataFrame) -> pd.DataFrame:
    """Per backend and format: n, clean answers and their rate."""
    answers = df[(df["mode"] != PROBE) & df["clean"].notna()]
    rows = []
    for (backend, fmt), g in answers.groupby(["backend", "mode"], sort=False):
        clean = g["clean"].astype(bool)
        rows.append(
            {
                "backend": backend,
                "format": fmt,
                "n": len(clean),
                "clean": int(clean.sum()),
                "rate": float(clean.mean()),
            }
        )
    return pd.DataFrame(rows, columns=["backend", "format", "n", "clean", "rate"])


def samples(df: pd.DataFrame) -> pd.DataFrame:
    """One reply per backend × format (the first question), so a reader sees what came back."""
    answers = df[df["mode"] != PROBE]
    rows = []
    for (backend, fmt), g in answers.groupby(["backend", "mode"], sort=False):
        r = g.iloc[0]
        rows.append(
            {
                "backend": backend,
                "format": fmt,
                "case": r["case"],
                "text": text_cell(r["output_text"]),
                "clean": r["clean"],
                "finish_reason": r["finish_reason"],
            }
        )
    return pd.DataFrame(rows)


def attention(df: pd.DataFrame) -> pd.DataFrame:
    """Per backend and layer: share of the last position's attention on special tokens."""
    rows = []
    for r in df[df["mode"] == PROBE].to_dict("records"):
        shares = r.get("attention_special_share")
        if isinstance(shares, list):
            extra = r.get("extra") or {}
            first = extra.get("position0_share") if isinstance(extra.get("position0_share"), list) else []
            rows += [
                {
                    "backend": r["backend"],
                    "layer": i,
                    "share": float(s),
                    "special_positions": extra.get("special_positions"),
                    "prompt_tokens": r.get("prompt_tokens"),
                    "position0": float(first[i]) if i < len(first) else None,
                    "position0_special": extra.get("position0_special"),
                }
                for i, s in enumerate(shares)
            ]
    return pd.DataFrame(rows, columns=COLUMNS)


COLUMNS = [
    "backend",
    "layer",
    "share",
    "special_positions",
    "prompt_tokens",
    "position0",
    "position0_special",
]


def sink(att: pd.DataFrame) -> dict[str, float] | None:
    """Position 0's part of the special-token share (when
    position 0 is special): median over layers of both."""
    known = att.dropna(subset=["position0"])
    if known.empty or not known["position0_special"].fillna(False).astype(bool).all():
        return None
    return {
        "share": float(known["share"].median()),
        "position0": float(known["position0"].median()),
        "rest": float((known["share"] - known["position0"]).median()),
    }


# --- the section's data (the kind's report half, ``workloads.template.report.KIND``) ---
def data(rows: pd.DataFrame, ctx: Any, name: str) -> dict[str, Any]:
    """The section's data (``ReportKind.analyse``)."""
    return {"rates": clean_rates(rows), "samples": samples(rows), "attention": attention(rows)}
