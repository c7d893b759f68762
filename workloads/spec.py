"""The workload file format's shared pieces: the base, error helpers and message models every kind's spec
uses.

A workload file is YAML with a top-level ``workloads:`` list; each entry has a ``name`` and a
``kind`` (one of ``workloads.kinds.REGISTRY``: each kind's room, ``workloads/<kind>/``, holds its
spec). This module holds what the specs share: the strict base, the error
helpers, messages and tool calls, turns, tools and transcript sources. The built-in workloads are files
in this format (each room's ``builtin.yaml``), so user files and built-ins take one code path. The
models check everything that can be checked without reading another file; ``workloads.reader``
reads the YAML with its line numbers, resolves the files a workload names (transcripts, a
filler text) and turns every validation error into ``FILE:LINE: field.path: message``.
A validator that knows a deeper position than its field puts it in the error's ``at`` context.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    model_validator,
)
from pydantic_core import PydanticCustomError

_TYPE_TAGS = {"str", "int", "float", "bool", "none"}  # pydantic's names of union members in an error's loc


def mistake(reason: str, at: Sequence[str | int] = ()) -> PydanticCustomError:
    """A validation error with a message and, optionally, a path below the failing field."""
    return PydanticCustomError("workload", "{reason}", {"reason": reason, "at": list(at)})


def error_loc(err: dict[str, Any]) -> list[str | int]:
    """A pydantic error's location, deepened by ``at`` and without union-member tags such as ``str``."""
    loc = [*err["loc"], *(err.get("ctx") or {}).get("at", [])]
    return [p for p in loc if not (isinstance(p, str) and (p in _TYPE_TAGS or "[" in p))]


def check_json_schema(schema: dict[str, Any]) -> dict[str, Any]:
    import jsonschema

    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise mistake(f"not a valid JSON Schema: {exc.message}", exc.path) from exc
    return schema


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


def no_repeats(values: Sequence[Any], field: str, attr: str | None = None) -> None:
    """A value listed twice (a length, a temperature, a mode's name) would give two records one key,
    and the second would replace the first: refuse it, pointing at the second."""
    seen: set[Any] = set()
    for i, item in enumerate(values):
        value = getattr(item, attr) if attr else item
        if value in seen:
            what = f"{value!r} is used twice" if attr else f"{value!r} is listed twice"
            raise mistake(what, [field, i, *([attr] if attr else [])])
        seen.add(value)


# --- messages (inline, or one transcript per line of a JSONL file) ------------------------
# Text is bounded before it is tokenized: a tokenizer needs some 150 bytes of memory per character (63 MB of
# one message took 9.7 GB and aborted), and a session's last prompt is all of it. A million characters are
# some 250k tokens, beyond any context this study runs; four million bound a whole session.
MAX_MESSAGE_CHARS = 1_000_000
MAX_SESSION_CHARS = 4_000_000


def message_chars(m: Message) -> int:
    """The characters of a message's text: its content and its tool calls' arguments."""
    calls = m.tool_calls or []
    return len(m.content or "") + sum(
        len(
            c.function.arguments
            if isinstance(c.function.arguments, str)
            else json.dumps(c.function.arguments)
        )
        for c in calls
    )


class FunctionCall(BaseModel):
    name: str = Field(min_length=1)
    arguments: str | dict[str, Any]


class ToolCall(BaseModel):
    id: str | None = None
    type: Literal["function"] = "function"
    function: FunctionCall


class Message(BaseModel):
    """One OpenAI-style chat message; keys the chat template does not use are ignored."""

    role: Literal["system", "user", "assistant", "tool"]
    content: str | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    name: str | None = None

    @model_validator(mode="after")
    def _content(self) -> Message:
        if self.tool_calls and self.role != "assistant":
            raise mistake("only an assistant message carries tool_calls", ["tool_calls"])
        if self.content is None and not (self.role == "assistant" and self.tool_calls):
            need = "content or tool_calls" if self.role == "assistant" else "content (a string)"
            raise mistake(f"a {self.role} message needs {need}", ["content"])
        chars = message_chars(self)
        if chars > MAX_MESSAGE_CHARS:
            raise mistake(
                f"{chars:,} characters: a message may hold at most {MAX_MESSAGE_CHARS:,} (about 250k tokens, "
                "beyond any context here; tokenizing more takes gigabytes)",
                ["content"],
            )
        return self

    def chat(self) -> dict[str, Any]:
        """The message as the chat template takes it."""
        out: dict[str, Any] = {"role": self.role, "content": self.content or ""}
        if self.tool_calls:
            out["tool_calls"] = [c.model_dump(exclude_none=True) for c in self.tool_calls]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        if self.name is not None:
            out["name"] = self.name
        return out


def check_order(messages: list[Message]) -> list[Message]:
    """System first (optional), then a user message; replies follow a user or tool message."""
    if not any(m.role == "user" for m in messages):
        raise mistake("has no user message")
    total = sum(message_chars(m) for m in messages)
    if total > MAX_SESSION_CHARS:
        raise mistake(
            f"{total:,} characters in all: a session may hold at most {MAX_SESSION_CHARS:,} (its last prompt "
            "is all of it, tokenized at once)"
        )
    for i, m in enumerate(messages):
        prev = messages[i - 1] if i else None
        if m.role == "system" and i:
            raise mistake("a system message may only come first", [i, "role"])
        if prev is None or prev.role == "system":
            if m.role != "system" and m.role != "user":
                raise mistake(
                    f"must start with a user message (after an optional system message), not {m.role}",
                    [i, "role"],
                )
        elif m.role == "assistant" and prev.role not in ("user", "tool"):
            raise mistake("an assistant message must follow a user or tool message", [i, "role"])
        elif m.role == "tool" and not (prev.role == "tool" or (prev.role == "assistant" and prev.tool_calls)):
            raise mistake("a tool message must follow an assistant message with tool_calls", [i, "role"])
    return messages


Messages = Annotated[list[Message], Field(min_length=1), AfterValidator(check_order)]


# --- conversation pieces (the conversation and load kinds share them) --------------------
class Turn(_Strict):
    user: str
    assistant: str = Field(description="the fixed reply written into the history for later turns")
    system: str | None = Field(
        None, description="the system prompt from this turn on (an agent that re-renders it)"
    )


class ToolFunction(BaseModel):
    name: str = Field(min_length=1)
    description: str | None = None
    parameters: Annotated[dict[str, Any], AfterValidator(check_json_schema)] | None = None


class Tool(BaseModel):
    type: Literal["function"]
    function: ToolFunction


class TranscriptSource(_Strict):
    path: str = Field(
        min_length=1, description="JSONL, one messages list per line; relative to the workload file"
    )
    first: int | None = Field(None, ge=1, description="replay the first K transcripts (default: all)")


# Any registered kind's spec (``workloads.kinds``: the file model is built from the registry).
WorkloadSpec = BaseModel
