"""JSON workload: pass rate per backend × mode × temperature, step-0 candidates, grammar overhead, failures.

Mode names come from the workload file and are labels. Which mode is grammar-constrained comes
from the records' ``grammar`` flag (older runs without it: from the name, ``constrain``/
``grammar``/``schema``), and its unconstrained partner is the mode whose cases have exactly the
same prompt lengths (the same prompts): the grammar overhead compares their decode ms/token.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

import pandas as pd

from reports.stats import agg, num, spread

GRAMMAR_NAME = re.compile(r"constrain|grammar|schema", re.I)


def pass_rates(df: pd.DataFrame) -> pd.DataFrame:
    """Per backend, mode and temperature: n, valid, pass rate, correct rate, latency per call (median [IQR])."""
    if df.empty:
        return pd.DataFrame()
    keys = ["backend", "mode", "temperature"]
    rows = []
    for key, g in df.groupby(keys, sort=False):
        valid = g["valid_json"].dropna().astype(bool)
        correct = g["correct"].dropna().astype(bool)
        rows.append({**dict(zip(keys, key, strict=True)), "n": len(valid), "valid": int(valid.sum()),
                     "pass_rate": float(valid.mean()) if len(valid) else None,
                     "correct_n": len(correct), "correct": int(correct.sum()),
                     "correct_rate": float(correct.mean()) if len(correct) else None})
    out = pd.DataFrame(rows)
    out = out.merge(agg(df, keys, "e2e_ms", "latency"), on=keys).merge(agg(df, keys, "decode_ms_per_token", "decode"), on=keys)
    return out


def is_fence(text: str) -> bool:
    """A token that opens Markdown code (a fence or a backtick)."""
    return "`" in text


@dataclass(frozen=True)
class Candidates:
    backend: str
    mode: str
    rows: list[dict[str, Any]]  # rank, token_id, text, logit, prob, fence
    fence_rank: int | None  # rank of the first Markdown fence among the candidates, None if none
    after_mask: bool = False  # a grammar mode whose backend reports sampler log-probs (no raw logits)


def candidates(df: pd.DataFrame) -> list[Candidates]:
    """The step-0 top-k candidates per backend × mode (from the call that recorded them)."""
    out = []
    with_top = df[df["top_candidates"].map(lambda c: isinstance(c, list) and len(c) > 0)]
    for (backend, mode), g in with_top.groupby(["backend", "mode"], sort=False):
        first = g.sort_values(["temperature", "rep"]).iloc[0]
        top = first["top_candidates"]
        rows = []
        for rank, c in enumerate(top, start=1):
            lp = num(c.get("logprob"))
            text = str(c.get("text") or "")
            rows.append({"rank": rank, "token_id": c.get("token_id"), "text": text, "logit": num(c.get("logit")),
                         "prob": math.exp(lp) if lp is not None else None, "fence": is_fence(text)})
        fence = next((r["rank"] for r in rows if r["fence"]), None)
        after_mask = bool(first.get("grammar")) and all(r["logit"] is None for r in rows)
        out.append(Candidates(backend, mode, rows, fence, after_mask))
    return out


def grammar_pairs(df: pd.DataFrame) -> list[tuple[str, str]]:
    """(grammar mode, the mode with the same prompts) pairs, from the names and the prompt lengths."""
    prompts = {m: tuple(sorted(set(zip(g["case"], g["prompt_tokens"], strict=True))))
               for m, g in df.groupby("mode", sort=False)}
    flagged = df["grammar"].notna() if "grammar" in df else pd.Series(False, index=df.index)
    if flagged.any():
        grammar_modes = set(df[flagged & df["grammar"].astype(bool)]["mode"])
    else:
        grammar_modes = {m for m in prompts if GRAMMAR_NAME.search(str(m))}
    pairs = []
    for mode in prompts:
        if mode not in grammar_modes:
            continue
        base = next((m for m in prompts if m != mode and m not in grammar_modes and prompts[m] == prompts[mode]), None)
        if base is not None:
            pairs.append((mode, base))
    return pairs


def grammar_overhead(df: pd.DataFrame) -> pd.DataFrame:
    """Per backend: decode ms/token of the grammar mode vs its unconstrained partner on the same prompts."""
    rows = []
    for mode, base in grammar_pairs(df):
        for backend, g in df.groupby("backend", sort=False):
            c, s = spread(g[g["mode"] == mode]["decode_ms_per_token"]), spread(g[g["mode"] == base]["decode_ms_per_token"])
            if not c.ok or not s.ok:
                continue
            rows.append({"backend": backend, "mode": mode, "base": base, "constrained": c, "unconstrained": s,
                         "extra_ms": c.median - s.median, "ratio": c.median / s.median if s.median else None})  # type: ignore[operator]
    return pd.DataFrame(rows)


def failure_kind(text: str | None, finish_reason: str | None) -> str:
    """How a reply failed to be valid JSON: a fence, prose, a cut-off, extra text, or the schema."""
    t = (text or "").strip()
    if not t:
        return "empty reply"
    if t.startswith("```") or "```" in t[:40]:
        return "Markdown fence"
    try:
        json.loads(t)
        return "parses, but breaks the schema"
    except ValueError as exc:
        if t.startswith("{") and getattr(exc, "msg", "") == "Extra data":
            return "extra text after the JSON"
        if t.startswith("{") and finish_reason == "length":
            return "cut off at the token limit"
    if not t.startswith(("{", "[")):
        return "prose" + (" (cut off)" if finish_reason == "length" else "")
    return "malformed JSON" + (" (cut off)" if finish_reason == "length" else "")


def failing_replies(df: pd.DataFrame, limit: int = 4) -> pd.DataFrame:
    """Up to ``limit`` failing replies per backend × mode, distinct texts first."""
    failed = df[df["valid_json"].eq(False)]
    rows = []
    for (backend, mode), every in failed.groupby(["backend", "mode"], sort=False):
        for r in every.drop_duplicates(subset=["output_text"]).head(limit).to_dict("records"):
            rows.append({"backend": backend, "mode": mode, "temperature": r["temperature"], "case": r["case"],
                         "finish_reason": r["finish_reason"], "text": r["output_text"] or "",
                         "why": failure_kind(r["output_text"], r["finish_reason"])})
    return pd.DataFrame(rows)


def failure_counts(df: pd.DataFrame) -> pd.DataFrame:
    """Per backend × mode: how many replies failed, by kind of failure."""
    failed = df[df["valid_json"].eq(False)]
    if failed.empty:
        return pd.DataFrame(columns=["backend", "mode", "why", "count"])
    kinds = failed.apply(lambda r: failure_kind(r["output_text"], r["finish_reason"]), axis=1)
    out = failed.assign(why=kinds).groupby(["backend", "mode", "why"], sort=False).size()
    return out.reset_index(name="count")
