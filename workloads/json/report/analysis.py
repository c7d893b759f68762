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

from llm_call_anatomy.reports import fmt, intervals
from llm_call_anatomy.reports.assemble import random_weights_note
from llm_call_anatomy.reports.model import Caveat
from llm_call_anatomy.reports.stats import agg, num, spread

GRAMMAR_NAME = re.compile(r"constrain|grammar|schema", re.I)


def pass_rates(df: pd.DataFrame) -> pd.DataFrame:
    """Per backend, mode and temperature: n, valid, pass
    rate, correct rate, latency per call (median [IQR])."""
    if df.empty:
        return pd.DataFrame()
    keys = ["backend", "mode", "temperature"]
    rows = []
    for key, g in df.groupby(keys, sort=False):
        valid = g["valid_json"].dropna().astype(bool)
        correct = g["correct"].dropna().astype(bool)
        rows.append(
            {
                **dict(zip(keys, key, strict=True)),
                "n": len(valid),
                "valid": int(valid.sum()),
                "pass_rate": float(valid.mean()) if len(valid) else None,
                "correct_n": len(correct),
                "correct": int(correct.sum()),
                "correct_rate": float(correct.mean()) if len(correct) else None,
            }
        )
    out = pd.DataFrame(rows)
    out = out.merge(agg(df, keys, "e2e_ms", "latency"), on=keys).merge(
        agg(df, keys, "decode_ms_per_token", "decode"), on=keys
    )
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
            rows.append(
                {
                    "rank": rank,
                    "token_id": c.get("token_id"),
                    "text": text,
                    "logit": num(c.get("logit")),
                    "prob": math.exp(lp) if lp is not None else None,
                    "fence": is_fence(text),
                }
            )
        fence = next((r["rank"] for r in rows if r["fence"]), None)
        after_mask = bool(first.get("grammar")) and all(r["logit"] is None for r in rows)
        out.append(Candidates(backend, mode, rows, fence, after_mask))
    return out


def grammar_pairs(df: pd.DataFrame) -> list[tuple[str, str]]:
    """(grammar mode, the mode with the same prompts) pairs, from the names and the prompt lengths."""
    prompts = {
        m: tuple(sorted(set(zip(g["case"], g["prompt_tokens"], strict=True))))
        for m, g in df.groupby("mode", sort=False)
    }
    flagged = df["grammar"].notna() if "grammar" in df else pd.Series(False, index=df.index)
    if flagged.any():
        grammar_modes = set(df[flagged & df["grammar"].astype(bool)]["mode"])
    else:
        grammar_modes = {m for m in prompts if GRAMMAR_NAME.search(str(m))}
    pairs = []
    for mode in prompts:
        if mode not in grammar_modes:
            continue
        base = next(
            (m for m in prompts if m != mode and m not in grammar_modes and prompts[m] == prompts[mode]), None
        )
        if base is not None:
            pairs.append((mode, base))
    return pairs


def grammar_overhead(df: pd.DataFrame) -> pd.DataFrame:
    """Per backend: decode ms/token of the grammar mode vs its unconstrained partner on the same prompts."""
    rows = []
    for mode, base in grammar_pairs(df):
        for backend, g in df.groupby("backend", sort=False):
            c, s = (
                spread(g[g["mode"] == mode]["decode_ms_per_token"]),
                spread(g[g["mode"] == base]["decode_ms_per_token"]),
            )
            if not c.ok or not s.ok:
                continue
            rows.append(
                {
                    "backend": backend,
                    "mode": mode,
                    "base": base,
                    "constrained": c,
                    "unconstrained": s,
                    "extra_ms": c.median - s.median,
                    "ratio": c.median / s.median if s.median else None,
                }
            )  # type: ignore[operator]
    return pd.DataFrame(rows)


def failure_kind(text: str | None, finish_reason: str | None) -> str:
    """How a reply failed to be valid JSON: a fence, prose, a cut-off, extra text, or the schema."""
    t = fmt.text(text).strip()
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
            rows.append(
                {
                    "backend": backend,
                    "mode": mode,
                    "temperature": r["temperature"],
                    "case": r["case"],
                    "finish_reason": r["finish_reason"],
                    "text": fmt.text(r["output_text"]),
                    "why": failure_kind(r["output_text"], r["finish_reason"]),
                }
            )
    return pd.DataFrame(rows)


def failure_counts(df: pd.DataFrame) -> pd.DataFrame:
    """Per backend × mode: how many replies failed, by kind of failure."""
    failed = df[df["valid_json"].eq(False)]
    if failed.empty:
        return pd.DataFrame(columns=["backend", "mode", "why", "count"])
    kinds = failed.apply(lambda r: failure_kind(r["output_text"], r["finish_reason"]), axis=1)
    out = failed.assign(why=kinds).groupby(["backend", "mode", "why"], sort=False).size()
    return out.reset_index(name="count")


# --- the seed's claims ------------------------------------------------------------------------
@dataclass(frozen=True)
class Claim:
    backend: str
    claim: str
    verdict: str  # "holds" | "does not hold" | "not decided" | "not measured" | RANDOM
    evidence: str


FENCE_OR_PROSE = ("Markdown fence", "prose")


def mode_roles(df: pd.DataFrame) -> dict[str, str | None]:
    """Which mode is free, strict, constrained: the grammar
    mode, its partner on the same prompts, the other one."""
    pairs = grammar_pairs(df)
    constrained, strict = pairs[0] if pairs else (None, None)
    others = [m for m in dict.fromkeys(df["mode"]) if m not in (constrained, strict)]
    names = {str(m).lower(): m for m in dict.fromkeys(df["mode"])}
    return {
        "free": names.get("free", others[0] if others else None),
        "strict": strict or names.get("strict"),
        "constrained": constrained,
    }


def _pooled(rates: pd.DataFrame, backend: str, mode: str | None) -> tuple[int, int, int, int] | None:
    g = (
        rates[(rates["backend"] == backend) & (rates["mode"] == mode)]
        if mode is not None
        else rates.iloc[0:0]
    )
    if g.empty or not g["n"].sum():
        return None
    return int(g["valid"].sum()), int(g["n"].sum()), int(g["correct"].sum()), int(g["correct_n"].sum())


RANDOM = "not measurable: random weights"


def claims(
    df: pd.DataFrame, rates: pd.DataFrame, counts: pd.DataFrame, random_weights: bool = False
) -> list[Claim]:
    """The seed's three claims about JSON output, each judged
    per backend from these runs (all temperatures pooled).

    Counts decide through intervals (:mod:`reports.intervals`): "fail on fences or prose" holds when
    the 95 % interval of their share of the failures is above one half; "a strict prompt helps" when
    the interval of the difference in valid rates is above zero. All three are about the model's
    answers: on random weights each reads "not measurable: random weights" (the counts stay shown).
    """
    if df.empty or rates.empty:
        return []
    roles = mode_roles(df)
    free, strict, constrained = roles["free"], roles["strict"], roles["constrained"]
    out = []
    for backend in dict.fromkeys(rates["backend"]):
        f, s, c = (_pooled(rates, backend, m) for m in (free, strict, constrained))
        text = "Free prompts fail on Markdown fences or prose"
        if f is None:
            out.append(Claim(backend, text, "not measured", "no free-prompt calls"))
        else:
            failed = f[1] - f[0]
            kinds = (
                counts[(counts["backend"] == backend) & (counts["mode"] == free)]
                if not counts.empty
                else counts
            )
            by_kind = {k["why"]: int(k["count"]) for k in kinds.to_dict("records")}
            fence_prose = sum(n for why, n in by_kind.items() if why.startswith(FENCE_OR_PROSE))
            how = ", ".join(f"{why} {n}" for why, n in by_kind.items())
            ci = intervals.wilson(fence_prose, failed)
            where = intervals.against_band(ci, 0.5, 1.0)
            verdict = (
                "does not hold"
                if not failed
                else "holds"
                if where == intervals.INSIDE
                else "does not hold"
                if where == intervals.OUTSIDE
                else "not decided"
            )
            share = (
                f"; fence or prose {fence_prose} of {failed} failures, 95 % interval {intervals.show(ci)}"
                if failed
                else ""
            )
            out.append(
                Claim(
                    backend,
                    text,
                    RANDOM if random_weights else verdict,
                    f"'{free}': {f[0]} of {f[1]} valid" + (f"; failures: {how}" if failed else "") + share,
                )
            )
        text = "A strict prompt helps"
        if f is None or s is None:
            out.append(Claim(backend, text, "not measured", "needs both a free and a strict mode"))
        else:
            ci = intervals.difference(s[0], s[1], f[0], f[1])
            verdict = (
                ("holds" if ci[0] > 0 else "does not hold" if ci[1] <= 0 else "not decided")
                if ci
                else "not measured"
            )
            out.append(
                Claim(
                    backend,
                    text,
                    RANDOM if random_weights else verdict,
                    f"'{strict}' {s[0]} of {s[1]} valid ({s[0] / s[1]:.0%}) vs '{free}' {f[0]} of {f[1]} "
                    f"({f[0] / f[1]:.0%}); difference 95 % interval {intervals.show(ci)}",
                )
            )
        text = "The grammar mask guarantees the form, not the truth"
        if c is None:
            out.append(Claim(backend, text, "not measured", "no grammar-constrained calls"))
        elif c[0] < c[1]:
            out.append(
                Claim(
                    backend,
                    text,
                    RANDOM if random_weights else "does not hold",
                    f"'{constrained}': only {c[0]} of {c[1]} valid",
                )
            )
        else:
            truth = (
                f"{c[3] - c[2]} of {c[3]} valid answers have wrong values"
                if c[2] < c[3]
                else f"all {c[3]} also correct here: the truth was not put to the test"
            )
            out.append(
                Claim(
                    backend,
                    text,
                    RANDOM if random_weights else "holds",
                    f"'{constrained}': {c[0]} of {c[1]} valid; {truth}",
                )
            )
    return out


# --- the section: its data and caveats (the kind's report half, ``workloads.json.report.KIND``) ---
def data(rows: pd.DataFrame, ctx: Any, name: str) -> dict[str, Any]:
    """The section's data (``ReportKind.analyse``); the claims read "not measurable" on random weights."""
    random_weights = random_weights_note(ctx.ds) is not None
    rates, counts = pass_rates(rows), failure_counts(rows)
    return {
        "rates": rates,
        "candidates": candidates(rows),
        "overhead": grammar_overhead(rows),
        "failures": failing_replies(rows),
        "failure_counts": counts,
        "modes": list(dict.fromkeys(rows["mode"])),
        "claims": claims(rows, rates, counts, random_weights),
    }


def caveats(s: Any) -> list[Caveat]:
    """The section's caveats: the grammar's cost per token, a Markdown fence among the step-0 candidates."""
    out = []
    for r in s.data["overhead"].to_dict("records"):
        c, u = r["constrained"], r["unconstrained"]
        figures = (
            f"'{r['mode']}' {fmt.stat(c, 'ms/token')} vs '{r['base']}' "
            f"{fmt.stat(u, 'ms/token')} on the same prompts"
        )
        if c.q1 is not None and u.q3 is not None and c.q1 > u.q3:
            out.append(
                Caveat(
                    s.name,
                    f"{r['backend']}: the grammar costs {fmt.n(r['extra_ms'])} ms per decoded token "
                    f"({fmt.times(r['ratio'])}): {figures}.",
                )
            )
        else:
            out.append(
                Caveat(
                    s.name,
                    f"{r['backend']}: no measurable grammar overhead (the "
                    f"IQRs overlap or the grammar mode is faster): {figures}.",
                )
            )
    for c in s.data["candidates"]:
        if c.fence_rank is not None:
            p = c.rows[c.fence_rank - 1]["prob"]
            out.append(
                Caveat(
                    s.name,
                    f"{c.backend}, mode '{c.mode}': a Markdown fence is step-0 candidate #{c.fence_rank} "
                    f"(p = {fmt.n(p)}): without a grammar a fence can open the reply.",
                )
            )
    return out
