"""How the vLLM engine is set up: environment variables (set before ``vllm`` is imported) and ``LLM`` kwargs.

Pure functions, no vLLM import, so they can be checked anywhere:

    env = apply_env("cpu", model_path)  # os.environ.setdefault for each, returns what is in effect
    llm = vllm.LLM(**engine_kwargs(settings))

One engine per backend process with automatic prefix caching on. On a CPU the engine core runs in
this process (``VLLM_ENABLE_V1_MULTIPROCESSING=0``), eagerly (no torch.compile: starts in seconds)
with a small KV cache; on CUDA vLLM's defaults stay (engine core in its own process, torch.compile
and CUDA graphs) except the scheduler settings, which by default are those of ``vllm serve`` on both
sides (:data:`MATCHED_SCHEDULER_GPU`; ``gpu_memory_utilization`` 0.9 is vLLM's own default).
``HF_HUB_OFFLINE=1`` only when the model is a local directory (as ``vllm-server`` does): a hub id such
as ``Qwen/Qwen3-8B`` is downloaded on an empty cache. Every variable is a default: a value already in
the environment wins.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from llm_call_anatomy.contract.adapter import BackendSettings

COMMON_ENV = {"VLLM_NO_USAGE_STATS": "1"}
LOCAL_MODEL_ENV = {"HF_HUB_OFFLINE": "1"}  # a local directory: no hub look-up at all
CPU_ENV = {
    "VLLM_ENABLE_V1_MULTIPROCESSING": "0",  # engine core in process: fast start, no worker re-import
    "VLLM_CPU_KVCACHE_SPACE": "1",  # GiB of KV cache; plenty for the tiny model
}
# Engine-level: the per-request whitespace flag is ignored; random weights fill the budget with spaces.
STRUCTURED_OUTPUTS = {"backend": "xgrammar", "disable_any_whitespace": True}
FULL_MODE = "reset_prefix_cache() before every request"
# vLLM picks its scheduler defaults by who starts it: the offline LLM class and `vllm serve` differ (an H200:
# max_num_batched_tokens 16,384 vs 8,192; a CPU: 4,096 vs 2,048 and max_num_seqs 256 vs 128; see vLLM's
# EngineArgs.get_batch_defaults). "matched" (the default, --engine-defaults) gives both sides the server's
# values for the device, so that the in-process vs HTTP difference is HTTP; "own" leaves each its defaults. A
# user's --engine-arg goes on top of either.
MATCHED_SCHEDULER_GPU = {
    "max_num_batched_tokens": 8192,
    "max_num_seqs": 1024,
    "enable_chunked_prefill": True,
    "gpu_memory_utilization": 0.9,
}
MATCHED_SCHEDULER_CPU = {"max_num_batched_tokens": 2048, "max_num_seqs": 128, "enable_chunked_prefill": True}


def is_cpu(device: str) -> bool:
    return device.split(":")[0] == "cpu"


def engine_env(device: str, model_path: str) -> dict[str, str]:
    """The variables this adapter sets by default for ``device`` and the model at ``model_path``."""
    return {
        **COMMON_ENV,
        **(LOCAL_MODEL_ENV if Path(model_path).is_dir() else {}),
        **(CPU_ENV if is_cpu(device) else {}),
    }


def apply_env(device: str, model_path: str) -> dict[str, str]:
    """``os.environ.setdefault`` for each variable; returns the values in effect."""
    return {
        name: os.environ.setdefault(name, value) for name, value in engine_env(device, model_path).items()
    }


def scheduler_kwargs(settings: BackendSettings) -> dict[str, Any]:
    """The scheduler settings both vLLM sides get (``--engine-defaults matched``), {} with ``own``."""
    if settings.engine_defaults == "own":
        return {}
    return dict(MATCHED_SCHEDULER_CPU if is_cpu(settings.device) else MATCHED_SCHEDULER_GPU)


def scheduler_flags(settings: BackendSettings) -> list[str]:
    """The same as ``vllm serve`` flags (``--max-num-batched-tokens 8192 ... --enable-chunked-prefill``)."""
    flags: list[str] = []
    for key, value in scheduler_kwargs(settings).items():
        flag = "--" + key.replace("_", "-")
        if isinstance(value, bool):
            flags.append(flag if value else "--no-" + flag[2:])
        else:
            flags += [flag, str(value)]
    return flags


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
        **scheduler_kwargs(settings),
    }
    if settings.random_weights:
        kwargs["load_format"] = "dummy"
    if is_cpu(settings.device):
        kwargs["enforce_eager"] = True
    return kwargs
