"""Settings that differ between the columns a summary row compares, named before its ranking (issue 43).

A ranking between a float32 column and a bfloat16 one, a chat endpoint and a token-id one, or two KV pools
of different sizes compares the settings as much as the engines. For every summary row that compares two or
more backends, :func:`differing` reads each column's settings from env.json and names every one that differs:

- **dtype**: the engine's own word (``engine.dtype``), else the ``--dtype`` of the server command the harness
  launched, else the run's ``dtype`` where the backend applies it (``settings_not_applied`` says where not:
  a server someone else started keeps its own, not recorded);
- **endpoint**: how the requests reached the engine (``engine.endpoint``: chat, completions with token ids),
  or "in process" where there was no server;
- **KV pool**: the tokens the engine's KV pool holds, median over its starts (HF has no fixed pool); pools
  within :data:`KV_SAME` of each other are one setting (a started engine sizes its pool from the memory free
  at its start: two starts of one configuration differ by a fraction of a per cent, which decides nothing);
- **prefix caching** and **max model len**: the run's, where the backend applies them.

A setting not recorded for a column is not compared (unknown is not "different"); a row whose columns agree
on every recorded setting gets no note.
"""

from __future__ import annotations

import re
import statistics
from typing import Any

from llm_call_anatomy.reports import fmt
from llm_call_anatomy.reports.kvcache import kv_tokens
from llm_call_anatomy.reports.model import Report

LABELS = {
    "dtype": "dtype",
    "endpoint": "endpoint",
    "kv_pool": "KV pool",
    "prefix_caching": "prefix caching",
    "max_model_len": "max model len",
}


def _flag(command: str | None, flag: str) -> str | None:
    """The value of ``flag`` in a launched server's command line, None where it is not there."""
    m = re.search(rf"(?:^|\s){re.escape(flag)}[ =](\S+)", command or "")
    return m.group(1).strip("'\"") if m else None


KV_SAME = 0.05  # KV pools whose largest is within 5 % of the smallest are one setting


def _kv_tokens(report: Report, backend: str) -> float | None:
    pools = [t for t in (kv_tokens(s) for s in report.ds.start_envs(backend)) if t]
    return statistics.median(pools) if pools else None


def _kv_pool(report: Report, backend: str) -> str | None:
    tokens = _kv_tokens(report, backend)
    return f"{fmt.n(tokens)} tokens" if tokens else None


def _pools_differ(report: Report, backends: list[str]) -> bool:
    pools = [t for t in (_kv_tokens(report, b) for b in backends) if t]
    return len(pools) >= 2 and max(pools) > min(pools) * (1 + KV_SAME)


def settings_of(report: Report, backend: str) -> dict[str, str | None]:
    """One column's recorded settings, each as the page shows it (None: not recorded for this column)."""
    run = report.ds.run_env_of(backend)
    engine: dict[str, Any] = report.ds.env_of(backend).get("engine") or {}
    if not isinstance(engine, dict):
        engine = {}
    name = report.ds.sources.get(backend, (None, backend))[1]
    not_applied = (run.get("settings_not_applied") or {}).get(name) or {}
    command = engine.get("server_command")
    dtype = engine.get("dtype") or _flag(command, "--dtype")
    if dtype is None and "dtype" not in not_applied and (command or not engine.get("base_url")):
        dtype = run.get("dtype")  # in the harness's process, or a server it launched: the run's dtype
    caching = run.get("prefix_caching")
    max_len = _flag(command, "--max-model-len") or _flag(command, "--context-length")
    if max_len is None and "max_model_len" not in not_applied:
        max_len = (run.get("args") or {}).get("max_model_len")
    return {
        "dtype": str(dtype) if dtype else None,
        "endpoint": str(engine["endpoint"]) if engine.get("endpoint") else ("in process" if engine else None),
        "kv_pool": _kv_pool(report, backend),
        "prefix_caching": None
        if caching is None or "prefix_caching" in not_applied
        else ("on" if caching else "off"),
        "max_model_len": str(max_len) if max_len else None,
    }


def differing(report: Report, backends: list[str]) -> list[str]:
    """Each setting that differs between ``backends``, as ``dtype: hf float32 vs openai bfloat16``; empty
    where they agree on every setting recorded for two or more of them."""
    if len(backends) < 2:
        return []
    settings = {b: settings_of(report, b) for b in backends}
    out = []
    for key, label in LABELS.items():
        known = {b: s[key] for b, s in settings.items() if s[key] is not None}
        if len(known) >= 2 and len(set(known.values())) > 1:
            if key == "kv_pool" and not _pools_differ(report, list(known)):
                continue
            out.append(f"{label}: " + " vs ".join(f"{b} {v}" for b, v in known.items()))
    return out


def note(report: Report, backends: list[str]) -> str | None:
    """The caveat a ranking between ``backends`` carries before it; None where no setting differs."""
    diff = differing(report, backends)
    return "settings differ, so this compares them too: " + "; ".join(diff) if diff else None
