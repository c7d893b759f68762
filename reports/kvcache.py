"""What the KV cache costs: bytes per token of context from the model's config, GiB per sequence at
1k … 32k tokens, and each backend's KV pool as its engine reported it, with how many sequences fit.

    per_token = kv_bytes_per_token(config, dtype_bytes)  # layers × 2 (K, V) × KV heads × head dim × bytes
    pools(ds, blocks)                                    # one Pool per backend, from env.json only

A pool's tokens are the engine's own figure (env.json: a start's ``kv_cache_tokens``, or the engine's
``max_total_num_tokens``, or ``kv_cache_blocks`` × ``block_size``: :func:`kv_tokens`; the engine's KV block:
:func:`block_size`); its GiB are those tokens × the formula. Where the engine was also given a byte budget
for its cache (vLLM on a CPU: ``VLLM_CPU_KVCACHE_SPACE`` GiB; ``kv_cache_memory_bytes`` among its
arguments), the budget less tokens × formula checks the formula: within one block's bytes it is block
rounding, beyond it the page shows the difference. A sequence of N tokens takes ⌈N / block⌉ blocks, so
``fits(N)`` counts whole blocks; the pool is shared by every running sequence, prefix-cached ones included.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pandas as pd

from llm_call_anatomy.contract.models import DTYPE_BYTES
from llm_call_anatomy.reports.roofline import (
    StepBytes,
    decode_floor_ms,
    kv_bytes_per_token,
    model_config,
    model_size,
)
from llm_call_anatomy.reports.stats import num

LENGTHS = (1024, 2048, 4096, 8192, 16384, 32768)  # the context lengths the page tabulates
GIB = 2**30
__all__ = [
    "LENGTHS",
    "Pool",
    "engine_budget",
    "formula",
    "block_size",
    "kv_bytes_per_token",
    "kv_tokens",
    "pools",
    "pools_table",
    "section_data",
    "bend_table",
]
BATCHES = (1, 8, 32)  # the batch sizes the bend is predicted at
BEND_LENGTHS = (1024, 4096, 16384, 32768)


# --- what an engine start says about its KV cache (env.json) ------------------------------------------------
def kv_tokens(start: dict[str, Any]) -> float | None:
    """The tokens an engine start's KV pool holds, as the engine reported it (env.json: the start's
    ``kv_cache_tokens``, or the engine's ``max_total_num_tokens``, or its blocks × block size); None: no
    fixed pool (HF), or not reported."""
    if start.get("kv_cache_tokens") is not None:
        return num(start["kv_cache_tokens"])
    engine = start.get("engine") or {}
    if engine.get("max_total_num_tokens"):
        return num(engine["max_total_num_tokens"])
    if engine.get("kv_cache_blocks") and engine.get("block_size"):
        return float(engine["kv_cache_blocks"] * engine["block_size"])
    return None


def block_size(engine: dict[str, Any]) -> int | None:
    """The engine's KV block (vLLM ``block_size``, SGLang ``page_size``), in process or, for a server, as its
    /metrics or server info gave it (``engine["scheduler"]``); None: reuses to the token."""
    for where in (engine, engine.get("scheduler") or {}):
        for key in ("block_size", "page_size"):
            value = where.get(key)
            if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
                return int(value)
    return None


def formula(config: dict[str, Any], dtype_bytes: float) -> str:
    """The formula with this config's numbers, as the page prints it."""
    heads = config.get("num_attention_heads") or 1
    kv_heads = config.get("num_key_value_heads") or heads
    head_dim = config.get("head_dim") or config["hidden_size"] // heads
    return (
        f"{config['num_hidden_layers']} layers × 2 (K, V) × {kv_heads} KV heads × {head_dim} head dim × "
        f"{dtype_bytes:g} B = {kv_bytes_per_token(config, dtype_bytes):,} B per token"
    )


def per_sequence_gib(per_token: float, lengths: tuple[int, ...] = LENGTHS) -> dict[int, float]:
    """GiB of KV cache one sequence of each length takes."""
    return {n: per_token * n / GIB for n in lengths}


def engine_budget(engine: dict[str, Any]) -> tuple[float | None, str]:
    """The bytes the engine was told to give its KV cache, where it was told (else None and '')."""
    space = (engine.get("env") or {}).get("VLLM_CPU_KVCACHE_SPACE")
    if space not in (None, ""):
        try:
            return float(space) * GIB, f"VLLM_CPU_KVCACHE_SPACE={space} GiB"
        except ValueError:
            pass
    given = (engine.get("engine_kwargs") or {}).get("kv_cache_memory_bytes")
    if isinstance(given, int | float) and given > 0:
        return float(given), f"kv_cache_memory_bytes={int(given):,}"
    return None, ""


def kv_dtype_bytes(engine: dict[str, Any], run_env: dict[str, Any]) -> float | None:
    """Bytes per cached element: the engine's KV dtype where it names one, else its model dtype, else the
    run's."""
    for value in (engine.get("kv_cache_dtype"), engine.get("dtype")):
        if value not in (None, "", "auto"):
            found = DTYPE_BYTES.get(str(value).removeprefix("torch.").lower())
            if found is None and "fp8" in str(value).lower():
                found = 1
            if found:
                return found
    return model_size(run_env).dtype_bytes


@dataclass(frozen=True)
class Pool:
    """One backend's KV pool as its engine reported it, in tokens, with the formula's bytes beside it."""

    backend: str
    tokens: float | None  # the engine's figure (None: not reported)
    source: str  # where the tokens came from, or why there are none
    block: int | None  # tokens per KV block (paged engines; None or 1: token-granular)
    per_token: int | None  # the formula's bytes per token for this engine's KV dtype
    budget: float | None = None  # the bytes the engine was told to use for the cache, where told
    budget_source: str = ""

    @property
    def gib(self) -> float | None:
        return None if self.tokens is None or self.per_token is None else self.tokens * self.per_token / GIB

    def fits(self, n: int) -> int | None:
        """Sequences of ``n`` tokens the pool holds at once, each taking whole blocks."""
        if self.tokens is None:
            return None
        block = self.block or 1
        return int(self.tokens // (math.ceil(n / block) * block))

    @property
    def difference(self) -> float | None:
        """Budget bytes less the pool's tokens × the formula (None where no budget was given)."""
        if self.budget is None or self.gib is None:
            return None
        return self.budget - self.gib * GIB

    @property
    def within_rounding(self) -> bool | None:
        """Whether the budget and the pool differ by less than one block's bytes (None: nothing to check)."""
        if self.difference is None or self.per_token is None:
            return None
        return 0 <= self.difference < (self.block or 1) * self.per_token


def pools(ds: Any, blocks: dict[str, int | None]) -> list[Pool]:
    """Every backend's pool (``ds``: a reports.runs.Dataset; ``blocks``: KV block size per backend)."""
    out = []
    for b in ds.backends:
        engine, run_env = ds.env_of(b).get("engine") or {}, ds.run_env_of(b)
        starts = ds.start_envs(b)
        tokens = next((t for t in (kv_tokens(s) for s in starts) if t is not None), None)
        if tokens is None and engine:
            tokens = kv_tokens({"engine": engine})
        source = next(
            (s.get("kv_cache_tokens_source") for s in starts if s.get("kv_cache_tokens_source")), ""
        )
        if tokens is None:
            source = source or "the engine did not report its KV pool"
        config, _ = model_config(run_env)
        dtype = kv_dtype_bytes(engine, run_env)
        per_token = kv_bytes_per_token(config, dtype) if config and dtype else None
        budget, budget_source = engine_budget(engine)
        out.append(Pool(b, tokens, source or "env.json", blocks.get(b), per_token, budget, budget_source))
    return out


def lengths_table(per_token: int, lengths: tuple[int, ...] = LENGTHS) -> pd.DataFrame:
    """Per context length: KV bytes of one sequence, in GiB."""
    gib = per_sequence_gib(per_token, lengths)
    return pd.DataFrame({"N": list(lengths), "gib": [gib[n] for n in lengths]})


def pools_table(found: list[Pool], lengths: tuple[int, ...] = LENGTHS) -> pd.DataFrame:
    """Per backend: pool tokens and GiB, block, the budget check, and sequences of each length that fit."""
    rows = []
    for pool in found:
        row = {
            "backend": pool.backend,
            "tokens": pool.tokens,
            "gib": pool.gib,
            "block": pool.block,
            "per_token": pool.per_token,
            "budget_gib": None if pool.budget is None else pool.budget / GIB,
            "difference_bytes": pool.difference,
            "within_rounding": pool.within_rounding,
            "source": pool.source,
            "budget_source": pool.budget_source,
        }
        row.update({f"fits_{n}": pool.fits(n) for n in lengths})
        rows.append(row)
    return pd.DataFrame(rows)


def section_data(ds: Any, blocks: dict[str, int | None], backends: list[str]) -> dict[str, Any]:
    """What a section shows of the KV cache for ``backends`` (env.json only): ``kv_lengths`` (GiB per
    sequence at each length, for the first backend whose bytes per token are known), ``kv_pools`` (one row a
    backend) and ``kv_formula`` (the formula with its numbers; '' where the model's shape is unknown)."""
    found = [p for p in pools(ds, blocks) if p.backend in backends]
    known = next((p for p in found if p.per_token), None)
    text = ""
    if known is not None:
        run_env = ds.run_env_of(known.backend)
        config, source = model_config(run_env)
        dtype = kv_dtype_bytes(ds.env_of(known.backend).get("engine") or {}, run_env)
        if config and dtype:
            text = f"{formula(config, dtype)} (shape from {source})"
    return {
        "kv_lengths": lengths_table(known.per_token) if known is not None else pd.DataFrame(),
        "kv_pools": pools_table(found),
        "kv_formula": text,
    }


def bend_table(
    step: StepBytes, bandwidth_gbps: float | None, batches: tuple[int, ...] = BATCHES
) -> pd.DataFrame:
    """Where KV reads overtake weight reads in a decode step: at batch B each step streams the weights once
    and every sequence's KV, weights + B × N × bytes per token, so the bend is at N = weights ÷ (B × bytes
    per token). Per batch: that N, and at each of :data:`BEND_LENGTHS` the step's bytes, the KV share of them
    and, with a bandwidth, the step's floor (each sequence's ms per token). Empty without the KV shape."""
    if not step.kv_per_token:
        return pd.DataFrame()
    rows = []
    for b in batches:
        row: dict[str, Any] = {"batch": b, "bend_N": step.weights / (b * step.kv_per_token)}
        for n in BEND_LENGTHS:
            total = step.weights + b * n * step.kv_per_token
            row[f"gb_{n}"] = total / 1e9
            row[f"kv_share_{n}"] = (total - step.weights) / total
            row[f"floor_ms_{n}"] = decode_floor_ms(total, bandwidth_gbps) if bandwidth_gbps else None
        rows.append(row)
    return pd.DataFrame(rows)
