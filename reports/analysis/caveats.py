"""Caveats derived from the data, each citing the figures it rests on; nothing is written in advance.

Each rule looks at one analysis result and returns sentences only where the numbers support
them (a fitted floor, a distance to the roofline, a cache break-even, block rounding, a prefix
break, launch overhead, grammar overhead, disagreement across backends, weaker timing sources).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import pandas as pd

from reports import fmt
from reports.analysis.sweep import R2_FLOOR
from reports.stats import num, spread

if TYPE_CHECKING:
    from reports.assemble import Report, Section

TIMING_NOTES = {
    "max_tokens-differential": "TTFT is a separate 1-token call and decode the difference (the engine does not stream here)",
    "e2e-only": "only end-to-end time is known (no TTFT or decode split)",
    "client-stream": "timed from the client's stream, so HTTP and detokenisation are included",
}


@dataclass(frozen=True)
class Caveat:
    topic: str
    text: str


def derive(report: Report) -> list[Caveat]:
    out: list[Caveat] = []
    if report.random_weights:
        out.append(Caveat("model", f"Weights are random ({report.random_weights}): latency and cache figures hold; quality "
                                   "figures (JSON validity without a grammar, clean answers, agreement) do not."))
    from reports.kinds import report_kind

    for section in report.sections:
        kind = report_kind(section.kind) if section.kind else None
        if kind is not None and section.data:
            out += kind.caveats(section, report)
    out += agreement(report.agreement_summary, report.agreement_cached_summary)
    out += timing(report.ds.measured())
    out += server(report.server)
    return out


# --- conversation ---------------------------------------------------------------------------
def conversation(s: Section) -> list[Caveat]:
    out = []
    for r in s.data["ratios"]:
        if r.tokens_ratio and r.ttft_ratio:
            link = "but summed TTFT only" if r.ttft_ratio < r.tokens_ratio / 2 else "and summed TTFT"
            out.append(Caveat(s.name, f"{r.backend}: reusing the prefix cut the tokens processed over the conversation "
                                      f"from {fmt.n(r.tokens_full)} to {fmt.n(r.tokens_cached)} ({fmt.times(r.tokens_ratio)}) "
                                      f"{link} from {fmt.n(r.ttft_full)} to {fmt.n(r.ttft_cached)} ms ({fmt.times(r.ttft_ratio)})."))
    out += break_even(s)
    reuse = s.data["reuse"]
    if not reuse.empty:
        for backend, g in reuse.groupby("backend", sort=False):
            rounded = g[g["why"].str.startswith("block granularity")]
            if len(rounded):
                lost = int((rounded["shared_prefix_tokens"] - rounded["cached"]).sum())
                out.append(Caveat(s.name, f"{backend} reused {lost} fewer tokens than shared on {len(rounded)} turns: block "
                                          f"granularity (block {int(rounded['block'].iloc[0])}: cached = ⌊shared / block⌋ × block)."))
            short = g[g["why"].str.contains("fewer than expected")]
            if len(short):
                out.append(Caveat(s.name, f"{backend} reused fewer tokens than even its block size allows on turns "
                                          f"{', '.join(str(t) for t in short['turn'])} (evicted, or not matched)."))
    bs = s.data["break_summary"]
    if bs:
        lost = bs["lost"]
        out.append(Caveat(s.name, f"The prompt breaks away from the previous one on {len(bs['turns'])} turns, dropping "
                                  f"{fmt.n(lost.median)} tokens each time (median, n={lost.n}) starting with "
                                  f"{' '.join(fmt.token(t) for t in bs['first_lost_tokens'][:6])}: no engine can reuse those."))
    ft = s.data["first_tokens"]
    for r in ft.to_dict("records"):
        if r["differing_turns"]:
            out.append(Caveat(s.name, f"{r['backend']}: cached and full chose a different first token on {r['compared'] - r['same']} "
                                      f"of {r['compared']} calls ({'turn' if len(r['differing_turns']) == 1 else 'turns'} "
                                      f"{', '.join(map(str, r['differing_turns']))})."))
    return out


def break_even(s: Section) -> list[Caveat]:
    """From which prompt length on does the cached mode's TTFT sit clearly below the full one's?"""
    turns = s.data["turns"]
    out = []
    if turns.empty:
        return out
    for backend, g in turns.groupby("backend", sort=False):
        full = g[g["mode"] == "full"].set_index("turn")
        cached = g[g["mode"] == "cached"].set_index("turn")
        common = [t for t in full.index if t in cached.index and t > 1]
        if not common:
            continue
        faster = [num(cached.at[t, "ttft_q3"]) is not None and num(full.at[t, "ttft_q1"]) is not None
                  and cached.at[t, "ttft_q3"] < full.at[t, "ttft_q1"] for t in common]
        first = next((i for i in range(len(common)) if all(faster[i:])), None)
        last = common[-1]
        tail = f"(turn {last}, {fmt.n(full.at[last, 'prompt_tokens'])} tokens: {fmt.n(full.at[last, 'ttft_med'])} ms full vs {fmt.n(cached.at[last, 'ttft_med'])} ms cached)"
        if first is None:
            out.append(Caveat(s.name, f"{backend}: the cache did not clearly lower TTFT up to the last turn {tail}; "
                                      "below that, a call costs about the same either way."))
        elif first == 0:
            t = common[0]
            out.append(Caveat(s.name, f"{backend}: the cache saves time from the first reuse on (turn {t}, "
                                      f"{fmt.n(full.at[t, 'prompt_tokens'])} prompt tokens: {fmt.n(full.at[t, 'ttft_med'])} → "
                                      f"{fmt.n(cached.at[t, 'ttft_med'])} ms)."))
        else:
            t, before = common[first], common[first - 1]
            out.append(Caveat(s.name, f"{backend}: the cache saves time only past ~{fmt.n(full.at[t, 'prompt_tokens'])} prompt "
                                      f"tokens (from turn {t} on, IQRs apart); before that cached and full overlap (turn {before}, "
                                      f"{fmt.n(full.at[before, 'prompt_tokens'])} tokens: {fmt.n(full.at[before, 'ttft_med'])} ms full "
                                      f"vs {fmt.n(cached.at[before, 'ttft_med'])} ms cached)."))
    return out


# --- sweep ----------------------------------------------------------------------------------
def sweep(s: Section, report: Report) -> list[Caveat]:
    out = []
    for f in s.data["fits"]:
        knee = f.knee()
        law = f"TTFT ≈ {fmt.n(f.a_ms)} ms + {fmt.n(f.b_ms_per_token * 1e3)} µs × N, r² = {fmt.n(f.r2, 3)}, {f.points} calls"
        if f.note:
            law += f", {f.note}"
        if not f.holds:
            out.append(Caveat(s.name, f"{f.backend}: TTFT is not a straight line in N ({law}, below {R2_FLOOR}); its a is "
                                      "not a per-call floor."))
        elif f.a_ms <= 0:
            out.append(Caveat(s.name, f"{f.backend}: TTFT grows faster than linearly with the prompt, so the straight-line fit "
                                      f"has no positive per-call floor ({law}): attention's quadratic cost shows at these lengths."))
        elif knee is None:
            out.append(Caveat(s.name, f"{f.backend}: TTFT does not grow with the prompt here ({law})."))
        elif knee < min(f.lengths):
            out.append(Caveat(s.name, f"{f.backend}: at every measured length (N ≥ {min(f.lengths)}) the per-token cost dominates "
                                      f"the per-call floor a ≈ {fmt.n(f.a_ms)} ms ({law})."))
        else:
            where = f"N≈{fmt.n(knee)}" if knee <= max(f.lengths) else f"N={max(f.lengths)} (the longest measured)"
            out.append(Caveat(s.name, f"{f.backend}: below {where} tokens every prefill costs about the same: the floor "
                                      f"a ≈ {fmt.n(f.a_ms)} ms is at least half the TTFT there ({law})."))
    roofs = [report.roofs[b] for b in s.backends if b in report.roofs]
    missing = [r for r in roofs if not r.ok]
    if missing:
        notes = dict.fromkeys(r.note for r in missing)
        out.append(Caveat(s.name, "No roofline for " + "; ".join(
            f"{', '.join(r.backend for r in missing if r.note == note)} ({note})" for note in notes) + "."))
    vs = s.data["vs_roof"]
    if not vs.empty:
        for backend, g in vs.groupby("backend", sort=False):
            lo, hi = g.iloc[0], g.iloc[-1]
            roof = report.roofs[backend]
            lengths = s.data["lengths"]
            decode = lengths[(lengths["backend"] == backend) & (lengths["N"] == lo["N"])].iloc[0]
            out.append(Caveat(s.name, f"{backend}: decode is {fmt.times(lo['decode_x'])} the roofline at N={lo['N']}: "
                                      f"{fmt.n(decode['decode_med'])} ms/token vs a floor of {fmt.n(lo['decode_floor_ms'])} ms "
                                      f"({fmt.n(lo['step_bytes'] / 1e9)} GB read per step / {fmt.n(roof.peak.bandwidth_gbps)} GB/s, "
                                      f"{roof.peak.label} datasheet); effective bandwidth {fmt.n(lo['effective_gbps'])} GB/s = "
                                      f"{fmt.pct(lo['bandwidth_share'])} of peak. Prefill at N={hi['N']} is "
                                      f"{fmt.times(hi['prefill_x'])} its compute floor ({fmt.n(hi['prefill_floor_ms'])} ms at "
                                      f"{fmt.n(roof.peak.tflops)} TFLOP/s)."))
    out += launch_overhead(s, report)
    return out


def in_process_transformers(engine: dict) -> bool:
    """env.json's engine facts say: HF transformers driven in the measuring process (not behind a server)."""
    return "transformers" in engine and "server_kind" not in engine


def cuda_graphs(engine: dict) -> bool:
    """env.json's engine facts say the decode runs as CUDA graphs: ``cuda_graphs`` where the adapter reports
    it, else HF's ``compile`` entry (``mode='reduce-overhead'`` captures CUDA graphs; runs before the flag)."""
    flag = engine.get("cuda_graphs")
    return flag if isinstance(flag, bool) else "compile" in engine


def launch_overhead(s: Section, report: Report) -> list[Caveat]:
    """How much of HF eager's decode gap to the roofline do CUDA graphs close?

    Decided from env.json, not backend names: an HF engine in process without CUDA graphs against
    one with them (``cuda_graphs``), the other engines of the section (not HF in process) shown for
    comparison."""
    engine = {b: report.ds.env_of(b).get("engine") or {} for b in report.ds.backends}
    hf = {b for b, e in engine.items() if in_process_transformers(e)}
    lengths = s.data["lengths"]
    eager = [b for b in s.backends if b in hf and not cuda_graphs(engine[b])]
    graphs = [b for b in report.ds.backends if b in hf and cuda_graphs(engine[b])]
    if not eager or not graphs:
        return []
    if graphs[0] not in s.backends:
        why = next((st.reasons()[0] for st in report.status if st.backend == graphs[0] and st.reasons()), "no measurements")
        return [Caveat(s.name, f"Launch overhead not measured: {graphs[0]} did not run ({why}).")]
    e, g = eager[0], graphs[0]
    common = sorted(set(lengths[lengths["backend"] == e]["N"]) & set(lengths[lengths["backend"] == g]["N"]))
    if not common:
        return []
    at = common[0]

    def decode(b: str) -> float | None:
        row = lengths[(lengths["backend"] == b) & (lengths["N"] == at)]
        return num(row["decode_med"].iloc[0]) if len(row) else None

    de, dg = decode(e), decode(g)
    if de is None or dg is None:
        return []
    floor = report.roofs[e].decode_floor_ms() if e in report.roofs else None
    others = [f"{b} {fmt.n(decode(b))} ms" + (f" ({fmt.times(decode(b) / floor)} floor)" if floor and decode(b) else "")
              for b in s.backends if b not in (e, g) and b not in hf]
    text = f"CUDA graphs take HF's decode at N={at} from {fmt.n(de)} ms/token ({e}) to {fmt.n(dg)} ms/token ({g})"
    if floor and de > floor:
        share = (de - dg) / (de - floor)
        text += (f"; the roofline floor is {fmt.n(floor)} ms, so launch overhead explains {fmt.pct(share)} of HF eager's "
                 f"gap to it")
    else:
        text += f" ({fmt.pct((de - dg) / de)} less; no roofline to compare the gap with)"
    if others:
        text += "; for comparison: " + ", ".join(others)
    return [Caveat(s.name, text + ".")]


# --- json -----------------------------------------------------------------------------------
def json_workload(s: Section) -> list[Caveat]:
    out = []
    for r in s.data["overhead"].to_dict("records"):
        c, u = r["constrained"], r["unconstrained"]
        figures = f"'{r['mode']}' {fmt.stat(c, 'ms/token')} vs '{r['base']}' {fmt.stat(u, 'ms/token')} on the same prompts"
        if c.q1 is not None and u.q3 is not None and c.q1 > u.q3:
            out.append(Caveat(s.name, f"{r['backend']}: the grammar costs {fmt.n(r['extra_ms'])} ms per decoded token "
                                      f"({fmt.times(r['ratio'])}): {figures}."))
        else:
            out.append(Caveat(s.name, f"{r['backend']}: no measurable grammar overhead (the IQRs overlap or the grammar mode is "
                                      f"faster): {figures}."))
    for c in s.data["candidates"]:
        if c.fence_rank is not None:
            p = c.rows[c.fence_rank - 1]["prob"]
            out.append(Caveat(s.name, f"{c.backend}, mode '{c.mode}': a Markdown fence is step-0 candidate #{c.fence_rank} "
                                      f"(p = {fmt.n(p)}): without a grammar a fence can open the reply."))
    return out


# --- across workloads -----------------------------------------------------------------------
def agreement(summary: pd.DataFrame, cached: pd.DataFrame | None = None) -> list[Caveat]:
    out = []
    for r in summary.to_dict("records"):
        if not r.get("informative", True):
            out.append(Caveat("agreement", f"{r['backend']} vs {r['reference']} ({r['workload']}): not informative, "
                                           f"{r['why']}: identical tokens there say nothing about the engines."))
            continue
        text = (f"At T=0 {r['backend']} matched {r['reference']} token for token on {r['identical']} of {r['cases']} "
                f"{r['workload']} calls (same first token on {r['same_first']})")
        if num(r["median_divergence"]) is not None:
            text += f"; where they differ, the first different token is at index {fmt.n(r['median_divergence'])} (median)"
        if r.get("near_tie") or r.get("clear"):
            text += f": {r['near_tie']} split at a near-tie, {r['clear']} at a clear margin"
        out.append(Caveat("agreement", text + "."))
    for r in (cached if cached is not None else pd.DataFrame()).to_dict("records"):
        if r.get("informative", True) and r["identical"] < r["cases"]:
            out.append(Caveat("agreement", f"{r['backend']}: cached and full gave different tokens on "
                                           f"{r['cases'] - r['identical']} of {r['cases']} {r['workload']} calls "
                                           f"({r['near_tie']} at a near-tie, {r['clear']} at a clear margin)."))
    return out


def timing(df: pd.DataFrame) -> list[Caveat]:
    out = []
    for (backend, source), g in df.groupby(["backend", "timing_source"], sort=False):
        if source in TIMING_NOTES:
            out.append(Caveat("timing", f"{backend}: {len(g)} calls timed by '{source}': {TIMING_NOTES[source]}."))
    return out


def server(df: pd.DataFrame) -> list[Caveat]:
    out = []
    if df.empty:
        return out
    for backend, g in df.groupby("backend", sort=False):
        d = spread(g["difference_ms"])
        if d.ok:
            out.append(Caveat("timing", f"{backend}: the client saw TTFT {fmt.stat(d, 'ms')} above the server's own figure "
                                        "(HTTP, queueing and detokenisation)."))
    return out
