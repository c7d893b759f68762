"""The order the planners lay a run plan out in, and their per-call seeds (the plan's types,
:class:`Step`, :class:`Group` and :class:`Plan`, live in ``contract.plan``).

Order (:data:`ORDER_DESCRIPTION`): each workload lists its warm-ups first, then its repeats; within
a repeat every variant (sweep length N, conversation mode, JSON mode, template format) runs once,
in an order rotated by one place from repeat to repeat (:func:`rotated`), so drift during a run
shows up as spread across repeats rather than as an effect of N or of the mode. With ``--starts
K``, every step carries the engine start (a fresh child process) that runs it (``Kind.repeated``).
"""

from __future__ import annotations

import hashlib

from llm_call_anatomy.contract.chat import Renderer

__all__ = ["ORDER_DESCRIPTION", "call_seed", "filler_ids", "rotated"]

ORDER_DESCRIPTION = (
    "within a repeat each variant (sweep length, conversation mode, JSON mode, template format) runs once, "
    "in an order rotated by one place from repeat to repeat (and from engine start to engine start), "
    "so drift during a run shows as spread, not as an effect of N or of the mode"
)


def rotated(items: list | tuple, turn: int) -> list:
    """``items`` rotated left by ``turn`` places: repeat r runs the variants in the order r, r+1, ..."""
    items = list(items)
    if not items:
        return items
    k = turn % len(items)
    return items[k:] + items[:k]


def call_seed(*parts: object) -> int:
    """A stable per-call sampling seed (the same call gets the same seed on every backend)."""
    return int(hashlib.sha1(repr(parts).encode()).hexdigest()[:8], 16)


# --- prompts of an exact length, shared by the sweep and the load's fixed shape ---
def filler_ids(text: str, renderer: Renderer, length: int) -> list[int]:
    """At least ``length`` token ids of ``text`` repeated."""
    ids = renderer.text_ids(text)
    chunk = renderer.text_ids("\n" + text)
    while len(ids) < length:
        ids += chunk
    return ids
