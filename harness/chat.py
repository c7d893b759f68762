"""What env.json records about the run's tokenizer (the prompt renderer itself lives in ``contract.chat``:
every layer renders with it)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from llm_call_anatomy.contract.chat import (
    NoChatTemplate,
    Renderer,
)

__all__ = ["tokenizer_facts"]


def tokenizer_facts(renderer: Renderer, model_path: str, seed_prompt: list[dict[str, Any]]) -> dict[str, Any]:
    """What env.json says about the run's tokenizer: its class and size, where it came from (a built-in's
    ``TOKENIZER_SOURCE.json``), and the seed's template prompt in its tokens (count, added-token
    positions and the ids there)."""
    tok = renderer.tokenizer
    source_file = Path(model_path) / "TOKENIZER_SOURCE.json"
    try:
        source = json.loads(source_file.read_text()) if source_file.is_file() else None
    except (OSError, ValueError):
        source = None
    facts: dict[str, Any] = {"class": type(tok).__name__, "size": len(tok), "source": source}
    try:
        ids = renderer.chat_ids(list(seed_prompt))
    except (NoChatTemplate, ValueError, TypeError):  # a template that cannot render it: say nothing
        return facts
    added = set(getattr(tok, "added_tokens_decoder", {}) or {})
    positions = [i for i, t in enumerate(ids) if t in added]
    facts["seed_template_prompt"] = {
        "tokens": len(ids),
        "added_token_positions": positions,
        "added_token_ids": [ids[i] for i in positions],
    }
    return facts
