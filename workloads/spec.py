"""The workload file format: pydantic models of the workload kinds.

A workload file is YAML with a top-level ``workloads:`` list; each entry has a ``name`` and a
``kind`` (one of ``workloads.kinds.REGISTRY``: each kind's module registers its spec; the four
original kinds' specs live here, newer kinds keep theirs in their own module). The built-in workloads are files
in this format (``workloads/builtin/``), so user files and built-ins take one code path. The
models check everything that can be checked without reading another file; ``workloads.loader``
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
    PrivateAttr,
    ValidationError,
    field_validator,
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
    return len(m.content or "") + sum(len(c.function.arguments if isinstance(c.function.arguments, str)
                                          else json.dumps(c.function.arguments)) for c in calls)


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
            raise mistake(f"{chars:,} characters: a message may hold at most {MAX_MESSAGE_CHARS:,} (about 250k tokens, "
                          "beyond any context here; tokenizing more takes gigabytes)", ["content"])
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
        raise mistake(f"{total:,} characters in all: a session may hold at most {MAX_SESSION_CHARS:,} (its last prompt "
                      "is all of it, tokenized at once)")
    for i, m in enumerate(messages):
        prev = messages[i - 1] if i else None
        if m.role == "system" and i:
            raise mistake("a system message may only come first", [i, "role"])
        if prev is None or prev.role == "system":
            if m.role != "system" and m.role != "user":
                raise mistake(f"must start with a user message (after an optional system message), not {m.role}", [i, "role"])
        elif m.role == "assistant" and prev.role not in ("user", "tool"):
            raise mistake("an assistant message must follow a user or tool message", [i, "role"])
        elif m.role == "tool" and not (prev.role == "tool" or (prev.role == "assistant" and prev.tool_calls)):
            raise mistake("a tool message must follow an assistant message with tool_calls", [i, "role"])
    return messages


Messages = Annotated[list[Message], Field(min_length=1), AfterValidator(check_order)]


# --- conversation -----------------------------------------------------------------------
class Turn(_Strict):
    user: str
    assistant: str = Field(description="the fixed reply written into the history for later turns")
    system: str | None = Field(None, description="the system prompt from this turn on (an agent that re-renders it)")


class ToolFunction(BaseModel):
    name: str = Field(min_length=1)
    description: str | None = None
    parameters: Annotated[dict[str, Any], AfterValidator(check_json_schema)] | None = None


class Tool(BaseModel):
    type: Literal["function"]
    function: ToolFunction


class TranscriptSource(_Strict):
    path: str = Field(min_length=1, description="JSONL, one messages list per line; relative to the workload file")
    first: int | None = Field(None, ge=1, description="replay the first K transcripts (default: all)")


class ConversationSpec(_Strict):
    name: str = Field(min_length=1)
    kind: Literal["conversation"]
    system: str | None = None
    tools: list[dict[str, Any]] | None = None
    max_new_tokens: int = Field(4, ge=1)
    turns: list[Turn] | None = Field(None, min_length=1)
    messages: Messages | None = None
    transcripts: TranscriptSource | None = None
    _origins: list[str] = PrivateAttr(default_factory=list)  # FILE:LINE of each turn (or of the transcript)

    @field_validator("tools")
    @classmethod
    def _tools(cls, v: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
        for i, tool in enumerate(v or []):  # checked as OpenAI tools, passed on exactly as written
            try:
                Tool.model_validate(tool)
            except ValidationError as exc:
                first = exc.errors()[0]
                at = [i, *error_loc(first)]
                raise mistake(f"not an OpenAI tool definition: {first['msg']}", at) from exc
        return v

    @model_validator(mode="after")
    def _one_source(self) -> ConversationSpec:
        given = [k for k in ("turns", "messages", "transcripts") if getattr(self, k) is not None]
        if len(given) != 1:
            what = "none given" if not given else f"{' and '.join(given)} given"
            raise mistake(f"a conversation needs exactly one of turns, messages, transcripts ({what})")
        return self


# --- sweep ------------------------------------------------------------------------------
class SweepSpec(_Strict):
    name: str = Field(min_length=1)
    kind: Literal["sweep"]
    lengths: list[Annotated[int, Field(ge=1)]] = Field(min_length=1)
    decode_tokens: int = Field(64, ge=2)
    warmup: int = Field(1, ge=0)
    filler: str | None = Field(None, min_length=1)
    filler_file: str | None = Field(None, min_length=1, description="text file, relative to the workload file")

    @model_validator(mode="after")
    def _one_filler(self) -> SweepSpec:
        if (self.filler is None) == (self.filler_file is None):
            raise mistake("a sweep needs exactly one of filler, filler_file")
        no_repeats(self.lengths, "lengths")
        return self


# --- json -------------------------------------------------------------------------------
class JsonMode(_Strict):
    name: str = Field(min_length=1)
    prompt: str
    grammar: bool = False

    @field_validator("prompt")
    @classmethod
    def _has_input(cls, v: str) -> str:
        if "{input}" not in v:
            raise ValueError("prompt must contain {input}")
        return v


class JsonCase(_Strict):
    input: str
    expected: dict[str, Any] | None = None


class JsonSpec(_Strict):
    name: str = Field(min_length=1)
    kind: Literal["json"]
    max_new_tokens: int = Field(64, ge=1)
    top_p: float = Field(0.95, gt=0, le=1)
    temperatures: list[Annotated[float, Field(ge=0)]] = Field(min_length=1)
    calls_per_temperature: int = Field(16, ge=1)
    top_logprobs: int = Field(10, ge=0)
    modes: list[JsonMode] = Field(min_length=1)
    json_schema: Annotated[dict[str, Any], AfterValidator(check_json_schema)] = Field(alias="schema")
    cases: list[JsonCase] = Field(min_length=1)

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    @model_validator(mode="after")
    def _no_repeats(self) -> JsonSpec:
        no_repeats(self.temperatures, "temperatures")
        no_repeats(self.modes, "modes", "name")
        return self

    @model_validator(mode="after")
    def _expected_fits_schema(self) -> JsonSpec:
        import jsonschema

        check = jsonschema.validators.validator_for(self.json_schema)(self.json_schema)
        for i, case in enumerate(self.cases):
            error = None if case.expected is None else jsonschema.exceptions.best_match(check.iter_errors(case.expected))
            if error is not None:
                reason = f"expected values do not validate against the schema: {error.message}"
                raise mistake(reason, ["cases", i, "expected", *error.path])
        return self


# --- template ---------------------------------------------------------------------------
class Question(_Strict):
    question: str
    answer: str


class TemplateFormat(_Strict):
    name: str = Field(min_length=1)
    text: str | None = Field(None, description="format string with {system} and {question}; none = chat template")

    @field_validator("text")
    @classmethod
    def _has_question(cls, v: str | None) -> str | None:
        if v is not None and "{question}" not in v:
            raise ValueError("text must contain {question}")
        return v


class TemplateSpec(_Strict):
    name: str = Field(min_length=1)
    kind: Literal["template"]
    max_new_tokens: int = Field(32, ge=1)
    system: str
    attention_probe: bool = True
    questions: list[Question] = Field(min_length=1)
    formats: list[TemplateFormat] = Field(min_length=1)

    @model_validator(mode="after")
    def _no_repeats(self) -> TemplateSpec:
        no_repeats(self.formats, "formats", "name")
        return self


# Any registered kind's spec (``workloads.kinds``: the file model is built from the registry).
WorkloadSpec = BaseModel
