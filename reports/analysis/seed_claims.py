"""The seed article's quantitative claims, one check each (see :mod:`reports.analysis.claims`).

Each check reads this report's figures (never typed in), quotes the article's from
:mod:`reports.reference`, and says whether the claim holds here, is specific to the seed's
setup (HF eager on an A100, its workload) and why, or cannot be measured here and why.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from reports import fmt, intervals, reference
from reports.analysis.claims import (
    Claim,
    claim,
    does_not_hold,
    holds,
    not_decided,
    not_measurable,
    setup_specific,
)
from reports.stats import num

if TYPE_CHECKING:
    from reports.assemble import Report, Section

SEED = "seed article"
FLAT = 0.15  # "flat in N": the fitted change of decode over the swept lengths within ±15 % of its median
ONE_STEP = (0.5, 2.0)  # "about one decode step": within a factor of two


def _section(report: Report, kind: str) -> Section | None:
    return next((s for s in report.sections if s.kind == kind and s.data), None)


def _lengths(report: Report) -> pd.DataFrame:
    s = _section(report, "sweep")
    return s.data["lengths"] if s is not None else pd.DataFrame()


def _range(values: list[float], digits: int | None = None, unit: str = "") -> str:
    lo, hi = min(values), max(values)
    text = (
        fmt.n(lo, digits)
        if fmt.n(lo, digits) == fmt.n(hi, digits)
        else f"{fmt.n(lo, digits)}–{fmt.n(hi, digits)}"
    )
    return f"{text} {unit}".strip()


def _no_sweep(statement: str, theirs: str) -> Claim:
    return Claim(SEED, statement, theirs, not_measurable("these runs have no length sweep"))


def _sweep_rows(report: Report) -> pd.DataFrame:
    """The sweep's raw measured records (every repeat of every engine start): what the intervals resample."""
    s = _section(report, "sweep")
    if s is None:
        return pd.DataFrame()
    df = report.ds.measured()
    return df[df["workload"] == s.name]


def _pairs(g: pd.DataFrame, x: str, y: str) -> list[tuple[float, float]]:
    return [
        (num(a), num(b)) for a, b in zip(g[x], g[y], strict=True) if num(a) is not None and num(b) is not None
    ]


@claim
def decode_flat(report: Report) -> Claim:
    """The seed's claim that decode is flat in the prompt length, judged by the fitted change of decode over
    the swept lengths and its bootstrap interval against a ±band, per backend."""
    statement = "Decode costs about 64 ms per token, flat in the prompt length N"
    theirs = f"≈ {fmt.n(reference.DECODE['ms_per_token'])} ms/token at every N"
    lengths, rows = _lengths(report), _sweep_rows(report)
    if lengths.empty or rows.empty:
        return _no_sweep(statement, theirs)
    here, where, levels = {}, {}, []
    for b, g in rows.groupby("backend", sort=False):
        strata = [
            _pairs(s, "prompt_tokens", "decode_ms_per_token")
            for _, s in g.groupby("prompt_tokens", sort=True)
        ]
        pairs = [xy for st in strata for xy in st]
        if not pairs:
            continue
        xs, ys = (np.asarray(v, dtype=float) for v in zip(*pairs, strict=True))
        change, ci = intervals.relative_change(xs, ys), intervals.bootstrap(strata, intervals.relative_change)
        d = [v for v in lengths[lengths["backend"] == b]["decode_med"].map(num) if v is not None]
        levels.append(float(np.median(ys)))
        where[b] = intervals.against_band(ci, -FLAT, FLAT)
        fitted = "–" if change is None else f"{change * 100:+.1f} %"
        here[b] = (
            f"{_range(d or [float(np.median(ys))], 3, 'ms/token')}; fitted change over N={int(xs.min())}–"
            f"{int(xs.max())}: {fitted} {intervals.show(ci)}"
        )
    if not here:
        return _no_sweep(statement, theirs)
    test = (
        "the least-squares line of decode on N, its change over the swept lengths relative to the median, "
        f"95 % bootstrap interval over every repeat and engine start; flat means inside ±{fmt.pct(FLAT)}"
    )
    out = [b for b, w in where.items() if w == intervals.OUTSIDE]
    undecided = [b for b, w in where.items() if w in (intervals.ACROSS, None)]
    if out:
        return Claim(
            SEED,
            statement,
            theirs,
            does_not_hold(
                f"decode changes by more than ±{fmt.pct(FLAT)} over N on {', '.join(out)} ({test})"
            ),
            here,
        )
    if undecided:
        return Claim(
            SEED,
            statement,
            theirs,
            not_decided(
                f"the interval crosses ±{fmt.pct(FLAT)} on {', '.join(undecided)}: "
                f"the repeats are too noisy to say ({test})"
            ),
            here,
        )
    return Claim(
        SEED,
        statement,
        theirs,
        setup_specific(
            f"the shape holds: flat on every backend ({test}); the level is HF "
            f"eager's on an A100: here {_range(levels, 3)} ms/token by backend, "
            "set by launch overhead (eager) or memory bandwidth (engines)"
        ),
        here,
    )


@claim
def bandwidth_share(report: Report) -> Claim:
    """The seed's claim about the share of memory bandwidth a decode step uses: this run's share per backend
    (datasheet, and measured copy where given), always specific to the stack."""
    statement = "A decode step uses about 16 % of the GPU's memory bandwidth"
    theirs = f"{fmt.pct(reference.DECODE['bandwidth_share'])} of the A100's datasheet bandwidth"
    s = _section(report, "sweep")
    vs = s.data["vs_roof"] if s is not None else pd.DataFrame()
    if vs.empty:
        return Claim(
            SEED,
            statement,
            theirs,
            not_measurable("no roofline for these runs (CPU, or GPU/model size unknown)"),
        )
    here = {}
    for b, g in vs.groupby("backend", sort=False):
        text = f"{_range(list(g['bandwidth_share'] * 100), 0)} % of the datasheet"
        if g["copy_share"].notna().any():
            text += f", {_range(list(g['copy_share'].dropna() * 100), 0)} % of the measured copy"
        here[b] = text
    shares = vs.groupby("backend", sort=False)["bandwidth_share"].median()
    return Claim(
        SEED,
        statement,
        theirs,
        setup_specific(
            "bytes read per step ÷ decode time; the share belongs to the "
            f"stack: {_range(list(shares * 100), 0)} % here by backend (low "
            "where per-token launch overhead, not memory, sets the pace)"
        ),
        here,
    )


@claim
def short_prefill_one_step(report: Report) -> Claim:
    """The seed's claim that a short prefill costs about one decode step: median TTFT over median decode step
    at each prompt length in the seed's range, with a bootstrap interval judged against a factor of two."""
    lo, hi = reference.PREFILL["N_lo"], reference.PREFILL["N_hi"]
    statement = f"Prefilling {lo}–{hi} tokens costs about one decode step"
    theirs = "≈ 1 decode step"
    lengths, rows = _lengths(report), _sweep_rows(report)
    if lengths.empty or rows.empty:
        return _no_sweep(statement, theirs)
    rows = rows[(rows["prompt_tokens"] >= lo) & (rows["prompt_tokens"] <= hi)]
    here, ok = {}, {}
    for b, g in rows.groupby("backend", sort=False):
        steps, places = [], []
        for n, s in g.groupby("prompt_tokens", sort=True):
            pairs = _pairs(s, "ttft_ms", "decode_ms_per_token")
            ci = intervals.bootstrap([pairs], intervals.ratio_of_medians)
            if pairs and ci is not None:
                xs, ys = (np.asarray(v, dtype=float) for v in zip(*pairs, strict=True))
                steps.append(
                    f"{fmt.n(intervals.ratio_of_medians(xs, ys), 1)} "
                    f"{intervals.show(ci, percent=False)} at N={int(n)}"
                )
                places.append(intervals.against_band(ci, *ONE_STEP))
        if steps:
            here[b] = "; ".join(steps) + " decode steps"
            ok[b] = (
                True
                if all(w == intervals.INSIDE for w in places)
                else False
                if intervals.OUTSIDE in places
                else None
            )
    if not here:
        return Claim(SEED, statement, theirs, not_measurable(f"no prompt lengths between {lo} and {hi}"))
    test = "median TTFT ÷ median decode step, 95 % bootstrap interval; about one step means inside ×½–×2"
    if any(v is None for v in ok.values()):
        return Claim(
            SEED,
            statement,
            theirs,
            not_decided(
                "the interval crosses ×½ or ×2 on "
                f"{', '.join(b for b, v in ok.items() if v is None)} ({test})"
            ),
            here,
        )
    if all(ok.values()):
        return Claim(
            SEED, statement, theirs, holds(f"within a factor of two on every backend ({test})"), here
        )
    if not any(ok.values()):
        return Claim(
            SEED,
            statement,
            theirs,
            does_not_hold(f"more than a factor of two off on every backend ({test})"),
            here,
        )
    return Claim(
        SEED,
        statement,
        theirs,
        setup_specific(
            f"holds on {', '.join(b for b, v in ok.items() if v)} (decode slow enough that a short prefill "
            f"hides in one step); not on {', '.join(b for b, v in ok.items() if not v)}, whose decode step "
            f"is a few ms, so a short prefill's fixed cost is several steps ({test})"
        ),
        here,
    )


@claim
def tps_ratio(report: Report) -> Claim:
    n = reference.SWEEP["N"]
    statement = f"Per token, prefill is about 494× faster than decode at N={n}"
    theirs = fmt.times(reference.SWEEP["tps_ratio"])
    lengths = _lengths(report)
    rows = lengths[lengths["N"] == n] if not lengths.empty else lengths
    if rows.empty:
        return Claim(SEED, statement, theirs, not_measurable(f"no sweep at N={n}"))
    here = {r["backend"]: fmt.times(r["tps_ratio"]) for r in rows.to_dict("records") if num(r["tps_ratio"])}
    return Claim(
        SEED,
        statement,
        theirs,
        setup_specific(
            "the ratio is (N ÷ TTFT) ÷ (1 ÷ decode): it scales with the decode step, so a stack with a fast "
            "decode step shows a smaller one; prefill being far faster per token holds everywhere"
        ),
        here,
    )


@claim
def decode_share(report: Report) -> Claim:
    """The seed's claim that decode is most of a call with a short reply, derived from the sweep's medians
    (TTFT + the remaining decode steps), not from a measured call."""
    statement = f"Decode is most of a call with a {reference.REPLY_TOKENS}-token reply"
    theirs = (
        f"≈ {fmt.pct(reference.DECODE_SHARE)} (63 steps of "
        "64 ms after a one-step prefill; from its own figures)"
    )
    lengths = _lengths(report)
    if lengths.empty:
        return _no_sweep(statement, theirs)
    here, shares = {}, []
    for b, g in lengths.groupby("backend", sort=False):
        d = [v for v in g["decode_share"].map(num) if v is not None]
        if d:
            here[b] = f"{_range([x * 100 for x in d], 0)} % (N={g['N'].min()}–{g['N'].max()})"
            shares += d
    if not shares:
        return _no_sweep(statement, theirs)
    derived = "derived from the medians as TTFT + 63 × decode step, not a measured 64-token call"
    verdict = (
        holds(
            f"decode is at least {fmt.pct(min(shares))} of the call on every backend and length ({derived})"
        )
        if min(shares) > 0.5
        else setup_specific(
            f"falls to {fmt.pct(min(shares))} at long prompts on a fast-decoding stack ({derived})"
        )
    )
    return Claim(SEED, statement, theirs, verdict, here)


def _conversation(report: Report) -> pd.DataFrame:
    s = _section(report, "conversation")
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


@claim
def conversation_tokens(report: Report) -> Claim:
    c = reference.CONVERSATION
    statement = "Prefix reuse cuts the tokens computed over the conversation about 5.5×"
    theirs = (
        f"{fmt.n(c['tokens_full'])} → {fmt.n(c['tokens_cached'])} tokens ({fmt.times(c['tokens_ratio'])})"
    )
    tot = _conversation(report)
    if tot.empty:
        return Claim(SEED, statement, theirs, not_measurable("these runs have no conversation"))
    here, ratios = _full_vs_cached(tot, "tokens_med", "")
    if not here:
        return Claim(SEED, statement, theirs, not_measurable("no backend ran both full and cached modes"))
    return Claim(
        SEED,
        statement,
        theirs,
        setup_specific(
            "the counts belong to the conversation (its logs' lengths, number of turns), "
            f"not the stack; the saving is of the same order ({_range(ratios, 1)}× here "
            f"vs {fmt.times(c['tokens_ratio'])}) on every backend with a prefix cache"
        ),
        here,
    )


@claim
def conversation_ttft(report: Report) -> Claim:
    c = reference.CONVERSATION
    statement = "Summed TTFT over the conversation drops with reuse, 868 → 642 ms"
    theirs = (
        f"{fmt.n(c['ttft_full_ms'])} → {fmt.n(c['ttft_cached_ms'])} ms "
        f"({fmt.times(c['ttft_full_ms'] / c['ttft_cached_ms'])})"
    )
    tot = _conversation(report)
    if tot.empty:
        return Claim(SEED, statement, theirs, not_measurable("these runs have no conversation"))
    here, ratios = _full_vs_cached(tot, "ttft_med", " ms")
    if not here:
        return Claim(SEED, statement, theirs, not_measurable("no backend ran both full and cached modes"))
    return Claim(
        SEED,
        statement,
        theirs,
        setup_specific(
            f"the milliseconds are the stack's, GPU's and workload's; the time saving ({_range(ratios, 1)}× "
            f"here, {fmt.times(c['ttft_full_ms'] / c['ttft_cached_ms'])} in the seed) stays below the token "
            "saving wherever a fixed per-call cost, not the tokens, sets TTFT"
        ),
        here,
    )


@claim
def reuse_stops_early(report: Report) -> Claim:
    """The seed's claim that prefix reuse stops a few tokens before the previous prompt's end, judged from
    where the conversation's prompts break (the chat template's doing, so the same on every backend)."""
    statement = "Prefix reuse stops a few tokens before the end of the previous prompt"
    theirs = reference.REUSE
    s = _section(report, "conversation")
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
    text = f"{_range([lost.lo, lost.hi], 0)} tokens lost on each of {lost.n} turns" + (
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


@claim
def mask_valid(report: Report) -> Claim:
    """The seed's claim that grammar-constrained JSON replies are all valid: valid of all constrained calls,
    per backend."""
    statement = "With a grammar mask, every JSON reply is valid (80 of 80)"
    theirs = f"{reference.JSON_MASK['valid']} of {reference.JSON_MASK['calls']}"
    s = _section(report, "json")
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


@claim
def attention_special(report: Report) -> Claim:
    """The seed's claim that much attention lands on special tokens: the template workload's attention share
    on special tokens against their share of the positions (not measurable on random weights)."""
    statement = "Much of the attention lands on special tokens"
    theirs = reference.ATTENTION
    s = _section(report, "template")
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
