"""How the vLLM engine is set up: environment variables (set before ``vllm`` is imported) and ``LLM`` kwargs.

Pure functions, no vLLM import, so they can be checked anywhere:

    env = apply_env("cpu")              # os.environ.setdefault for each, returns what is in effect
    llm = vllm.LLM(**engine_kwargs(settings))

One engine per backend process with automatic prefix caching on. On a CPU the engine core runs in
this process (``VLLM_ENABLE_V1_MULTIPROCESSING=0``), eagerly (no torch.compile: starts in seconds)
with a small KV cache; on CUDA vLLM's defaults stay (engine core in its own process, torch.compile
and CUDA graphs, ``gpu_memory_utilization`` untouched). Every variable is a default: a value
already in the environment wins.
"""

from __future__ import annotations

import os
from typing import Any

from backends.base import BackendSettings

COMMON_ENV = {"HF_HUB_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1"}
CPU_ENV = {
    "VLLM_ENABLE_V1_MULTIPROCESSING": "0",  # engine core in process: fast start, no worker re-import
    "VLLM_CPU_KVCACHE_SPACE": "1",  # GiB of KV cache; plenty for the tiny model
}
# Engine-level: the per-request whitespace flag is ignored; random weights fill the budget with spaces.
STRUCTURED_OUTPUTS = {"backend": "xgrammar", "disable_any_whitespace": True}
FULL_MODE = "reset_prefix_cache() before every request"


def is_cpu(device: str) -> bool:
    return device.split(":")[0] == "cpu"


def engine_env(device: str) -> dict[str, str]:
    """The variables this adapter sets by default for ``device``."""
    return {**COMMON_ENV, **(CPU_ENV if is_cpu(device) else {})}


def apply_env(device: str) -> dict[str, str]:
    """``os.environ.setdefault`` for each variable; returns the values in effect."""
    return {name: os.environ.setdefault(name, value) for name, value in engine_env(device).items()}


def engine_kwargs(settings: BackendSettings) -> dict[str, Any]:
    """Keyword arguments for ``vllm.LLM`` (the same names in vLLM 0.26 and 0.32)."""
    kwargs: dict[str, Any] = {
        "model": settings.model_path,
        "dtype": settings.dtype,
        "tensor_parallel_size": settings.tp,
        "max_model_len": settings.max_model_len,
        "enable_prefix_caching": settings.prefix_caching,
        # LLM() turns stats off by default, and without them RequestOutput.metrics is None
        "disable_log_stats": False,
        "structured_outputs_config": dict(STRUCTURED_OUTPUTS),
    }
    if settings.random_weights:
        kwargs["load_format"] = "dummy"
    if is_cpu(settings.device):
        kwargs["enforce_eager"] = True
    return kwargs
