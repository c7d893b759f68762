"""The seed article's claims about its length sweep (kind ``sweep``), checked on this report's sweep.

Decode flat in the prompt length N and its level, the share of memory bandwidth a decode step uses,
a short prefill costing about one decode step, prefill vs decode per token at the seed's N, and
decode's share of a call with a short reply. The numeric tests are decided with bootstrap intervals
over every repeat and engine start against a stated band (:mod:`reports.intervals`).
"""

from __future__ import annotations

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
from llm_call_anatomy.reports.analysis.seed_claims import (
    SEED,
    record_pairs,
    section_of,
    strata_by,
    value_range,
)
from llm_call_anatomy.reports.model import Claim
from llm_call_anatomy.reports.stats import num

if TYPE_CHECKING:
    from llm_call_anatomy.reports.model import Report

ORDER = 1  # where this module's claims stand on the page (reports.analysis.claims)

# "flat in N": decode's fitted change over the swept lengths within ±15 % of its median
FLAT = intervals.FLAT
ONE_STEP = (0.5, 2.0)  # "about one decode step": within a factor of two


def _lengths(report: Report) -> pd.DataFrame:
    s = section_of(report, "sweep")
    return s.data["lengths"] if s is not None else pd.DataFrame()


def _no_sweep(statement: str, theirs: str) -> Claim:
    return Claim(SEED, statement, theirs, not_measurable("these runs have no length sweep"))


def _sweep_rows(report: Report) -> pd.DataFrame:
    """The sweep's raw measured records (every repeat of every engine start): what the intervals resample."""
    s = section_of(report, "sweep")
    if s is None:
        return pd.DataFrame()
    df = report.ds.measured()
    return df[df["workload"] == s.name]


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
        strata = strata_by(g, "prompt_tokens", "decode_ms_per_token")
        flat = intervals.flatness(strata)
        if flat is None:
            continue
        d = [v for v in lengths[lengths["backend"] == b]["decode_med"].map(num) if v is not None]
        levels.append(float(np.median(flat.ys)))
        where[b] = flat.where
        here[b] = (
            f"{value_range(d or [float(np.median(flat.ys))], 3, 'ms/token')}; fitted change over "
            f"N={int(flat.xs.min())}–{int(flat.xs.max())}: {flat.fitted} {intervals.show(flat.interval)}"
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
            f"eager's on an A100: here {value_range(levels, 3)} ms/token by backend, "
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
    s = section_of(report, "sweep")
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
        text = f"{value_range(list(g['bandwidth_share'] * 100), 0)} % of the datasheet"
        if g["copy_share"].notna().any():
            text += f", {value_range(list(g['copy_share'].dropna() * 100), 0)} % of the measured copy"
        here[b] = text
    shares = vs.groupby("backend", sort=False)["bandwidth_share"].median()
    return Claim(
        SEED,
        statement,
        theirs,
        setup_specific(
            "bytes read per step ÷ decode time; the share belongs to the "
            f"stack: {value_range(list(shares * 100), 0)} % here by backend (low "
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
            pairs = record_pairs(s, "ttft_ms", "decode_ms_per_token")
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
    """The seed's claim that prefill is about 494× faster per token than decode at its N: each backend's
    (N ÷ TTFT) ÷ (1 ÷ decode) at that N. Setup-specific, since the ratio scales with the decode step; not
    measurable without a sweep at that N."""
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
            here[b] = f"{value_range([x * 100 for x in d], 0)} % (N={g['N'].min()}–{g['N'].max()})"
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
