"""SGLang settings: the adapter's own options (:class:`SGLangOptions`), the ``sglang.Engine``
keyword arguments, the per-request sampling parameters, and the effective engine configuration
read back for env.json. Pure functions (no sglang import), so CI tests them without the engine.

Every name here was checked against the SGLang 0.5.17 source:
- ``ServerArgs`` fields (``sglang/srt/server_args.py``): ``model_path``, ``load_format``,
  ``dtype``, ``tp_size``, ``context_length``, ``grammar_backend``, ``sampling_backend``,
  ``attention_backend``, ``constrained_json_disable_any_whitespace`` ("(xgrammar and llguidance
  backends only) Enforce compact representation in JSON constrained output": SGLang's
  equivalent of vLLM's ``disable_any_whitespace``; ``constrained_json_whitespace_pattern`` is
  for outlines/llguidance only), ``disable_radix_cache``, ``enable_metrics``,
  ``skip_tokenizer_init``, ``random_seed``, ``log_level``, ``page_size``, ``disable_cuda_graph``.
- ``SamplingParams`` fields (``sglang/srt/sampling/sampling_params.py``): ``max_new_tokens``,
  ``temperature`` (0 means greedy: top_k=1), ``top_p``, ``ignore_eos``, ``json_schema`` (a JSON
  string), ``sampling_seed`` (applied only with ``enable_deterministic_inference``; see
  ``sampling_batch_info.py``, where the seed tensor is built only in that mode).
"""

from __future__ import annotations

import dataclasses
import enum
import json
from dataclasses import dataclass
from typing import Any

from llm_call_anatomy.contract.adapter import BackendOptions, BackendSettings, Request


@dataclass(frozen=True)
class SGLangOptions(BackendOptions):
    """The SGLang adapter's own settings (``settings.options``); None: SGLang's default."""

    # "auto": the scheduler's timestamps where prometheus_client is installed; "engine" forces
    # ``enable_metrics`` on, "stream" off (see backends.sglang.backend)
    timing: str = "auto"
    # ServerArgs fields (0.5.17) passed straight to sglang.Engine where set (ENGINE_OPTIONS)
    attention_backend: str | None = None
    mem_fraction_static: float | None = None
    disable_cuda_graph: bool | None = None
    chunked_prefill_size: int | None = None
    page_size: int | None = None
    disable_overlap_schedule: bool | None = None


# SGLangOptions fields passed straight to sglang.Engine (all ServerArgs fields in 0.5.17)
ENGINE_OPTIONS = (
    "attention_backend",
    "mem_fraction_static",
    "disable_cuda_graph",
    "chunked_prefill_size",
    "page_size",
    "disable_overlap_schedule",
)

# effective values recorded in env.json (read back from the engine, not from what we asked)
EFFECTIVE_KEYS = (
    "page_size",
    "attention_backend",
    "prefill_attention_backend",
    "decode_attention_backend",
    "sampling_backend",
    "grammar_backend",
    "constrained_json_disable_any_whitespace",
    "disable_radix_cache",
    "radix_eviction_policy",
    "disable_cuda_graph",
    "cuda_graph_backend_decode",
    "cuda_graph_backend_prefill",
    "cuda_graph_config",
    "disable_overlap_schedule",
    "chunked_prefill_size",
    "mem_fraction_static",
    "max_total_num_tokens",
    "max_running_requests",  # the scheduler settings issue 21 records for every engine (with the three above)
    "max_prefill_tokens",
    "context_length",
    "load_format",
    "dtype",
    "tp_size",
    "dp_size",  # --dp: data-parallel replicas, and how SGLang's controller spreads requests over them
    "load_balance_method",
    "enable_metrics",
    "stream_interval",
    "enable_deterministic_inference",
)


def engine_kwargs(settings: BackendSettings, *, enable_metrics: bool) -> dict[str, Any]:
    """Keyword arguments for ``sglang.Engine`` (each one a ``ServerArgs`` field)."""
    kwargs: dict[str, Any] = {
        "model_path": settings.model_path,
        "dtype": settings.dtype,
        "tp_size": settings.tp,
        "context_length": settings.max_model_len,
        "skip_tokenizer_init": False,  # the engine decodes the text we score
        # one engine: full mode flushes, cached mode reuses
        "disable_radix_cache": not settings.prefix_caching,
        "grammar_backend": "xgrammar",
        # xgrammar's any_whitespace=False: random weights otherwise fill the budget with spaces
        "constrained_json_disable_any_whitespace": True,
        "sampling_backend": "pytorch",  # FlashInfer's sampler compiles kernels with nvcc on first use
        "enable_metrics": enable_metrics,  # puts the scheduler's per-request timestamps in meta_info
        "random_seed": 0,
        "log_level": "error",
    }
    if settings.dp > 1:
        kwargs["dp_size"] = settings.dp  # ServerArgs.dp_size: the data-parallel controller's replicas
    if settings.random_weights:
        kwargs["load_format"] = "dummy"
    options = SGLangOptions.of(settings.options)
    for key in ENGINE_OPTIONS:
        if getattr(options, key) is not None:
            kwargs[key] = getattr(options, key)
    return kwargs


def build_sampling_params(request: Request) -> dict[str, Any]:
    """The ``sampling_params`` dict of one ``generate`` call."""
    params: dict[str, Any] = {
        "max_new_tokens": request.max_new_tokens,
        "temperature": request.temperature,
        "top_p": request.top_p,
        "ignore_eos": request.ignore_eos,
    }
    if request.json_schema is not None:
        params["json_schema"] = json.dumps(request.json_schema)
    if request.seed is not None:
        params["sampling_seed"] = request.seed
    return params


def logprob_kwargs(request: Request) -> dict[str, Any]:
    """Step-0 candidates and per-step top-k (greedy agreement): output logprobs only
    (``logprob_start_len=-1``). A start >= 0 would also cap the radix-cache match at that position
    (``Req._compute_max_prefix_len``)."""
    k = max(request.top_logprobs, request.step_logprobs)
    if k <= 0:
        return {}
    return {"return_logprob": True, "top_logprobs_num": k, "logprob_start_len": -1}


# --- effective configuration ------------------------------------------------------------------
def plain(value: Any) -> Any:
    """A JSON-friendly copy of a config value (dataclasses, enums, msgspec structs...)."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, enum.Enum):
        return plain(value.value)
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [plain(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name, None)) for f in dataclasses.fields(value)}
    fields = getattr(type(value), "__struct_fields__", None)  # msgspec.Struct
    if fields:
        return {name: plain(getattr(value, name, None)) for name in fields}
    return str(value)


def effective_config(sources: list[Any]) -> dict[str, Any]:
    """The first value found for each of :data:`EFFECTIVE_KEYS` in ``sources`` (dicts or objects,
    best first: the scheduler's resolved config, the server info, ``engine.server_args``)."""
    out: dict[str, Any] = {}
    for key in EFFECTIVE_KEYS:
        for source in sources:
            if isinstance(source, dict):
                if key in source:
                    out[key] = plain(source[key])
                    break
            elif source is not None and hasattr(source, key):
                out[key] = plain(getattr(source, key))
                break
    graphs = out.get("cuda_graph_config")
    if isinstance(graphs, dict):  # per phase: backend and max batch, without the 36-58 captured sizes
        out["cuda_graph_config"] = {
            phase: {k: v for k, v in cfg.items() if k != "bs"} if isinstance(cfg, dict) else cfg
            for phase, cfg in graphs.items()
        }
    return out


def grammar_enabled(effective: dict[str, Any]) -> bool:
    """False only when the engine says it fell back to ``grammar_backend="none"`` (xgrammar refused
    the tokenizer: ``base_grammar_backend.py`` overrides the resolved config); unknown counts as on."""
    return effective.get("grammar_backend") != "none"
