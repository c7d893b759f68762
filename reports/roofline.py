"""The roofline: how fast a batch-1 forward pass could be on this GPU.

Decode floor = bytes one decode step reads / memory bandwidth. The bytes are every weight
*except the input embedding* (a step gathers one row of it, it does not stream it; with tied
embeddings the same matrix is the lm_head, which is streamed, so nothing is left out), plus the
KV cache read at that context length (layers × 2 × kv_heads × head_dim × bytes × context).
Two bandwidths give two floors: the datasheet peak and, where given, a measured device-to-device
copy (``benchmarks.bandwidth``), the rate a step can actually stream at.
Prefill floor = 2 · params · N / peak FLOP/s: a compute floor (two FLOPs per weight per token).
The parameter count comes from env.json (``model.params``) or the model's ``config.json``
(Qwen3-style dense decoder formula); the shape (vocab, layers, KV heads) from the config of the
model path, or of the built-in model named in env.json; bandwidth and FLOP/s from :data:`GPUS`,
keyed by the GPU name torch reported, unless the user overrides them.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llm_call_anatomy.contract.models import DTYPE_BYTES, builtin_config

# Datasheet values: peak memory bandwidth (GB/s) and dense BF16 tensor-core TFLOP/s (no sparsity).
# Sources: NVIDIA A100 datasheet (2021: 40GB SXM 1,555 GB/s, 80GB SXM 2,039 GB/s, 80GB PCIe
# 1,935 GB/s; 312 TFLOPS BF16), H100 datasheet (SXM 3.35 TB/s, 989 TFLOPS; PCIe 2 TB/s,
# 756 TFLOPS; NVL 3.9 TB/s, 835 TFLOPS), H200 datasheet (SXM 4.8 TB/s, 989 TFLOPS; NVL 4.8 TB/s,
# 835 TFLOPS), B200 (HGX B200 per GPU: 8 TB/s, 2.25 PFLOPS dense BF16), L4 datasheet (300 GB/s,
# 121 TFLOPS), L40S datasheet (864 GB/s, 362 TFLOPS), A10 datasheet (600 GB/s, 125 TFLOPS),
# Ada Lovelace whitepaper for the RTX 4090 (1,008 GB/s, 165.2 TFLOPS BF16 with FP32 accumulate).
# First match wins, so the more specific names come first.
GPUS: list[tuple[str, str, float, float]] = [
    (r"H200.*NVL", "H200 NVL", 4800.0, 835.0),
    (r"H200", "H200 SXM", 4800.0, 989.0),
    (r"H100.*NVL", "H100 NVL", 3900.0, 835.0),
    (r"H100.*PCIe", "H100 PCIe", 2000.0, 756.0),
    (r"H100", "H100 SXM", 3350.0, 989.0),
    (r"A100.*80GB.*PCIe|A100.*PCIE.*80GB", "A100 80GB PCIe", 1935.0, 312.0),
    (r"A100.*80GB", "A100 80GB SXM", 2039.0, 312.0),
    (r"A100", "A100 40GB", 1555.0, 312.0),
    (r"B200", "B200", 8000.0, 2250.0),
    (r"L40S", "L40S", 864.0, 362.0),
    (r"\bL4\b", "L4", 300.0, 121.0),
    (r"RTX 4090", "RTX 4090", 1008.0, 165.2),
    (r"\bA10\b", "A10", 600.0, 125.0),
]


@dataclass(frozen=True)
class Peak:
    label: str  # "H200 SXM", or "command line"
    bandwidth_gbps: float
    tflops: float
    source: str  # "datasheet" | "command line"


def gpu_peak(
    gpu: str | None, bandwidth_gbps: float | None = None, tflops: float | None = None
) -> Peak | None:
    """Peak figures for a GPU name, overrides first; None without a GPU or when a figure is unknown."""
    if gpu is None:
        return None
    known = next(((label, bw, tf) for pattern, label, bw, tf in GPUS if re.search(pattern, gpu, re.I)), None)
    bw = bandwidth_gbps if bandwidth_gbps is not None else (known[1] if known else None)
    tf = tflops if tflops is not None else (known[2] if known else None)
    if bw is None or tf is None:
        return None
    overridden = bandwidth_gbps is not None or tflops is not None
    if not overridden:
        source = "datasheet"
    elif known is None or (bandwidth_gbps is not None and tflops is not None):
        source = "command line"
    else:
        source = "datasheet + command line"
    return Peak(known[0] if known else gpu, bw, tf, source)


def qwen3_params(config: dict[str, Any]) -> int:
    """Total parameters of a Qwen3-style dense decoder (embedding and an untied lm_head included)."""
    h = config["hidden_size"]
    vocab = config["vocab_size"]
    heads = config["num_attention_heads"]
    kv = config.get("num_key_value_heads", heads)
    head_dim = config.get("head_dim") or h // heads
    inter = config["intermediate_size"]
    q, k = heads * head_dim, kv * head_dim
    attn = h * q + 2 * h * k + q * h
    if config.get("attention_bias"):
        attn += q + 2 * k + h
    qk_norm = 2 * head_dim if config.get("model_type", "qwen3") == "qwen3" else 0
    layer = attn + 3 * h * inter + 2 * h + qk_norm
    embed = vocab * h
    head = 0 if config.get("tie_word_embeddings") else vocab * h
    return embed + head + config["num_hidden_layers"] * layer + h


@dataclass(frozen=True)
class ModelSize:
    params: int | None
    dtype_bytes: int | None
    source: str  # where the figures came from, or why they are missing

    @property
    def weight_bytes(self) -> float | None:
        return (
            None if self.params is None or self.dtype_bytes is None else float(self.params * self.dtype_bytes)
        )


def model_size(env: dict[str, Any]) -> ModelSize:
    """Parameters and bytes per parameter of a run's model: env.json first, then config.json."""
    model = env.get("model") or {}
    dtype_bytes = model.get("dtype_bytes") or DTYPE_BYTES.get(str(env.get("dtype") or "").lower())
    if model.get("params"):
        return ModelSize(int(model["params"]), dtype_bytes, "env.json")
    path = Path(str(model.get("path") or "")) / "config.json"
    if not model.get("path") or not path.is_file():
        return ModelSize(
            None,
            dtype_bytes,
            "parameter count not available (no model.params in env.json, config.json not readable)",
        )
    try:
        config = json.loads(path.read_text())
        params = qwen3_params(config)
    except (OSError, ValueError, KeyError) as exc:
        return ModelSize(
            None, dtype_bytes, f"parameter count not available ({type(exc).__name__} reading {path})"
        )
    if dtype_bytes is None:
        dtype_bytes = DTYPE_BYTES.get(str(config.get("torch_dtype") or config.get("dtype") or ""))
    return ModelSize(params, dtype_bytes, f"computed from {path}")


def model_config(env: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
    """The model's config.json: env.json's own copy, the model path, or the built-in config by label."""
    model = env.get("model") or {}
    if isinstance(model.get("config"), dict):
        return model["config"], "env.json"
    path = Path(str(model.get("path") or "")) / "config.json"
    if model.get("path") and path.is_file():
        try:
            return json.loads(path.read_text()), str(path)
        except (OSError, ValueError):
            pass
    if model.get("builtin"):  # smollm2: runs made before env.json kept the config
        found = builtin_config(str(model.get("label")))
        if found:
            return found
    return None, "model config not readable (path gone, not a built-in)"


def kv_bytes_per_token(config: dict[str, Any], dtype_bytes: float) -> int | None:
    """KV-cache bytes one token of context takes in every layer: layers × 2 (K and V) × KV heads × head dim
    × bytes; None when the config lacks the shape (:mod:`reports.kvcache` tabulates what it costs)."""
    try:
        layers, hidden = config["num_hidden_layers"], config["hidden_size"]
    except (KeyError, TypeError):
        return None
    heads = config.get("num_attention_heads") or 1
    kv_heads = config.get("num_key_value_heads") or heads
    head_dim = config.get("head_dim") or hidden // heads
    return int(layers * 2 * kv_heads * head_dim * dtype_bytes)


@dataclass(frozen=True)
class StepBytes:
    """What one batch-1 decode step reads from memory."""

    weights: float  # streamed weights: all of them less the input embedding (unless tied)
    embedding_left_out: float  # bytes of the input embedding not counted (0 when tied or unknown)
    kv_per_token: float | None  # KV-cache bytes per token of context, all layers (None: shape unknown)
    note: str  # how the figures were derived

    def at(self, context: float) -> float:
        return self.weights + (self.kv_per_token or 0.0) * context


def step_bytes(size: ModelSize, config: dict[str, Any] | None, source: str = "") -> StepBytes | None:
    """Bytes a decode step streams, from the parameter count and the model's shape (None without a size)."""
    if size.weight_bytes is None or size.dtype_bytes is None:
        return None
    if not config:
        return StepBytes(
            size.weight_bytes,
            0.0,
            None,
            f"all weights ({source or 'no config'}: embedding and KV cache not separable)",
        )
    try:
        h, vocab, layers = config["hidden_size"], config["vocab_size"], config["num_hidden_layers"]
    except KeyError:
        return StepBytes(size.weight_bytes, 0.0, None, "all weights (config lacks the shape)")
    heads = config.get("num_attention_heads") or 1
    kv_heads = config.get("num_key_value_heads") or heads
    head_dim = config.get("head_dim") or h // heads
    tied = bool(config.get("tie_word_embeddings"))
    embed = 0.0 if tied else float(vocab * h * size.dtype_bytes)
    kv = float(kv_bytes_per_token(config, size.dtype_bytes) or 0.0)
    how = (
        "weights incl. the embedding, streamed as the tied lm_head"
        if tied
        else "weights less the input embedding"
    )
    return StepBytes(
        size.weight_bytes - embed,
        embed,
        kv,
        f"{how} + KV cache ({layers} layers × 2 × {kv_heads} KV heads × "
        f"{head_dim} × {size.dtype_bytes} B per token of context); shape from {source}",
    )


def decode_floor_ms(step_bytes: float, bandwidth_gbps: float) -> float:
    return step_bytes / (bandwidth_gbps * 1e9) * 1e3


def prefill_floor_ms(params: float, n_tokens: float, peak: Peak) -> float:
    return 2.0 * params * n_tokens / (peak.tflops * 1e12) * 1e3


def effective_bandwidth_gbps(step_bytes: float, decode_ms: float) -> float:
    return step_bytes / (decode_ms / 1e3) / 1e9


# --- a backend's roofline: the floors its run is drawn against ---
REPLY_TOKENS = 64  # the reply a decode floor is drawn at (its KV at mid-reply): the seed's 64-token reply


@dataclass(frozen=True)
class Roof:
    backend: str
    gpu: str | None
    peak: Peak | None
    size: ModelSize
    note: str | None  # why there is no roofline, when there is none
    step: StepBytes | None = None  # bytes a decode step reads
    copy_gbps: float | None = None  # measured device-to-device copy bandwidth: the second decode floor

    @property
    def ok(self) -> bool:
        return self.peak is not None and self.size.params is not None and self.step is not None

    def step_bytes(self, n: float = 0) -> float | None:
        """Bytes a decode step reads with ``n`` prompt tokens: weights + the KV cache at mid-reply."""
        return self.step.at(n + REPLY_TOKENS / 2) if self.step is not None else None

    def decode_floor_ms(self, n: float = 0, measured: bool = False) -> float | None:
        """Decode floor at prompt length ``n``: datasheet
        bandwidth, or the measured copy (None if not given)."""
        bw = self.copy_gbps if measured else (self.peak.bandwidth_gbps if self.peak else None)
        return decode_floor_ms(self.step_bytes(n), bw) if self.ok and bw else None  # type: ignore[arg-type]

    def prefill_floor_ms(self, n: float) -> float | None:
        return prefill_floor_ms(self.size.params, n, self.peak) if self.ok else None  # type: ignore[arg-type]


def roof_for(
    backend: str,
    gpu: str | None,
    run_env: dict,
    bandwidth_gbps: float | None,
    tflops: float | None,
    known: bool = True,
    copy_gbps: float | None = None,
) -> Roof:
    """The roofline of one backend's run; ``known=False``: env.json does not say which device it ran on."""
    size = model_size(run_env)
    config, source = model_config(run_env)
    step = step_bytes(size, config, source)
    if gpu is None and not known:
        return Roof(backend, None, None, size, "env.json does not say which device it ran on")
    if gpu is None:
        return Roof(backend, None, None, size, "CPU run: the GPU roofline is not applicable")
    peak = gpu_peak(gpu, bandwidth_gbps, tflops)
    if peak is None:
        return Roof(
            backend,
            gpu,
            None,
            size,
            f"{gpu} is not in the table of known GPUs: pass --bandwidth-gbps and --tflops",
        )
    if size.params is None or size.dtype_bytes is None:
        return Roof(
            backend, gpu, peak, size, size.source if size.params is None else "bytes per parameter unknown"
        )
    return Roof(backend, gpu, peak, size, None, step, copy_gbps)
