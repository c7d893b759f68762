"""Agreement: at temperature 0, do the backends (and cached vs full) produce the same tokens?

Every T=0 call is matched across backends by (workload, mode, case, turn, repeat); each backend
is compared with the first one in column order (the reference), token id by token id: the same
first token, the same whole output, and where they differ the first differing position (the
number of leading tokens they share). At that position the margin between the two best
candidates, from each engine's own log-probabilities (the records' ``step_logprobs``), tells a
split at a near-tie (rounding can swap two candidates that close) from one at a clear margin (a
real difference in what the engines compute).

Flat logits make matches meaningless: vLLM's and SGLang's dummy weights give every token the
same probability, so every engine picks the same tie-breaking id. A backend whose recorded
step-0 candidates are all equal is "flat", and a pair with a flat backend is not informative.
"""

from __future__ import annotations

import math

import pandas as pd

from llm_call_anatomy.contract.chat import common_prefix_len
from llm_call_anatomy.reports.kinds import cached_vs_full_kinds
from llm_call_anatomy.reports.stats import num

KEY = ["workload", "mode", "case", "turn", "rep", "engine_start"]
# bf16 keeps 8 significant bits: a logit between 16 and 32 is rounded to a multiple of 0.125, so two
# candidates closer than about 0.1 nat can swap order by rounding alone.
NEAR_TIE = 0.1
FLAT = 1e-6  # two log-probs this close are equal
CASE_COLUMNS = [
    *KEY,
    "backend",
    "reference",
    "same_first",
    "identical",
    "first_divergence",
    "tokens",
    "margin_reference",
    "margin_backend",
]
SUMMARY_COLUMNS = [
    "workload",
    "backend",
    "reference",
    "cases",
    "same_first",
    "identical",
    "share",
    "median_divergence",
    "near_tie",
    "clear",
    "no_margin",
    "informative",
    "why",
]


def _ids(value: object) -> list[int] | None:
    return [int(i) for i in value] if isinstance(value, list) else None


def margin_at(steps: object, position: int | None) -> float | None:
    """Top-1 minus top-2 log-prob at ``position`` of a record's ``step_logprobs`` (None: not recorded)."""
    if position is None or not isinstance(steps, list) or position >= len(steps):
        return None
    top = steps[position]
    if not isinstance(top, list) or len(top) < 2:
        return None
    a, b = num(top[0][1]), num(top[1][1])
    return a - b if a is not None and b is not None and math.isfinite(a) and math.isfinite(b) else None


def flat_backends(df: pd.DataFrame) -> dict[str, bool]:
    """Per backend with evidence: are all its step-0 top candidates equal (flat logits)?"""
    margins: dict[str, list[float]] = {}
    for r in df[["backend", "step_logprobs", "top_candidates"]].to_dict("records"):
        m = margin_at(r["step_logprobs"], 0)
        top = r["top_candidates"]
        if m is None and isinstance(top, list) and len(top) >= 2:
            m = margin_at([[[c.get("token_id"), c.get("logprob")] for c in top]], 0)
        if m is not None:
            margins.setdefault(r["backend"], []).append(m)
    return {b: all(abs(m) < FLAT for m in ms) for b, ms in margins.items()}


def _compare(a: dict, b: dict) -> dict:
    ids_a, ids_b = _ids(a["output_token_ids"]) or [], _ids(b["output_token_ids"]) or []
    same = ids_a == ids_b
    div = None if same else common_prefix_len(ids_a, ids_b)
    return {
        "same_first": bool(ids_a[:1] == ids_b[:1] and ids_a),
        "identical": same,
        "first_divergence": div,
        "tokens": min(len(ids_a), len(ids_b)),
        "margin_reference": margin_at(a.get("step_logprobs"), div),
        "margin_backend": margin_at(b.get("step_logprobs"), div),
    }


def _greedy(df: pd.DataFrame) -> pd.DataFrame:
    return df[df["temperature"].eq(0) & df["output_token_ids"].map(lambda v: isinstance(v, list))]


def _key(row: dict, columns: list[str]) -> tuple:
    """The row's values in ``columns`` (None for missing; engine_start 0 for runs from before it existed)."""
    out = []
    for c in columns:
        v = row.get(c)
        v = None if v is None or (isinstance(v, float) and pd.isna(v)) else v
        out.append((v or 0) if c == "engine_start" else v)
    return tuple(out)


def per_case(df: pd.DataFrame, backends: list[str]) -> pd.DataFrame:
    """One row per (call, backend other than the reference):
    same first token, identical, divergence, margins."""
    greedy = _greedy(df)
    present = [b for b in backends if b in set(greedy["backend"])]
    if len(present) < 2:
        return pd.DataFrame(columns=CASE_COLUMNS)
    ref, others = present[0], present[1:]
    rows_of = {
        b: {_key(r, KEY): r for r in greedy[greedy["backend"] == b].to_dict("records")} for b in present
    }
    rows = []
    for backend in others:
        for k, mine in rows_of[backend].items():
            theirs = rows_of[ref].get(k)
            if theirs is not None:
                rows.append(
                    {
                        **dict(zip(KEY, k, strict=True)),
                        "backend": backend,
                        "reference": ref,
                        **_compare(theirs, mine),
                    }
                )
    return pd.DataFrame(rows, columns=CASE_COLUMNS)


def cached_vs_full(df: pd.DataFrame, kinds: tuple[str, ...] | None = None) -> pd.DataFrame:
    """Per backend, each turn and repeat at T=0 of the ``kinds`` (default: those registered with
    ``ReportKind.cached_vs_full``): ``cached`` compared with ``full`` (the reference)."""
    if kinds is None:
        kinds = cached_vs_full_kinds()
    greedy = _greedy(df[df["kind"].isin(kinds)])
    keys = ["workload", "case", "turn", "rep", "engine_start"]
    rows = []
    for backend, g in greedy.groupby("backend", sort=False):
        full = {_key(r, keys): r for r in g[g["mode"] == "full"].to_dict("records")}
        for r in g[g["mode"] == "cached"].to_dict("records"):
            f = full.get(_key(r, keys))
            if f is not None:
                rows.append(
                    {
                        **dict(zip(keys, _key(r, keys), strict=True)),
                        "mode": "cached",
                        "backend": backend,
                        "reference": "full",
                        **_compare(f, r),
                    }
                )
    return pd.DataFrame(rows, columns=CASE_COLUMNS)


def split_kind(row: dict) -> str | None:
    """'near-tie' / 'clear margin' / 'no margin recorded' for a call that diverged; None if identical."""
    if row["identical"]:
        return None
    margins = [m for m in (num(row["margin_reference"]), num(row["margin_backend"])) if m is not None]
    if not margins:
        return "no margin recorded"
    return "near-tie" if min(margins) < NEAR_TIE else "clear margin"


def summary(cases: pd.DataFrame, flat: dict[str, bool] | None = None) -> pd.DataFrame:
    """Per workload and pair: calls, same first token, identical, median first divergence, kinds of split.

    ``informative`` is False where either side's logits are flat (see the module docstring)."""
    flat = flat or {}
    rows = []
    for (workload, backend, ref), g in cases.groupby(["workload", "backend", "reference"], sort=False):
        div = g["first_divergence"].dropna()
        kinds = [split_kind(r) for r in g.to_dict("records")]
        flat_sides = [b for b in (ref, backend) if flat.get(b)]
        rows.append(
            {
                "workload": workload,
                "backend": backend,
                "reference": ref,
                "cases": len(g),
                "same_first": int(g["same_first"].sum()),
                "identical": int(g["identical"].sum()),
                "share": float(g["identical"].mean()),
                "median_divergence": float(div.median()) if len(div) else None,
                "near_tie": kinds.count("near-tie"),
                "clear": kinds.count("clear margin"),
                "no_margin": kinds.count("no margin recorded"),
                "informative": not flat_sides,
                "why": f"flat logits on {', '.join(flat_sides)}: every step-0 candidate equally likely"
                if flat_sides
                else "",
            }
        )
    return pd.DataFrame(rows, columns=SUMMARY_COLUMNS)
