"""The lazy registry of backends: names map to ``module:Class`` strings, imported only when chosen.

The vLLM and SGLang environments pin different torch versions, so nothing here imports an
engine; :func:`resolve` does, inside the child process that runs that backend. The table is a
:class:`contract.registry.Registry` (``BACKENDS``; ``REGISTRY`` is its dict of entries).
"""

from __future__ import annotations

from backends.base import Backend, BackendUnavailable
from contract.registry import Registry

REGISTRY: dict[str, str] = {
    "hf": "backends.hf:HFBackend",
    "hf-graphs": "backends.hf:HFGraphsBackend",
    "hf-cb": "backends.hf.cb:HFContinuousBatchingBackend",
    "vllm": "backends.vllm:VLLMBackend",
    "sglang": "backends.sglang:SGLangBackend",
    "openai": "backends.openai:OpenAIBackend",
    "vllm-server": "backends.openai.servers:VLLMServerBackend",
    "sglang-server": "backends.openai.servers:SGLangServerBackend",
    "hf-server": "backends.openai.hf_server:HFServerBackend",
}

# What ``--backend all`` means: the in-process engines, one column each (hf-cb: HF's continuous
# batching, a column of the load workload only).
ALL: tuple[str, ...] = ("hf", "hf-graphs", "hf-cb", "vllm", "sglang")


# Backends that talk to a server someone else started: they need --base-url (and read --api-key-env).
EXTERNAL: tuple[str, ...] = ("openai",)

# Backends that run the engine's own data parallelism (``--dp N``, harness/parallel_args.py). Not ``vllm``
# in process: ``vllm.LLM`` raises on ``data_parallel_size > 1`` in one process (vLLM 0.26 and 0.32);
# its data parallelism is the server's.
DATA_PARALLEL: tuple[str, ...] = ("sglang", "vllm-server", "sglang-server")
# Backends whose data-parallel replicas can stand behind SGLang's router
# (``--router cache_aware|round_robin``).
ROUTED: tuple[str, ...] = ("sglang-server",)

# Settings a backend cannot apply are refused for it before anything runs (harness/cli_checks.py
# check_applicable), rather than recorded as applied. A server someone else started keeps its own prefix
# cache (--no-prefix-caching cannot switch it off); --engine-defaults is vLLM's scheduler only.
PREFIX_CACHE_FIXED: tuple[str, ...] = EXTERNAL
ENGINE_DEFAULTS: tuple[str, ...] = ("vllm", "vllm-server")

BACKENDS: Registry[type[Backend]] = Registry("backend", REGISTRY)


def resolve(name: str) -> type[Backend]:
    """Import and return the adapter class; :class:`BackendUnavailable` if it cannot be imported."""
    try:
        return BACKENDS.get(name)
    except ImportError as exc:
        raise BackendUnavailable(f"{name} is not installed here ({exc.name or exc})") from exc
