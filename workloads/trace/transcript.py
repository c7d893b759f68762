"""The trace kind's transcript form: a request log of chat messages, one request a line, each with its
session, for users who have their own logs (no token counts, no hash ids: the prompts are the messages
themselves).

    {"timestamp": 0, "session_id": "a", "messages": [{"role": "system", "content": "..."},
                                                     {"role": "user", "content": "Hi"}], "response": "Hello!"}
    {"timestamp": 9000, "session_id": "a", "messages": [{"role": "user", "content": "And then?"}],
     "output_length": 120}

- ``timestamp``: ms from the trace's start (or a date-time, counted from the first request's), as in the other
  forms; ``session_id`` (or ``session``): a string or a number.
- ``messages``: what the request adds to its session's history (a first request's system and user messages, a
  later one's next user or tool messages), or the whole conversation so far, as an OpenAI-style log keeps it:
  messages that begin with the session's history are taken whole.
- ``response`` (the answer as logged: it joins the session's history as the assistant's message before its
  next request) and/or ``output_length`` (tokens to ask; default: the response's length in the model's
  tokens). One of the two is needed.
- ``class`` (optional): the request's traffic class (``chat``, ``agent``, ...).

Each request's prompt is its session's history and its own messages, rendered with the model's chat template
(``workloads/trace/planner.py``); so a session's later request begins with its earlier one, and a prefix
cache sees the log's own reuse. A request that cannot be used (a field missing, messages out of order once
put after the history) is a mistake with its line; :func:`resolve` is the one place the history is built,
for a file's rows and for inline ``requests`` alike (it is idempotent: a resolved request's messages begin
with its history).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import Field, ValidationError, field_validator, model_validator

from llm_call_anatomy.workloads.spec import Message, _Strict, error_loc
from llm_call_anatomy.workloads.transcripts import MESSAGES

SESSION_KEYS = ("session_id", "session")
TIME_KEYS = ("timestamp", "time", "arrival_time")


class TranscriptRequest(_Strict):
    """One request of a transcript-form trace (``TraceSpec.requests``)."""

    timestamp: float = Field(ge=0, description="ms from the trace's start")
    session_id: str = Field(min_length=1)
    messages: list[Message] = Field(min_length=1)
    response: str | None = Field(None, description="the logged answer (joins the session's history)")
    output_length: int | None = Field(None, ge=1, description="tokens to ask (default: the response's)")
    traffic_class: str | None = Field(None, alias="class", min_length=1, description="chat, agent, ...")
    line: int | None = Field(None, description="in the trace file")

    model_config = {**_Strict.model_config, "populate_by_name": True}

    @field_validator("session_id", mode="before")
    @classmethod
    def _session(cls, v: Any) -> Any:
        return str(v) if isinstance(v, int) and not isinstance(v, bool) else v

    @model_validator(mode="after")
    def _length(self) -> TranscriptRequest:
        if self.response is None and self.output_length is None:
            raise ValueError("give the answer's length (output_length) or the answer itself (response)")
        return self

    def chat(self) -> list[dict[str, Any]]:
        return [m.chat() for m in self.messages]


def _time(value: Any) -> float:
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.strip()).timestamp() * 1e3
        except ValueError:
            raise ValueError(f"timestamp {value!r} is neither a number of ms nor a date-time") from None
    return value


def _reason(exc: ValidationError, prefix: str = "") -> str:
    parts = []
    for err in exc.errors(include_url=False):
        loc = (prefix + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error_loc(err))).lstrip(
            "."
        )
        parts.append(f"{loc + ': ' if loc else ''}{err['msg'].removeprefix('Value error, ')}")
    return "; ".join(parts)


def parse(obj: dict[str, Any], line: int) -> TranscriptRequest:
    """One line of the file as a request (its other keys ignored); ValueError with the reason."""
    got: dict[str, Any] = {"line": line, "messages": obj.get("messages")}
    for key in TIME_KEYS:
        if key in obj:
            got["timestamp"] = _time(obj[key])
            break
    else:
        raise ValueError("no timestamp (ms from the trace's start)")
    session = next((obj[k] for k in SESSION_KEYS if k in obj), None)
    if session is None:
        raise ValueError("no session_id (the session the request belongs to)")
    got["session_id"] = session
    for key in ("response", "output_length", "class"):
        if obj.get(key) is not None:
            got[key] = obj[key]
    try:
        return TranscriptRequest.model_validate(got)
    except ValidationError as exc:
        raise ValueError(_reason(exc)) from None


def resolve(requests: list[TranscriptRequest]) -> tuple[list[TranscriptRequest], list[tuple[int, str]]]:
    """Each request with its session's history put before its own messages (the whole prompt), in timestamp
    order; and the requests that cannot be used, as (index in ``requests``, reason)."""
    order = sorted(range(len(requests)), key=lambda i: (requests[i].timestamp, requests[i].line or i))
    history: dict[str, list[dict[str, Any]]] = {}
    out: dict[int, TranscriptRequest] = {}
    bad: list[tuple[int, str]] = []
    for i in order:
        r = requests[i]
        before = history.get(r.session_id, [])
        own = r.chat()
        whole = own if own[: len(before)] == before else [*before, *own]
        try:
            messages = MESSAGES.validate_python(whole)
        except ValidationError as exc:
            where = "after its session's history: " if len(whole) > len(own) else ""
            bad.append((i, where + _reason(exc, "messages")))
            continue
        out[i] = r.model_copy(update={"messages": messages})
        answer = [{"role": "assistant", "content": r.response}] if r.response is not None else []
        history[r.session_id] = [*whole, *answer]
    return [out[i] for i in order if i in out], bad
