"""A backend column's name: a registered backend, or ``base@variant`` (a named configuration of it, issue 41).

    split_column("vllm-server@fp8")   # ("vllm-server", "fp8")
    base_of("vllm-server@fp8")        # "vllm-server": what the registry, APPLIES and --python are keyed by
    reported_settings(engine, given)  # each given setting as the engine's env.json block reports it

The column name is the one name of a column everywhere a run writes one (``env/<column>.json``, the
records' ``backend`` field, the page's columns); every look-up of what a backend *is* (its adapter, the
settings it applies, its interpreter) goes through :func:`base_of`, so a variant is a column like any other.
Bottom floor: the harness (checks, the child) and the report (env.json, ``--merge-starts``) both read it.
"""

from __future__ import annotations

import re
from typing import Any

SEP = "@"
# a variant's name: letters, digits and . _ = + - (a sweep's are KEY=VALUE: max_num_seqs=128)
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._=+-]*$")

# the names an engine reports a setting under where they differ from the argument's (vLLM's cache config
# says cache_dtype for kv_cache_dtype; SGLang's server info says max_running_requests)
ALIASES: dict[str, tuple[str, ...]] = {
    "kv_cache_dtype": ("kv_cache_dtype", "cache_dtype"),
    "max_num_seqs": ("max_num_seqs",),
    "max_running_requests": ("max_running_requests",),
    "attn": ("attn", "attn_implementation"),
}


def split_column(name: str) -> tuple[str, str | None]:
    """``"base@variant"`` -> ``("base", "variant")``; a plain backend name -> ``(name, None)``."""
    base, sep, variant = name.partition(SEP)
    return (base, variant) if sep else (name, None)


def base_of(name: str) -> str:
    """The registered backend behind a column name."""
    return split_column(name)[0]


def column(base: str, variant: str | None) -> str:
    return f"{base}{SEP}{variant}" if variant else base


# the parts of an engine block that echo what was asked (vLLM's engine_kwargs, hf-cb's LCA_HF_CB overrides):
# not the engine's report of what it ran with
ECHOES = ("kwargs", "overrides", "engine_args", "asked", "given")


def _found(block: Any, keys: tuple[str, ...], depth: int = 0) -> list[Any]:
    """Every value under one of ``keys`` anywhere in a nested mapping (the engine block of env.json), echoes
    of what was asked left out."""
    if depth > 6 or not isinstance(block, dict):
        return []
    out = [block[k] for k in keys if k in block]
    for key, value in block.items():
        if isinstance(value, dict) and not any(e in str(key) for e in ECHOES):
            out += _found(value, keys, depth + 1)
    return out


def same(given: Any, reported: Any) -> bool:
    """A given setting and the engine's report of it agree (numbers by value, text case-insensitively)."""
    if isinstance(given, bool) or isinstance(reported, bool):
        return given == reported
    if isinstance(given, (int, float)) and isinstance(reported, (int, float)):
        return float(given) == float(reported)
    return str(given).lower() == str(reported).lower()


def reported_settings(engine: dict[str, Any] | None, given: dict[str, Any]) -> dict[str, Any]:
    """Each given setting as the engine reports it in its env.json block (its effective configuration:
    ``scheduler``, ``cache``, ``continuous_batching``...): the value it reports (the given one where any of
    several places agrees with it), or None where it reports none. Plain data: no engine is asked."""
    out: dict[str, Any] = {}
    for key, value in given.items():
        values = [v for v in _found(engine or {}, ALIASES.get(key, (key,))) if not isinstance(v, dict)]
        agreeing = [v for v in values if same(value, v)]
        out[key] = agreeing[0] if agreeing else (values[0] if values else None)
    return out


def ignored(given: dict[str, Any], reported: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """The settings the engine reports otherwise than given: {key: (given, reported)}."""
    shown = {k: v for k, v in reported.items() if v is not None}
    return {k: (v, shown[k]) for k, v in given.items() if k in shown and not same(v, shown[k])}
