"""Context length: every request's prompt plus its new tokens must fit, checked before anything runs.

The effective limit is ``--max-model-len`` (what vLLM and SGLang are started with, the size of
hf-graphs' static cache) and never more than the model's own positions
(``max_position_embeddings``). A request over it would otherwise be cut short silently (vLLM
decodes what fits), run past the model's positions (HF eager) or fail halfway through a run, so
``compare.py`` and ``--lint-only`` refuse it with one line naming the workload and case.
"""

from __future__ import annotations

import json
from pathlib import Path

from llm_call_anatomy.contract.plan import Plan


def model_positions(model_path: str) -> int | None:
    """The model's ``max_position_embeddings`` (also under ``text_config``), None when the config does not
    say."""
    path = Path(model_path) / "config.json"
    try:
        if path.is_file():
            config = json.loads(path.read_text())
        else:  # a hub id: transformers resolves (and caches) its config
            from transformers import AutoConfig

            config = AutoConfig.from_pretrained(model_path).to_dict()
    except Exception:  # noqa: BLE001 - an unreadable config leaves --max-model-len as the only limit
        return None
    for where in (config, config.get("text_config") or {}):
        value = where.get("max_position_embeddings")
        if isinstance(value, int) and value > 0:
            return value
    return None


def context_error(plan: Plan, max_model_len: int, positions: int | None) -> str | None:
    """One line about the requests that do not fit (the first named, the rest counted), or None."""
    limit = min(max_model_len, positions) if positions else max_model_len
    over = []
    for group in plan.groups:
        for step in group.steps:
            total = len(plan.prompts[step.prompt]) + step.max_new_tokens
            if total > limit:
                over.append((step, total))
    if not over:
        return None
    step, total = over[0]
    prompt = len(plan.prompts[step.prompt])
    whence = f"--max-model-len {max_model_len}" + (
        f"; the model has {positions} positions" if positions else ""
    )
    more = f" ({len(over) - 1} more requests too)" if len(over) > 1 else ""
    return (
        f"workload {step.workload!r} mode {step.mode} case {step.case}: {prompt} prompt tokens + "
        f"{step.max_new_tokens} new tokens = {total} exceed the context limit of {limit} ({whence}){more}"
    )
