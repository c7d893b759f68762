"""The lazy registry of backends: names map to ``module:Class`` strings, imported only when chosen.

The vLLM and SGLang environments pin different torch versions, so nothing here imports an
engine; :func:`load` does, inside the child process that runs that backend.
"""

from __future__ import annotations

import importlib

from backends.base import Backend, BackendUnavailable

REGISTRY: dict[str, str] = {
    "hf": "backends.hf:HFBackend",
    "hf-graphs": "backends.hf:HFGraphsBackend",
    "hf-cb": "backends.hf.cb:HFContinuousBatchingBackend",
    "vllm": "backends.vllm:VLLMBackend",
    "sglang": "backends.sglang:SGLangBackend",
    "openai": "backends.openai:OpenAIBackend",
    "vllm-server": "backends.openai.servers:VLLMServerBackend",
    "sglang-server": "backends.openai.servers:SGLangServerBackend",
    "hf-server": "backends.openai.servers:HFServerBackend",
}

# What ``--backend all`` means: the in-process engines, one column each (hf-cb: HF's continuous
# batching, a column of the load workload only).
ALL: tuple[str, ...] = ("hf", "hf-graphs", "hf-cb", "vllm", "sglang")


def load(name: str) -> type[Backend]:
    """Import and return the adapter class; :class:`BackendUnavailable` if it cannot be imported."""
    if name not in REGISTRY:
        raise KeyError(name)
    module_name, class_name = REGISTRY[name].split(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise BackendUnavailable(f"{name} is not installed here ({exc.name or exc})") from exc
    return getattr(module, class_name)
