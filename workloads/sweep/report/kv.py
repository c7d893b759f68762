"""The sweep section's KV-cache block: what a token of context costs in memory, GiB per sequence at
1k … 32k tokens, and each backend's KV pool as its engine reported it, with how many sequences fit.

The figures are :mod:`reports.kvcache`'s, from env.json only (the model's config and the engine's pool);
they stand in the sweep's section because context length is the sweep's question.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from llm_call_anatomy.reports import fmt
from llm_call_anatomy.reports.kvcache import BEND_LENGTHS, GIB, LENGTHS
from llm_call_anatomy.reports.views import Block, Table, h3, p, table


def lengths_table(lengths: pd.DataFrame, pools: pd.DataFrame) -> Table:
    """Per context length: one sequence's KV in GiB, and how many such sequences each backend's pool holds."""
    shown = [r for r in pools.to_dict("records") if r.get("tokens") is not None] if not pools.empty else []
    t = Table(
        ["context N", "KV per sequence", *[f"fit in {r['backend']}'s pool" for r in shown]],
        numeric=set(range(2 + len(shown))),
    )
    for x in lengths.to_dict("records"):
        n = int(x["N"])
        t.add([fmt.n(n), f"{fmt.n(x['gib'], 3)} GiB", *[fmt.n(r[f"fits_{n}"]) for r in shown]])
    return t


def _check(r: dict[str, Any]) -> str:
    """The budget the engine was given against tokens × the formula."""
    if r.get("budget_gib") is None or r.get("difference_bytes") is None:
        return "no byte budget given to the engine: nothing to check against"
    diff = r["difference_bytes"]
    block_bytes = (r.get("block") or 1) * (r.get("per_token") or 0)
    verdict = (
        "within one block (block rounding)"
        if r.get("within_rounding")
        else f"differs by {fmt.n(diff / 2**20, 2)} MiB ({fmt.n(diff / block_bytes, 1)} blocks)"
        if block_bytes
        else f"differs by {fmt.n(diff / 2**20, 2)} MiB"
    )
    return f"{r['budget_source']}: budget − pool = {fmt.n(diff / 2**10, 1)} KiB, {verdict}"


def pools_table(pools: pd.DataFrame) -> Table:
    """Per backend: the pool in tokens (the engine's figure) and GiB (× the formula), its block, the check."""
    t = Table(["backend", "KV pool, tokens", "block", "GiB (tokens × formula)", "formula check", "from"])
    t.numeric = {1, 2, 3}
    for r in pools.to_dict("records"):
        tokens = r.get("tokens")
        t.add(
            [
                r["backend"],
                fmt.n(tokens) if tokens is not None else "not reported",
                fmt.n(r.get("block")) if r.get("block") else "–",
                fmt.n(r.get("gib"), 2) if r.get("gib") is not None else "–",
                _check(r),
                r.get("source") or "",
            ]
        )
    return t


def bend_table(bend: pd.DataFrame, gpu: str) -> Table:
    """Per batch: the context N where a decode step's KV reads equal its weight reads, and at each length the
    step's bytes, the KV share, and the floor (each sequence's ms per token) where the GPU is known."""
    cols = ["batch", "KV reads = weight reads at N ="]
    for n in BEND_LENGTHS:
        cols.append(f"N = {fmt.n(n)}: GB a step, KV share" + (", floor ms/token" if gpu else ""))
    t = Table(cols, numeric=set(range(len(cols))))
    for r in bend.to_dict("records"):
        row = [fmt.n(r["batch"]), fmt.n(r["bend_N"], 0)]
        for n in BEND_LENGTHS:
            cell = f"{fmt.n(r[f'gb_{n}'], 2)}, {fmt.pct(r[f'kv_share_{n}'])}"
            if gpu and r.get(f"floor_ms_{n}") is not None:
                cell += f", {fmt.n(r[f'floor_ms_{n}'], 2)}"
            row.append(cell)
        t.add(row)
    return t


def blocks(d: dict[str, Any]) -> list[Block]:
    """The block: both tables and how to read them; nothing where the model's shape is unknown."""
    lengths, pools = d.get("kv_lengths"), d.get("kv_pools")
    if lengths is None or lengths.empty:
        return []
    out: list[Block] = [
        h3("What the KV cache costs"),
        table(lengths_table(lengths, pools if pools is not None else pd.DataFrame())),
    ]
    if pools is not None and not pools.empty:
        out.append(table(pools_table(pools)))
    out.append(
        p(
            f"KV bytes per token of context = {d.get('kv_formula')}; one sequence of N tokens takes N × "
            f"that ({', '.join(fmt.n(n) for n in LENGTHS)} tabulated; GiB = {GIB:,} bytes). The pool is "
            "the engine's own figure in tokens (env.json), its GiB the formula's; a sequence takes whole "
            "blocks, so 'fit' is ⌊pool ÷ (⌈N ÷ block⌉ × block)⌋ at once, with nothing else in the pool "
            "(no shared prefix, no reply). Where the engine was given a byte budget, budget − pool within "
            "one block's bytes is the formula agreeing with the engine.",
            muted=True,
        )
    )
    bend = d.get("kv_bend")
    if bend is not None and not bend.empty:
        gpu = d.get("kv_bend_gpu") or ""
        out += [
            table(bend_table(bend, gpu)),
            p(
                "Predicted, not measured: a decode step at batch B streams the weights once and every "
                "sequence's KV cache, weights + B × N × bytes per token, so KV reads overtake weight reads "
                "at N = weights ÷ (B × bytes per token), and decode per token stops being flat in N there. "
                + (f"Floors at the {gpu}. " if gpu else "No GPU known: bytes only. ")
                + "A batch of B sequences of N tokens needs B × N tokens of pool: the 'fit' columns above "
                "say where a pool holds it. The measured sweep above runs at batch 1, far below the "
                "batch-1 bend.",
                muted=True,
            ),
        ]
    return out
