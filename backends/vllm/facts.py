"""What the vLLM engine says of itself: its own per-request timestamps (:func:`engine_timing`, kept beside
the caller's clock) and its effective configuration for env.json (:func:`describe`: block size, KV cache,
scheduler, attention backend, CUDA graphs), read back from the engine, not from what was asked.

Pure reads of vLLM's objects (``RequestOutput.metrics``, ``llm.llm_engine.vllm_config``) without importing
vLLM, so CI tests them on stand-ins; the adapter (``backends.vllm.backend``) calls them.
"""

from __future__ import annotations

import os
from typing import Any

from llm_call_anatomy.backends.vllm import config


def engine_timing(metrics: Any) -> tuple[float | None, float | None, dict[str, Any]]:
    """(TTFT ms, decode ms/token, extra) from ``RequestOutput.metrics`` (``RequestStateStats``).

    Unset timestamps are 0.0 in vLLM; those count as not reported.
    """
    ttft_s = getattr(metrics, "first_token_latency", None)
    if not ttft_s:
        return None, None, {}
    n = getattr(metrics, "num_generation_tokens", 0) or 0
    first, last = getattr(metrics, "first_token_ts", 0.0), getattr(metrics, "last_token_ts", 0.0)
    decode = (last - first) * 1e3 / (n - 1) if n > 1 and first and last >= first else None
    extra: dict[str, Any] = {}
    scheduled, queued = getattr(metrics, "scheduled_ts", 0.0), getattr(metrics, "queued_ts", 0.0)
    if scheduled and first:
        extra["engine_prefill_ms"] = (first - scheduled) * 1e3  # scheduled -> first token (engine clock)
    if queued and scheduled:
        extra["engine_queue_ms"] = (scheduled - queued) * 1e3
    return ttft_s * 1e3, decode, extra


def attention_backends(vllm_config: Any) -> list[str]:
    """Names of the attention backends of the model's layers, when they live in this process."""
    names: list[str] = []
    layers = getattr(getattr(vllm_config, "compilation_config", None), "static_forward_context", None) or {}
    for layer in layers.values():
        try:
            name = layer.get_attn_backend().get_name()
        except Exception:  # noqa: BLE001 - a layer without an attention backend
            continue
        if name not in names:
            names.append(name)
    return names


def attention_backend_fact(names: list[str], in_process: bool) -> str | None:
    """What env.json says of the attention backend: the layers' backend names, or why there are none."""
    if names:
        return ", ".join(names)
    if not in_process:  # the layers live in the engine-core process (the default on a GPU)
        return "not visible from this process (engine core in its own process); vLLM's log names it"
    return None


def scheduler_facts(vc: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    """The scheduler settings in effect (read back from the engine's config), and whether they were
    matched."""
    sched, cache = vc.scheduler_config, vc.cache_config
    blocks = getattr(cache, "num_gpu_blocks", None)
    block = getattr(cache, "effective_attention_block_size", None) or cache.block_size
    chunked = getattr(sched, "enable_chunked_prefill", None)
    return {
        "max_num_batched_tokens": sched.max_num_batched_tokens,
        "max_num_seqs": sched.max_num_seqs,
        "chunked_prefill": bool(
            chunked if chunked is not None else getattr(sched, "chunked_prefill_enabled", False)
        ),
        "gpu_memory_utilization": getattr(cache, "gpu_memory_utilization", None),
        "kv_cache_tokens": blocks * block if isinstance(blocks, int) else None,
        "defaults": "matched with vllm serve (backends/vllm/config.py)"
        if "max_num_seqs" in kwargs
        else "vLLM's own (LLM class)",
    }


def describe(llm: Any, kwargs: dict[str, Any], env: dict[str, str], version: str) -> dict[str, Any]:
    """The effective engine configuration, for env.json."""
    import torch

    vc = llm.llm_engine.vllm_config
    cache, comp, model = vc.cache_config, vc.compilation_config, vc.model_config
    cudagraph_mode = getattr(comp, "cudagraph_mode", None)
    cudagraph_name = getattr(cudagraph_mode, "name", str(cudagraph_mode))
    structured = getattr(vc, "structured_outputs_config", None)
    in_process = os.environ.get("VLLM_ENABLE_V1_MULTIPROCESSING", "1") == "0"
    backends = attention_backends(vc)
    configured_attn = getattr(getattr(vc, "attention_config", None), "backend", None)
    return {
        "vllm": version,
        "torch": torch.__version__,
        "device": vc.device_config.device_type if hasattr(vc, "device_config") else None,
        "engine_kwargs": kwargs,
        "env": env,
        "engine_core": "in this process" if in_process else "its own process",
        "dtype": str(model.dtype).removeprefix("torch."),
        "max_model_len": model.max_model_len,
        "tensor_parallel_size": vc.parallel_config.tensor_parallel_size,
        "block_size": getattr(cache, "effective_attention_block_size", None) or cache.block_size,
        "kv_cache_blocks": getattr(cache, "num_gpu_blocks", None),
        "prefix_caching": bool(cache.enable_prefix_caching),
        "kv_cache_dtype": getattr(cache, "cache_dtype", None),  # a variant's (issue 41), as run
        "quantization": getattr(model, "quantization", None),
        "scheduler": scheduler_facts(vc, kwargs),
        "attention_backend": attention_backend_fact(backends, in_process),
        "attention_backend_configured": getattr(configured_attn, "name", None) or "auto",
        "enforce_eager": bool(model.enforce_eager),
        "compilation_mode": getattr(getattr(comp, "mode", None), "name", None),
        "cudagraph_mode": cudagraph_name,
        "cuda_graphs": not model.enforce_eager and cudagraph_name not in (None, "NONE"),
        "structured_outputs": None
        if structured is None
        else {
            "backend": structured.backend,
            "disable_any_whitespace": structured.disable_any_whitespace,
        },
        "logprobs_mode": getattr(model, "logprobs_mode", None),
        "full_mode": config.FULL_MODE,
        "timing": "engine-step: LLMEngine.add_request + step() with RequestOutputKind.CUMULATIVE, the "
        "caller's clock ticking as each step hands over tokens; engine_ttft_ms / engine_decode_ms_per_token "
        "from RequestOutput.metrics: first_token_latency; "
        "(last_token_ts - first_token_ts) / (num_generation_tokens - 1)",
        "step0_candidates": "SamplingParams(logprobs=k): log-softmax of the logits the sampler sees "
        "(after the grammar mask in constrained mode, masked tokens left out); raw logits not reported",
        "warm_up": "one 2-token request with logprobs=1 in start() (compiles the logprob-rank kernel)",
    }
