"""The lazy registry of backends: names map to ``module:Class`` strings, imported only when chosen.

The vLLM and SGLang environments pin different torch versions, so nothing here imports an
engine; :func:`resolve` does, inside the child process that runs that backend. The table is a
:class:`contract.registry.Registry` (``BACKENDS``; ``REGISTRY`` is its dict of entries).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from llm_call_anatomy.backends.base import Backend, BackendUnavailable, install_hint
from llm_call_anatomy.contract.adapter import SettingsApplied
from llm_call_anatomy.contract.columns import base_of
from llm_call_anatomy.contract.docs import DIST
from llm_call_anatomy.contract.registry import Registry

REGISTRY: dict[str, str] = {
    "hf": "llm_call_anatomy.backends.hf:HFBackend",
    "hf-graphs": "llm_call_anatomy.backends.hf:HFGraphsBackend",
    "hf-cb": "llm_call_anatomy.backends.hf.cb:HFContinuousBatchingBackend",
    "vllm": "llm_call_anatomy.backends.vllm:VLLMBackend",
    "sglang": "llm_call_anatomy.backends.sglang:SGLangBackend",
    "openai": "llm_call_anatomy.backends.openai:OpenAIBackend",
    "vllm-server": "llm_call_anatomy.backends.openai.servers:VLLMServerBackend",
    "sglang-server": "llm_call_anatomy.backends.openai.servers:SGLangServerBackend",
    "hf-server": "llm_call_anatomy.backends.openai.hf_server:HFServerBackend",
}

# What ``--backend all`` means: the in-process engines, one column each (hf-cb: HF's continuous
# batching, a column of the load workload only).
ALL: tuple[str, ...] = ("hf", "hf-graphs", "hf-cb", "vllm", "sglang")


# Backends that talk to a server someone else started: they need --base-url (and read --api-key-env).
EXTERNAL: tuple[str, ...] = ("openai",)

# What each backend's engine is configured by, of the run's recorded settings
# (contract.adapter.SettingsApplied): a setting asked that a chosen backend does not apply is refused before
# anything runs, or recorded as asked and not applied (harness/applied.py). Declared here, beside the names,
# so that it is read before any engine is imported. HF's adapters size nothing by --max-model-len but
# hf-graphs' static cache; hf-cb's attention is its own config's (LCA_HF_CB); hf and hf-graphs keep no prefix
# cache that --no-prefix-caching switches off. ``vllm`` in process has no data parallelism: ``vllm.LLM``
# raises on ``data_parallel_size > 1`` in one process (vLLM 0.26 and 0.32); its data parallelism is the
# server's. A server someone else started applies none of the engine's settings.
_HF = SettingsApplied(dtype=True, device=True, random_weights=True, attn=True)
_ENGINE = SettingsApplied(
    dtype=True, device=True, random_weights=True, tp=True, max_model_len=True, prefix_caching=True
)
APPLIES: dict[str, SettingsApplied] = {
    "hf": _HF,
    "hf-graphs": replace(_HF, max_model_len=True),
    "hf-cb": SettingsApplied(dtype=True, device=True, random_weights=True, prefix_caching=True),
    "vllm": replace(_ENGINE, engine_defaults=True),
    "sglang": replace(_ENGINE, dp=True),
    "openai": SettingsApplied(client_procs=True),  # the harness's client only: the server is its own
    "vllm-server": replace(_ENGINE, dp=True, engine_defaults=True, client_procs=True),
    "sglang-server": replace(_ENGINE, dp=True, router=True, client_procs=True),
    "hf-server": SettingsApplied(dtype=True, device=True, random_weights=True, client_procs=True),
}


def applies(name: str) -> SettingsApplied:
    """What a column's engine is configured by: its base backend's declaration (``vllm-server@fp8``:
    ``vllm-server``'s)."""
    return APPLIES[base_of(name)]


def applying(setting: str) -> tuple[str, ...]:
    """The backends that apply ``setting`` (a :class:`~contract.adapter.SettingsApplied` field)."""
    return tuple(name for name, applied in APPLIES.items() if applied.applies(setting))


# Backends that run the engine's own data parallelism (``--dp N``, harness/parallel_args.py), and those whose
# data-parallel replicas can stand behind SGLang's router (``--router cache_aware|round_robin``).
DATA_PARALLEL: tuple[str, ...] = applying("dp")
ROUTED: tuple[str, ...] = applying("router")

BACKENDS: Registry[type[Backend]] = Registry("backend", REGISTRY)


@dataclass(frozen=True)
class Needs:
    """What a backend needs before it can start, read by the plan before any engine is imported
    (harness/skips.py): the top-level modules that it (its adapter, its engine, the server it launches)
    imports in the interpreter that runs it, and a CUDA device. ``install``: how to get the modules where
    its extra does not bring them all (None: the extra of its package folder, :func:`extra_of`)."""

    modules: tuple[str, ...] = ()
    cuda: bool = False
    install: str | None = None


# The child is the authority: it skips a backend that cannot start with the adapter's own reason; this table
# is the plan's forecast of the skips that are facts before anything starts (tests/package/test_extras.py
# checks the modules against the imports of each backend's package). hf-graphs captures CUDA graphs and
# sglang runs on a GPU in this study; the OpenAI-compatible client is the openai extra's.
_CLIENT = ("openai", "httpx", "aiohttp", "prometheus_client")
NEEDS: dict[str, Needs] = {
    "hf": Needs(),
    "hf-graphs": Needs(cuda=True),
    "hf-cb": Needs(),
    "vllm": Needs(("vllm",)),
    "sglang": Needs(("sglang",), cuda=True),
    "openai": Needs(_CLIENT),
    "vllm-server": Needs((*_CLIENT, "vllm")),
    "sglang-server": Needs((*_CLIENT, "sglang")),
    "hf-server": Needs(
        (*_CLIENT, "fastapi", "uvicorn"), install=f"pip install '{DIST}[openai]' 'transformers[serving]'"
    ),
}


def needs(name: str) -> Needs:
    """What a backend or a column (its base's) needs before it can start; nothing declared for an entry
    outside the table (a plugin's, a test's)."""
    return NEEDS.get(base_of(name), Needs())


def extra_of(name: str) -> str | None:
    """The extra that installs what a backend (or a column) imports: the package folder of its adapter
    (``hf-server``, ``llm_call_anatomy.backends.openai.hf_server``: ``openai``); None for an entry outside
    ``backends/`` (a plugin's, a test's)."""
    parts = BACKENDS.entries[base_of(name)].partition(":")[0].split(".")
    return parts[2] if parts[:2] == ["llm_call_anatomy", "backends"] and len(parts) > 2 else None


def resolve(name: str) -> type[Backend]:
    """Import and return the adapter class of a backend or of a column (``base@variant``: the base's);
    :class:`BackendUnavailable` if it cannot be imported, ending with the ``pip install`` of its extra where a
    dependency is missing (``openai is not installed here (httpx): pip install 'llm-call-anatomy[openai]'``).
    """
    name = base_of(name)
    try:
        return BACKENDS.get(name)
    except ImportError as exc:
        extra = extra_of(name)
        hint = install_hint(extra, exc) if extra else ""
        raise BackendUnavailable(f"{name} is not installed here ({exc.name or exc}){hint}") from exc
