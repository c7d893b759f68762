"""Prefix stability, the seed's Rule 1 as a lint: does every conversation turn's prompt extend the previous
one?

A prefix cache can only reuse what the new prompt shares, token for token, with what it has
seen. For every conversation workload this renders the turns with the same functions the plan
uses (``conversation.render_turns``, ``Renderer.prefix_break``) and classifies each break:

- *expected*: the break lies in the previous prompt's generation prompt (what the template
  appends after the last message, such as Qwen3's empty ``<think>`` block, which the history
  rewrites): a few tokens per turn, nothing the workload can change;
- *real*: the break lies inside a message (a timestamp at the top of the system prompt, a
  reordered tool list): everything after it is recomputed on every turn.

``python compare.py --lint-only --workload-file my.yaml`` runs only this (tokenizer only):
exit 0 when every conversation is stable apart from expected rewrites, 1 when one breaks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from llm_call_anatomy.contract.chat import Renderer, common_prefix_len
from llm_call_anatomy.workloads.conversation.spec import ConversationSpec, render_turns, turn_messages
from llm_call_anatomy.workloads.spec import WorkloadSpec


@dataclass
class Finding:
    workload: str
    turn: int  # 1-based: this turn's prompt does not extend turn - 1's
    origin: str | None  # FILE:LINE of the turn (or of its transcript)
    position: int  # first token where the prompts differ
    previous_prompt_tokens: int
    tokens_lost: int  # tokens of the previous prompt a prefix cache cannot reuse
    context_start: int
    previous: list[str]  # token texts from context_start in the previous prompt
    current: list[str]  # ... and in this one
    expected: bool  # inside the previous prompt's generation prompt (template rewrite)
    where: str  # "the generation prompt" or "message 1 (system)"


def _rendered_len(
    renderer: Renderer, messages: list[dict[str, Any]], tools: Any, ids: list[int]
) -> int | None:
    """How many leading tokens of ``ids`` the messages account for, without a generation prompt."""
    try:
        text = renderer.chat_text(messages, tools, generation_prompt=False)
    except Exception:  # noqa: BLE001 - some templates refuse a partial conversation; then we cannot say
        return None
    return common_prefix_len(renderer.text_ids(text), ids)


def _message_at(
    renderer: Renderer, messages: list[dict[str, Any]], tools: Any, ids: list[int], position: int
) -> str:
    for k in range(1, len(messages) + 1):
        n = _rendered_len(renderer, messages[:k], tools, ids)
        if n is not None and n > position:
            return f"message {k} ({messages[k - 1]['role']})"
    return "the end of the previous prompt"


def check(spec: ConversationSpec, renderer: Renderer) -> list[Finding]:
    """Every turn whose prompt does not extend the previous turn's, classified."""
    requests = turn_messages(spec)
    prompts = render_turns(spec, renderer)
    origins = spec._origins
    found = []
    for i in range(1, len(prompts)):
        br = renderer.prefix_break(prompts[i - 1], prompts[i])
        if br is None:
            continue
        start = _rendered_len(renderer, requests[i - 1], spec.tools, prompts[i - 1])
        expected = start is not None and br["position"] >= start
        where = (
            "the generation prompt"
            if expected
            else _message_at(renderer, requests[i - 1], spec.tools, prompts[i - 1], br["position"])
        )
        found.append(
            Finding(
                workload=spec.name,
                turn=i + 1,
                origin=origins[min(i, len(origins) - 1)] if origins else None,
                position=br["position"],
                previous_prompt_tokens=br["previous_prompt_tokens"],
                tokens_lost=br["tokens_lost"],
                context_start=br["context_start"],
                previous=br["previous"],
                current=br["current"],
                expected=expected,
                where=where,
            )
        )
    return found


def check_all(specs: list[WorkloadSpec], renderer: Renderer) -> dict[str, list[Finding]]:
    return {s.name: check(s, renderer) for s in specs if isinstance(s, ConversationSpec)}


# --- text -------------------------------------------------------------------------------------
def _tokens(texts: list[str]) -> str:
    return " ".join(repr(t) for t in texts) or "(end of prompt)"


def describe(name: str, turns: int, findings: list[Finding]) -> list[str]:
    """A few lines for one conversation: stable, stable apart from the template, or where it breaks."""
    real = [f for f in findings if not f.expected]
    if not findings:
        return [f"{name}: {turns} turns, every prompt extends the previous one"]
    if not real:
        lost = sorted({f.tokens_lost for f in findings})
        span = str(lost[0]) if len(lost) == 1 else f"{lost[0]}-{lost[-1]}"
        return [
            f"{name}: {turns} turns, stable: {len(findings)} turn(s) lose {span} token(s) at the end of the"
            " previous prompt, where the chat template rewrites its generation prompt (expected, e.g. Qwen3's"
            " empty think block: info only)"
        ]
    f = real[0]
    cut = f.position - f.context_start
    lines = [
        f"{name}: BREAK at turn {f.turn}"
        + (f" ({f.origin})" if f.origin else "")
        + f": its prompt does not extend turn {f.turn - 1}'s at token {f.position}"
        f" of {f.previous_prompt_tokens}, in {f.where}; {f.tokens_lost} tokens cannot be reused",
        f"    shared:    ... {_tokens(f.previous[:cut])}",
        f"    turn {f.turn - 1}:    {_tokens(f.previous[cut:])} ...",
        f"    turn {f.turn}:    {_tokens(f.current[cut:])} ...",
    ]
    if len(real) > 1:
        lines.append(f"    also at turns {', '.join(str(x.turn) for x in real[1:])}")
    return lines


def report(specs: list[WorkloadSpec], found: dict[str, list[Finding]]) -> tuple[list[str], int]:
    """The lint's lines for ``check_all``'s findings, and its exit code (0 stable, 1 a real break)."""
    turns = {s.name: len(turn_messages(s)) for s in specs if isinstance(s, ConversationSpec)}
    if not found:
        return ["prefix stability: no conversation workload to check"], 0
    lines = ["prefix stability (Rule 1: each turn's prompt must extend the previous turn's):"]
    for name, findings in found.items():
        lines += ["  " + line for line in describe(name, turns[name], findings)]
    broken = [n for n, fs in found.items() if any(not f.expected for f in fs)]
    lines.append(
        f"{len(found)} conversation(s) checked, {len(broken)} with a real break"
        + (f": {', '.join(broken)}" if broken else "")
    )
    return lines, 1 if broken else 0
