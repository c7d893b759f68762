"""Conversation workload: per-turn tokens and TTFT, totals full vs cached, expected vs reported reuse.

``full`` re-prefills the whole history every turn; ``cached`` lets the engine reuse the prefix it
shares with the previous turn. Where the engine reused fewer tokens than the shared prefix the
reason is derived when it can be: block granularity (``cached = floor(shared / block) × block``),
or a template that rewrites the previous turn (the prefix break, shown token by token).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from llm_call_anatomy.reports import fmt
from llm_call_anatomy.reports.model import Caveat
from llm_call_anatomy.reports.stats import agg, num, ratio, spread


def processed_tokens(row: pd.Series) -> float | None:
    """Tokens the engine computed: reported, or the whole prompt when the cache was reset before it."""
    computed = num(row.get("computed_tokens"))
    if computed is not None:
        return computed
    if row.get("cache_state") == "reset-before-request":
        return num(row.get("prompt_tokens"))
    return None


def per_turn(df: pd.DataFrame) -> pd.DataFrame:
    """Per backend, mode and turn: prompt, shared prefix,
    cached and computed tokens, TTFT (median [IQR] n)."""
    if df.empty:
        return pd.DataFrame()
    df = df.assign(processed=df.apply(processed_tokens, axis=1))
    keys = ["backend", "mode", "turn"]
    out = agg(df, keys, "ttft_ms", "ttft")
    for col, name in (
        ("cached_tokens", "cached"),
        ("processed", "computed"),
        ("prompt_tokens", "prompt"),
        ("shared_prefix_tokens", "shared"),
    ):
        out = out.merge(agg(df, keys, col, name)[[*keys, f"{name}_med"]], on=keys)
    out = out.rename(columns={"prompt_med": "prompt_tokens", "shared_med": "shared_prefix_tokens"})
    out["turn"] = out["turn"].astype(int)
    return out.reset_index(drop=True)  # groups in order of appearance: backend, mode, turn


def totals(df: pd.DataFrame) -> pd.DataFrame:
    """Per backend and mode, over complete repeats: tokens processed and summed TTFT (median [IQR] n)."""
    if df.empty:
        return pd.DataFrame()
    df = df.assign(processed=df.apply(processed_tokens, axis=1))
    turns = df["turn"].nunique()
    reps = []
    by = [
        "backend",
        "mode",
        *(["start"] if "start" in df else []),
        "rep",
    ]  # reps restart in every engine start
    for key, g in df.groupby(by, sort=False):
        backend, mode, rep = key[0], key[1], key[-1]
        complete = g["turn"].nunique() == turns and len(g) == turns
        reps.append(
            {
                "backend": backend,
                "mode": mode,
                "rep": rep,
                "complete": complete,
                "tokens": g["processed"].sum() if complete and g["processed"].notna().all() else None,
                "ttft": g["ttft_ms"].sum() if complete and g["ttft_ms"].notna().all() else None,
            }
        )
    per_rep = pd.DataFrame(reps)
    out = agg(per_rep, ["backend", "mode"], "tokens").merge(
        agg(per_rep, ["backend", "mode"], "ttft"), on=["backend", "mode"]
    )
    out["turns"] = turns
    return out


@dataclass(frozen=True)
class ModeRatio:
    backend: str
    tokens_full: float | None
    tokens_cached: float | None
    tokens_ratio: float | None
    ttft_full: float | None
    ttft_cached: float | None
    ttft_ratio: float | None


def mode_ratios(tot: pd.DataFrame) -> list[ModeRatio]:
    """Full vs cached per backend: tokens processed and summed TTFT, and their ratios."""
    out = []
    if tot.empty:
        return out
    for backend, g in tot.groupby("backend", sort=False):
        by_mode = {m: r for m, r in zip(g["mode"], g.to_dict("records"), strict=True)}
        full, cached = by_mode.get("full", {}), by_mode.get("cached", {})
        tf, tc = num(full.get("tokens_med")), num(cached.get("tokens_med"))
        sf, sc = num(full.get("ttft_med")), num(cached.get("ttft_med"))
        out.append(ModeRatio(backend, tf, tc, ratio(tf, tc), sf, sc, ratio(sf, sc)))
    return out


# --- expected vs reported reuse ---------------------------------------------------------------
def expected_cached(shared: int | None, prompt_tokens: int, block: int | None) -> int:
    """What a prefix cache can reuse: the shared prefix,
    less the last prompt token, rounded down to blocks."""
    if not shared:
        return 0
    usable = min(shared, prompt_tokens - 1)
    return usable if not block or block <= 1 else (usable // block) * block


def explain_reuse(shared: int | None, prompt_tokens: int, cached: float | None, block: int | None) -> str:
    """Why a turn reused as many prompt tokens as the engine reported, against the shared prefix: all of it,
    all but the last token, a block boundary, more (an earlier request's), or fewer (evicted, not reused)."""
    if cached is None:
        return "not reported by the engine"
    cached = int(round(cached))
    if not shared:
        return (
            "first turn: nothing shared yet"
            if cached == 0
            else f"{cached} tokens reused from an earlier request"
        )
    expected = expected_cached(shared, prompt_tokens, block)
    if cached == shared:
        return "all of the shared prefix"
    if cached > shared:
        return f"{cached - shared} more than the shared prefix (reused from an earlier request)"
    if block and block > 1 and cached == expected:
        return f"block granularity: ⌊{shared}/{block}⌋×{block} = {cached}"
    if cached == expected:
        return "all of the shared prefix but the last prompt token (it must be computed)"
    unit = f" (block {block})" if block and block > 1 else ""
    return f"{expected - cached} fewer than expected{unit}: evicted, or not reused"


def reuse(turns: pd.DataFrame, blocks: dict[str, int | None]) -> pd.DataFrame:
    """Cached mode, per backend and turn: shared prefix, expected and reported reuse, and why they differ."""
    if turns.empty:
        return pd.DataFrame()
    cached = turns[turns["mode"] == "cached"]
    rows = []
    for r in cached.to_dict("records"):
        shared = None if num(r["shared_prefix_tokens"]) is None else int(r["shared_prefix_tokens"])
        prompt = int(r["prompt_tokens"])
        block = blocks.get(r["backend"])
        rows.append(
            {
                "backend": r["backend"],
                "turn": int(r["turn"]),
                "prompt_tokens": prompt,
                "shared_prefix_tokens": shared,
                "expected": expected_cached(shared, prompt, block),
                "cached": num(r["cached_med"]),
                "block": block,
                "why": explain_reuse(shared, prompt, num(r["cached_med"]), block),
            }
        )
    return pd.DataFrame(rows)


def first_tokens(df: pd.DataFrame) -> pd.DataFrame:
    """Per backend: on how many (turn, repeat) pairs ``cached`` and ``full`` chose the same first token."""
    rows = []
    for backend, g in df.groupby("backend", sort=False):
        index = ["turn", *(["start"] if "start" in g else []), "rep"]  # reps restart in every engine start
        full = g[g["mode"] == "full"].set_index(index)["first_token_id"]
        cached = g[g["mode"] == "cached"].set_index(index)["first_token_id"]
        both = full.to_frame("full").join(cached.to_frame("cached"), how="inner").dropna()
        if both.empty:
            continue
        differ = sorted({int(k[0]) for k, row in both.iterrows() if row["full"] != row["cached"]})
        rows.append(
            {
                "backend": backend,
                "compared": len(both),
                "same": int((both["full"] == both["cached"]).sum()),
                "differing_turns": differ,
            }
        )
    return pd.DataFrame(rows, columns=["backend", "compared", "same", "differing_turns"])


def prefix_breaks(df: pd.DataFrame) -> list[dict[str, Any]]:
    """Per turn (the plan's, the same for every backend):
    where the prompt stops extending the previous one."""
    out: dict[int, dict[str, Any]] = {}
    for r in df.to_dict("records"):
        brk = r.get("prefix_break")
        if isinstance(brk, dict) and num(r.get("turn")) is not None and int(r["turn"]) not in out:
            out[int(r["turn"])] = {"turn": int(r["turn"]), **brk}
    return [out[t] for t in sorted(out)]


def break_summary(breaks: list[dict[str, Any]]) -> dict[str, Any] | None:
    """How many turns break, and the tokens lost each time (median [IQR] n)."""
    if not breaks:
        return None
    lost = spread([b.get("tokens_lost") for b in breaks])
    tokens = breaks[0].get("previous") or []
    at = (breaks[0].get("position") or 0) - (breaks[0].get("context_start") or 0)
    return {"turns": [b["turn"] for b in breaks], "lost": lost, "first_lost_tokens": tokens[at:]}


# --- the section: its data and caveats (the kind's report half, ``workloads.conversation.report.KIND``) ---
def stability(ds: Any, workload: str) -> dict[int, dict[str, Any]]:
    """Per turn, the harness's verdict on a prefix break
    (env.json ``prefix_stability``), when a run has it."""
    out: dict[int, dict[str, Any]] = {}
    for env in ds.envs.values():
        for entry in (env.get("prefix_stability") or {}).get(workload) or []:
            if isinstance(entry, dict) and isinstance(entry.get("turn"), int):
                out.setdefault(entry["turn"], entry)
    return out


def data(rows: pd.DataFrame, ctx: Any, name: str) -> dict[str, Any]:
    """The section's data (``ReportKind.analyse``)."""
    verdicts, blocks = stability(ctx.ds, name), ctx.blocks
    by_turn = per_turn(rows)
    sums = totals(rows)
    breaks = prefix_breaks(rows)
    return {
        "turns": by_turn,
        "totals": sums,
        "ratios": mode_ratios(sums),
        "reuse": reuse(by_turn, blocks),
        "first_tokens": first_tokens(rows),
        "breaks": breaks,
        "break_summary": break_summary(breaks),
        "blocks": blocks,
        "verdicts": verdicts,
    }


def caveats(s: Any) -> list[Caveat]:
    """The section's caveats: reuse against tokens and TTFT,
    break-even, block rounding, prefix breaks, first tokens."""
    out = []
    for r in s.data["ratios"]:
        if r.tokens_ratio and r.ttft_ratio:
            link = "but summed TTFT only" if r.ttft_ratio < r.tokens_ratio / 2 else "and summed TTFT"
            out.append(
                Caveat(
                    s.name,
                    f"{r.backend}: reusing the prefix cut the tokens processed over the "
                    f"conversation from {fmt.n(r.tokens_full)} to {fmt.n(r.tokens_cached)} "
                    f"({fmt.times(r.tokens_ratio)}) {link} from {fmt.n(r.ttft_full)} to "
                    f"{fmt.n(r.ttft_cached)} ms ({fmt.times(r.ttft_ratio)}).",
                )
            )
    out += break_even(s)
    reuse = s.data["reuse"]
    if not reuse.empty:
        for backend, g in reuse.groupby("backend", sort=False):
            rounded = g[g["why"].str.startswith("block granularity")]
            if len(rounded):
                lost = int((rounded["shared_prefix_tokens"] - rounded["cached"]).sum())
                out.append(
                    Caveat(
                        s.name,
                        f"{backend} reused {lost} fewer tokens than shared on {len(rounded)} "
                        f"turns: block granularity (block {int(rounded['block'].iloc[0])}: "
                        "cached = ⌊shared / block⌋ × block).",
                    )
                )
            short = g[g["why"].str.contains("fewer than expected")]
            if len(short):
                out.append(
                    Caveat(
                        s.name,
                        f"{backend} reused fewer tokens than even its block size allows on turns "
                        f"{', '.join(str(t) for t in short['turn'])} (evicted, or not matched).",
                    )
                )
    bs = s.data["break_summary"]
    if bs:
        lost = bs["lost"]
        out.append(
            Caveat(
                s.name,
                f"The prompt breaks away from the previous one on {len(bs['turns'])} turns, dropping "
                f"{fmt.n(lost.median)} tokens each time (median, n={lost.n}) starting with "
                f"{' '.join(fmt.token(t) for t in bs['first_lost_tokens'][:6])}: no engine can reuse those.",
            )
        )
    ft = s.data["first_tokens"]
    for r in ft.to_dict("records"):
        if r["differing_turns"]:
            out.append(
                Caveat(
                    s.name,
                    f"{r['backend']}: cached and full chose a different first token on "
                    f"{r['compared'] - r['same']} of {r['compared']} calls "
                    f"({'turn' if len(r['differing_turns']) == 1 else 'turns'} "
                    f"{', '.join(map(str, r['differing_turns']))}).",
                )
            )
    return out


def break_even(s: Any) -> list[Caveat]:
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
        faster = [
            num(cached.at[t, "ttft_q3"]) is not None
            and num(full.at[t, "ttft_q1"]) is not None
            and cached.at[t, "ttft_q3"] < full.at[t, "ttft_q1"]
            for t in common
        ]
        first = next((i for i in range(len(common)) if all(faster[i:])), None)
        last = common[-1]
        tail = (
            f"(turn {last}, {fmt.n(full.at[last, 'prompt_tokens'])} tokens: "
            f"{fmt.n(full.at[last, 'ttft_med'])} ms full vs {fmt.n(cached.at[last, 'ttft_med'])} ms cached)"
        )
        if first is None:
            out.append(
                Caveat(
                    s.name,
                    f"{backend}: the cache did not clearly lower TTFT up to the last turn {tail}; "
                    "below that, a call costs about the same either way.",
                )
            )
        elif first == 0:
            t = common[0]
            out.append(
                Caveat(
                    s.name,
                    f"{backend}: the cache saves time from the first reuse on (turn {t}, "
                    f"{fmt.n(full.at[t, 'prompt_tokens'])} prompt tokens: {fmt.n(full.at[t, 'ttft_med'])} → "
                    f"{fmt.n(cached.at[t, 'ttft_med'])} ms).",
                )
            )
        else:
            t, before = common[first], common[first - 1]
            out.append(
                Caveat(
                    s.name,
                    f"{backend}: the cache saves time only past ~{fmt.n(full.at[t, 'prompt_tokens'])} prompt "
                    f"tokens (from turn {t} on, IQRs apart); before that cached and full overlap (turn "
                    f"{before}, {fmt.n(full.at[before, 'prompt_tokens'])} tokens: "
                    f"{fmt.n(full.at[before, 'ttft_med'])} ms full vs "
                    f"{fmt.n(cached.at[before, 'ttft_med'])} ms cached).",
                )
            )
    return out
