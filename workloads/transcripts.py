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

import itertools
import json
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from llm_call_anatomy.workloads.spec import Message, Messages, error_loc

MESSAGES: TypeAdapter[list[Message]] = TypeAdapter(Messages)
# A workload file may name any path (/dev/zero, a log that never ends): what is read from a file it
# names is capped, so a wrong path is a clear mistake instead of a run that never starts.
MAX_FILE_BYTES = 64 * 2**20


def too_large() -> ValueError:
    return ValueError(f"larger than {MAX_FILE_BYTES // 2**20} MiB (a workload names text files, not this)")


def read_capped(path: Path) -> bytes:
    """The file's bytes; ValueError when it holds more than MAX_FILE_BYTES (it is not read further)."""
    with path.open("rb") as f:
        data = f.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise too_large()
    return data


def _field(loc: tuple | list) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc)


def parse_line(text: str) -> list[Message]:
    """One transcript; ValueError with a short reason when the line is not a messages list."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON: {exc.msg} (column {exc.colno})") from exc
    if isinstance(value, dict) and "messages" in value:
        value = value["messages"]
    if not isinstance(value, list):
        raise ValueError(
            f"expected a list of messages or an object with 'messages', got {type(value).__name__}"
        )
    try:
        return MESSAGES.validate_python(value)
    except ValidationError as exc:
        reasons = []
        for err in exc.errors(include_url=False):
            reasons.append(f"messages{_field(error_loc(err))}: {err['msg'].removeprefix('Value error, ')}")
        raise ValueError("; ".join(reasons)) from exc


def read(
    path: Path, first: int | None = None
) -> tuple[list[tuple[int, list[Message]]], list[tuple[int, str]]]:
    """The first ``first`` transcripts (all when None) as (line, messages), and (line, mistake) pairs.

    OSError when the file cannot be read; ValueError when it holds no transcript at all.
    """
    found: list[tuple[int, list[Message]]] = []
    bad: list[tuple[int, str]] = []
    budget = MAX_FILE_BYTES
    with path.open(encoding="utf-8") as f:
        for n in itertools.count(1):
            if first is not None and len(found) + len(bad) >= first:
                break
            text = f.readline(budget + 1)
            if not text:
                break
            budget -= len(text)
            if budget < 0:
                raise too_large()
            if not text.strip():
                continue
            try:
                found.append((n, parse_line(text)))
            except ValueError as exc:
                bad.append((n, f"not a messages list ({exc})"))
    if not found and not bad:
        raise ValueError("the file holds no transcript")
    return found, bad


def recorded_requests(messages: list[Message], system: str | None = None) -> list[list[dict[str, Any]]]:
    """A recorded conversation's requests: the messages before every assistant message, and all of
    them if it ends with a user or tool message; ``system`` goes first where the record has none."""
    msgs = [m.chat() for m in messages]
    if system and msgs[0]["role"] != "system":
        msgs = [{"role": "system", "content": system}, *msgs]
    requests = [msgs[:j] for j, m in enumerate(msgs) if m["role"] == "assistant"]
    return requests + ([msgs] if msgs[-1]["role"] != "assistant" else [])
