"""The seed article's claims about prefix reuse over its conversation (kind ``conversation``).

The tokens computed and the summed TTFT over the conversation, full vs cached, per backend with both
modes; and where reuse stops (a few tokens before the previous prompt's end), read from where the
conversation's prompts break, which is the chat template's doing and so the same on every backend; and the
flat TTFT floor below ~500 tokens, judged on the full re-prefill turns that short.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from llm_call_anatomy.reports import fmt, intervals, reference
from llm_call_anatomy.reports.analysis.claims import (
    claim,
    does_not_hold,
    holds,
    not_decided,
    not_measurable,
    setup_specific,
)
from llm_call_anatomy.reports.analysis.seed_claims import SEED, section_of, strata_by, value_range
from llm_call_anatomy.reports.model import Claim
from llm_call_anatomy.reports.stats import num

if TYPE_CHECKING:
    from llm_call_anatomy.reports.model import Report


ORDER = 2  # where this module's claims stand on the page (reports.analysis.claims)


def _conversation(report: Report) -> pd.DataFrame:
    s = section_of(report, "conversation")
    return s.data["totals"] if s is not None else pd.DataFrame()


def _full_vs_cached(tot: pd.DataFrame, column: str, unit: str) -> tuple[dict[str, str], list[float]]:
    """Per backend with both modes: "full → cached (ratio)" of one conversation total, and the ratios."""
    here, ratios = {}, []
    for b, g in tot.groupby("backend", sort=False):
        full, cached = (
            num(g[g["mode"] == m][column].iloc[0]) if (g["mode"] == m).any() else None
            for m in ("full", "cached")
        )
        if full and cached:
            here[b] = f"{fmt.n(full)} → {fmt.n(cached)}{unit} ({fmt.times(full / cached)})"
            ratios.append(full / cached)
    return here, ratios


def _full_vs_cached_claim(
    report: Report, statement: str, theirs: str, column: str, unit: str, reason: Callable[[list[float]], str]
) -> Claim:
    """A conversation total, full vs cached per backend with both modes: not measurable without a
    conversation or without a backend that ran both; else setup-specific, ``reason(ratios)`` saying why."""
    tot = _conversation(report)
    if tot.empty:
        return Claim(SEED, statement, theirs, not_measurable("these runs have no conversation"))
    here, ratios = _full_vs_cached(tot, column, unit)
    if not here:
        return Claim(SEED, statement, theirs, not_measurable("no backend ran both full and cached modes"))
    return Claim(SEED, statement, theirs, setup_specific(reason(ratios)), here)


@claim
def conversation_tokens(report: Report) -> Claim:
    """The seed's claim that prefix reuse cuts the tokens computed about 5.5×: full → cached per backend that
    ran both modes. Always setup-specific, since the counts belong to the conversation, not the stack."""
    c = reference.CONVERSATION
    return _full_vs_cached_claim(
        report,
        "Prefix reuse cuts the tokens computed over the conversation about 5.5×",
        f"{fmt.n(c['tokens_full'])} → {fmt.n(c['tokens_cached'])} tokens ({fmt.times(c['tokens_ratio'])})",
        "tokens_med",
        "",
        lambda ratios: tokens_reason(ratios, c["tokens_ratio"]),
    )


NO_SAVING = 1.1  # a full/cached token ratio below this is no saving to speak of


def tokens_reason(ratios: list[float], seed_ratio: float) -> str:
    """Why the token saving is setup-specific. "Of the same order on every backend" only where every backend
    saved (issue 43: vLLM on a CPU, blocks of 128 against turns sharing 68-112 tokens, reused nothing and
    read "the saving is of the same order (1.0× here vs 5.5×)"); else the range, and where to read why."""
    head = "the counts belong to the conversation (its logs' lengths, number of turns), not the stack; "
    if min(ratios) >= NO_SAVING:
        return (
            f"{head}the saving is of the same order ({value_range(ratios, 1)}× here vs "
            f"{fmt.times(seed_ratio)}) on every backend with a prefix cache"
        )
    return (
        f"{head}the saving here is {value_range(ratios, 1)}× (vs {fmt.times(seed_ratio)}); a backend that "
        "saved about nothing reused less than the turns share: the per-turn reuse table and the Caveats say "
        "why (a KV block longer than the shared prefix, eviction, a cache off)"
    )


@claim
def conversation_ttft(report: Report) -> Claim:
    """The seed's claim that summed TTFT drops with reuse (868 → 642 ms): full → cached per backend that ran
    both modes. Always setup-specific, since the milliseconds belong to the stack, GPU and workload."""
    c = reference.CONVERSATION
    seed_ratio = fmt.times(c["ttft_full_ms"] / c["ttft_cached_ms"])
    return _full_vs_cached_claim(
        report,
        "Summed TTFT over the conversation drops with reuse, 868 → 642 ms",
        f"{fmt.n(c['ttft_full_ms'])} → {fmt.n(c['ttft_cached_ms'])} ms ({seed_ratio})",
        "ttft_med",
        " ms",
        lambda ratios: (
            "the milliseconds are the stack's, GPU's and workload's; the time saving "
            f"({value_range(ratios, 1)}× here, {seed_ratio} in the seed) stays below the token "
            "saving wherever a fixed per-call cost, not the tokens, sets TTFT"
        ),
    )


@claim
def reuse_stops_early(report: Report) -> Claim:
    """The seed's claim that prefix reuse stops a few tokens before the previous prompt's end, judged from
    where the conversation's prompts break (the chat template's doing, so the same on every backend)."""
    statement = "Prefix reuse stops a few tokens before the end of the previous prompt"
    theirs = reference.REUSE
    s = section_of(report, "conversation")
    if s is None:
        return Claim(SEED, statement, theirs, not_measurable("these runs have no conversation"))
    summary = s.data.get("break_summary")
    if not summary:  # every turn's prompt extends the previous one: nothing is lost
        return Claim(
            SEED,
            statement,
            theirs,
            setup_specific(
                "this model's chat template writes each prompt as an extension of the "
                "previous one, so reuse runs to the previous prompt's end; the early stop "
                "belongs to Qwen3's template (its empty think block), not to the engines"
            ),
            {b: "0 tokens lost on every turn" for b in s.backends},
        )
    lost = summary["lost"]
    if not lost.ok:
        return Claim(
            SEED, statement, theirs, not_measurable("the records do not say where the prefix breaks")
        )
    shown = "".join(fmt.token(t) for t in summary.get("first_lost_tokens") or [])
    text = f"{value_range([lost.lo, lost.hi], 0)} tokens lost on each of {lost.n} turns" + (
        f" ({shown})" if shown else ""
    )
    here = {b: text for b in s.backends}
    if lost.hi <= 16:
        return Claim(
            SEED,
            statement,
            theirs,
            holds(
                "the chat template drops the previous turn's empty think block; "
                "the break is in the prompts, so every backend sees it"
            ),
            here,
        )
    return Claim(
        SEED,
        statement,
        theirs,
        does_not_hold("the prompts here do not break just before the previous end"),
        here,
    )


def _short_full_turns(report: Report, below: int) -> pd.DataFrame:
    """The conversation's full re-prefill calls (the cache reset before each) with prompts below ``below``
    tokens, every repeat of every engine start: what the floor's interval resamples."""
    s = section_of(report, "conversation")
    if s is None:
        return pd.DataFrame()
    df = report.ds.measured()
    df = df[(df["workload"] == s.name) & (df["mode"] == "full")]
    return df[df["prompt_tokens"].map(num).map(lambda n: n is not None and n < below)]


@claim
def ttft_floor(report: Report) -> Claim:
    """The seed's claim of a flat ~65 ms floor below ~500 tokens: per backend, TTFT's least-squares change
    over the conversation's full re-prefill turns shorter than that, with a bootstrap interval (strata: the
    turns) against ±15 % of its median. The shape is the claim; its level is the stack's (setup-specific)."""
    c = reference.CONVERSATION
    below, level = c["floor_below_tokens"], c["floor_ms"]
    statement = (
        f"Below about {fmt.n(below)} tokens a call costs a flat ~{fmt.n(level)} ms, whatever the length"
    )
    theirs = f"≈ {fmt.n(level)} ms at every prompt below ~{fmt.n(below)} tokens"
    rows = _short_full_turns(report, below)
    if rows.empty:
        return Claim(
            SEED,
            statement,
            theirs,
            not_measurable(f"no full re-prefill turn shorter than {fmt.n(below)} tokens"),
        )
    here, where, levels = {}, {}, []
    for b, g in rows.groupby("backend", sort=False):
        strata = [st for st in strata_by(g, "prompt_tokens", "ttft_ms") if st]
        flat = intervals.flatness(strata) if len(strata) >= 2 else None  # one length: no slope to tell
        if flat is None:
            continue
        medians = [float(np.median([y for _, y in st])) for st in strata]
        levels.append(float(np.median(flat.ys)))
        where[b] = flat.where
        here[b] = (
            f"{value_range(medians, 1, 'ms')} over N={int(flat.xs.min())}–{int(flat.xs.max())} "
            f"({len(strata)} turns, full re-prefill); fitted change {flat.fitted} "
            f"{intervals.show(flat.interval)}"
        )
    if not here:
        return Claim(
            SEED,
            statement,
            theirs,
            not_measurable(f"fewer than two turn lengths below {fmt.n(below)} tokens"),
        )
    band = fmt.pct(intervals.FLAT)
    test = (
        "TTFT at the caller on the conversation's full re-prefill turns below "
        f"{fmt.n(below)} tokens, the least-squares line's change over their lengths relative to the median, "
        f"95 % bootstrap interval over every repeat and engine start; flat means inside ±{band}"
    )
    out = [b for b, w in where.items() if w == intervals.OUTSIDE]
    undecided = [b for b, w in where.items() if w in (intervals.ACROSS, None)]
    if out:  # as decode's flatness: a backend clearly off decides, whatever the others' noise
        flat = [b for b, w in where.items() if w == intervals.INSIDE]
        where_flat = f"; flat on {', '.join(flat)}" if flat else ""
        return Claim(
            SEED,
            statement,
            theirs,
            does_not_hold(f"TTFT grows with the length on {', '.join(out)}{where_flat} ({test})"),
            here,
        )
    if undecided:
        return Claim(
            SEED,
            statement,
            theirs,
            not_decided(f"the interval crosses ±{band} on {', '.join(undecided)} ({test})"),
            here,
        )
    return Claim(
        SEED,
        statement,
        theirs,
        setup_specific(
            f"the floor exists on every backend ({test}); its level is the stack's: "
            f"{value_range(levels, 1)} ms here by backend against {fmt.n(level)} ms on HF eager on an A100"
        ),
        here,
    )
