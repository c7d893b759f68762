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

from reports.stats import agg, num, ratio, spread


def processed_tokens(row: pd.Series) -> float | None:
    """Tokens the engine computed: reported, or the whole prompt when the cache was reset before it."""
    computed = num(row.get("computed_tokens"))
    if computed is not None:
        return computed
    if row.get("cache_state") == "reset-before-request":
        return num(row.get("prompt_tokens"))
    return None


def per_turn(df: pd.DataFrame) -> pd.DataFrame:
    """Per backend, mode and turn: prompt, shared prefix, cached and computed tokens, TTFT (median [IQR] n)."""
    if df.empty:
        return pd.DataFrame()
    df = df.assign(processed=df.apply(processed_tokens, axis=1))
    keys = ["backend", "mode", "turn"]
    out = agg(df, keys, "ttft_ms", "ttft")
    for col, name in (("cached_tokens", "cached"), ("processed", "computed"), ("prompt_tokens", "prompt"),
                      ("shared_prefix_tokens", "shared")):
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
    by = ["backend", "mode", *(["start"] if "start" in df else []), "rep"]  # reps restart in every engine start
    for key, g in df.groupby(by, sort=False):
        backend, mode, rep = key[0], key[1], key[-1]
        complete = g["turn"].nunique() == turns and len(g) == turns
        reps.append({
            "backend": backend, "mode": mode, "rep": rep, "complete": complete,
            "tokens": g["processed"].sum() if complete and g["processed"].notna().all() else None,
            "ttft": g["ttft_ms"].sum() if complete and g["ttft_ms"].notna().all() else None,
        })
    per_rep = pd.DataFrame(reps)
    out = agg(per_rep, ["backend", "mode"], "tokens").merge(agg(per_rep, ["backend", "mode"], "ttft"), on=["backend", "mode"])
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
    """What a prefix cache can reuse: the shared prefix, less the last prompt token, rounded down to blocks."""
    if not shared:
        return 0
    usable = min(shared, prompt_tokens - 1)
    return usable if not block or block <= 1 else (usable // block) * block


def explain_reuse(shared: int | None, prompt_tokens: int, cached: float | None, block: int | None) -> str:
    if cached is None:
        return "not reported by the engine"
    cached = int(round(cached))
    if not shared:
        return "first turn: nothing shared yet" if cached == 0 else f"{cached} tokens reused from an earlier request"
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
        rows.append({
            "backend": r["backend"], "turn": int(r["turn"]), "prompt_tokens": prompt, "shared_prefix_tokens": shared,
            "expected": expected_cached(shared, prompt, block), "cached": num(r["cached_med"]), "block": block,
            "why": explain_reuse(shared, prompt, num(r["cached_med"]), block),
        })
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
        rows.append({"backend": backend, "compared": len(both), "same": int((both["full"] == both["cached"]).sum()),
                     "differing_turns": differ})
    return pd.DataFrame(rows, columns=["backend", "compared", "same", "differing_turns"])


def prefix_breaks(df: pd.DataFrame) -> list[dict[str, Any]]:
    """Per turn (the plan's, the same for every backend): where the prompt stops extending the previous one."""
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
