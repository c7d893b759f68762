"""Transcript files: JSONL, one recorded conversation per line, as an OpenAI-style messages list.

A line is either the list itself or an object with a ``messages`` key (the OpenAI fine-tuning
format; its other keys are ignored: tool definitions come from the workload's ``tools``):

    [{"role": "system", "content": "..."}, {"role": "user", "content": "..."},
     {"role": "assistant", "content": null, "tool_calls": [{"type": "function", "function":
       {"name": "lookup_order", "arguments": "{\\"id\\": 7}"}}]},
     {"role": "tool", "tool_call_id": "1", "content": "{\\"status\\": \\"shipped\\"}"},
     {"role": "assistant", "content": "It shipped."}]

Each line is checked with the same pydantic model as inline ``messages`` (``spec.Messages``).
Blank lines are skipped; line numbers count them.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import TypeAdapter, ValidationError

from workloads.spec import Message, Messages, error_loc

MESSAGES: TypeAdapter[list[Message]] = TypeAdapter(Messages)


def _field(loc: tuple | list) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc)


def parse_line(text: str) -> list[Message]:
    """One transcript; ValueError with a short reason when the line is not a messages list."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON: {exc.msg} at column {exc.colno}") from exc
    if isinstance(value, dict) and "messages" in value:
        value = value["messages"]
    if not isinstance(value, list):
        raise ValueError(f"expected a list of messages or an object with 'messages', got {type(value).__name__}")
    try:
        return MESSAGES.validate_python(value)
    except ValidationError as exc:
        reasons = []
        for err in exc.errors(include_url=False):
            reasons.append(f"messages{_field(error_loc(err))}: {err['msg'].removeprefix('Value error, ')}")
        raise ValueError("; ".join(reasons)) from exc


def read(path: Path, first: int | None = None) -> tuple[list[tuple[int, list[Message]]], list[tuple[int, str]]]:
    """The first ``first`` transcripts (all when None) as (line, messages), and (line, mistake) pairs.

    OSError when the file cannot be read; ValueError when it holds no transcript at all.
    """
    found: list[tuple[int, list[Message]]] = []
    bad: list[tuple[int, str]] = []
    with path.open() as f:
        for n, text in enumerate(f, start=1):
            if first is not None and len(found) + len(bad) >= first:
                break
            if not text.strip():
                continue
            try:
                found.append((n, parse_line(text)))
            except ValueError as exc:
                bad.append((n, f"not a messages list ({exc})"))
    if not found and not bad:
        raise ValueError("the file holds no transcript")
    return found, bad
