"""What the SGLang engine says of itself, for env.json: its effective configuration read back from the
running engine (:func:`read_config`: the scheduler's resolved settings first, then what was constructed)
and the adapter's facts around it (:func:`describe`: how full and cached modes reset, how requests are
timed and sent, the warm-up and the flushes). Pure reads of the adapter's and the engine's objects, without
importing SGLang; the adapter (``backends.sglang.backend``) calls them.
"""

from __future__ import annotations

from typing import Any

from llm_call_anatomy.backends.parallel import replica_record
from llm_call_anatomy.backends.sglang.config import effective_config, plain


def read_config(engine: Any, notes: list[str]) -> tuple[dict[str, Any], str]:
    """Effective settings: the scheduler's resolved config first, then what we constructed."""
    sources: list[Any] = []
    source = "engine.server_args"
    try:
        info = engine.get_server_info()
        states = info.get("internal_states") if isinstance(info, dict) else None
        if isinstance(states, list) and states and isinstance(states[0], dict):
            sources.append(states[0])
            source = "get_server_info() internal_states"
        sources.append(info)
    except Exception as exc:  # noqa: BLE001 - a read-back failure must not stop the run
        notes.append(f"get_server_info() failed: {type(exc).__name__}: {exc}")
    sources.append(getattr(engine, "server_args", None))
    return effective_config(sources), source


def describe(backend: Any) -> dict[str, Any]:
    """env.json's engine facts: the effective configuration read back from the engine, how full and cached
    modes reset, how requests are timed and sent, the warm-up and the flushes."""
    e = backend.effective
    ws_key = "constrained_json_disable_any_whitespace"
    return {
        "sglang": backend.version(),
        **e,
        "radix_cache": not e.get("disable_radix_cache", backend.kwargs["disable_radix_cache"]),
        # the same, under the name every engine's facts use (the page pairs caching on and off by it)
        "prefix_caching": not e.get("disable_radix_cache", backend.kwargs["disable_radix_cache"]),
        "json_whitespace": f"{ws_key}={e.get(ws_key, backend.kwargs[ws_key])}",
        "full_mode": "flush_cache() before every request",
        "cached_mode": "flush_cache() once per conversation repeat, then radix-cache reuse",
        "grammar_after_flush": "flush_cache() drops compiled grammars: the next constrained request "
        "compiles its schema again, inside its TTFT",
        "timing": "in-process-stream: stream=True, the clock ticks per chunk received; "
        + (
            "engine_ttft_ms = meta_info prefill_finished_time - request_received_ts, engine decode to "
            "request_finished_ts"
            if backend.use_metrics
            else "no engine figures (enable_metrics off)"
        ),
        "sampling_seed": "sent; SGLang applies it only with enable_deterministic_inference",
        "request_path": (
            "tokenizer_manager.generate_request(GenerateReqInput(return_prompt_token_ids=True))"
            if backend.direct
            else "Engine.generate"
        ),
        "config_source": backend.config_source,
        "warmup_s": backend.warmup_s,
        "engine_kwargs": plain(backend.kwargs),
        "flushes": backend.flushes,
        "flush_refusals": backend.flush_refusals,
        "notes": backend.notes,
        "parallel": replica_record(backend.settings, backend.name, e.get("load_balance_method")),
    }
