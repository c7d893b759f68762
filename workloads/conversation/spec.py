"""Conversation workload: a multi-turn chat replayed with a full re-prefill and with prefix reuse.

Each turn's prompt is the whole history (fixed or recorded assistant replies, tool calls and
tool results) rendered by the chat template. The plan records, per turn, how many tokens it
shares with the previous turn's prompt (token by token) and where the prefix breaks: with a
Qwen3-style template the previous prompt ends in ``<think>\\n\\n</think>\\n\\n`` and the
history rewrites that turn without it (``workloads.conversation.lint`` tells this from a real break).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, PrivateAttr, ValidationError, field_validator, model_validator

from llm_call_anatomy.contract.chat import Renderer, common_prefix_len
from llm_call_anatomy.contract.plan import Group, Plan, Step
from llm_call_anatomy.workloads.plan import rotated
from llm_call_anatomy.workloads.spec import (
    Messages,
    Tool,
    TranscriptSource,
    Turn,
    _Strict,
    error_loc,
    mistake,
)
from llm_call_anatomy.workloads.transcripts import recorded_requests


# --- the file format -----------------------------------------------------------------
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


MODES = ("full", "cached")


def turn_messages(spec: ConversationSpec) -> list[list[dict[str, Any]]]:
    """The messages of every turn's request.

    Inline ``turns``: the history of fixed replies plus the turn's user message, under the
    system prompt in force at that turn (a turn's ``system`` replaces it from then on).
    ``messages`` (inline or one loaded transcript): a request before every assistant message,
    with the recorded messages before it as history, and one more at the end if the transcript
    ends with a user or tool message. The workload's ``system`` applies when the transcript has none.
    """
    if spec.turns is not None:
        system, history, requests = spec.system, [], []
        for turn in spec.turns:
            system = turn.system if turn.system is not None else system
            head = [{"role": "system", "content": system}] if system else []
            history = [*history, {"role": "user", "content": turn.user}]
            requests.append(head + history)
            history = [*history, {"role": "assistant", "content": turn.assistant}]
        return requests
    if spec.messages is None:
        raise ValueError(
            f"conversation {spec.name!r}: transcripts not loaded "
            "(read the file with workloads.read_workload_file)"
        )
    return recorded_requests(spec.messages, spec.system)


def render_turns(spec: ConversationSpec, renderer: Renderer) -> list[list[int]]:
    """The prompt of every turn as token ids."""
    return [renderer.chat_ids(messages, spec.tools) for messages in turn_messages(spec)]


def plan(spec: ConversationSpec, renderer: Renderer, out: Plan, repeats: int, start: int = 0) -> None:
    """Warm-ups of both modes first; then each repeat runs ``full`` and ``cached`` once, the order
    alternating from repeat to repeat. Every group starts from an empty cache."""
    prompts = render_turns(spec, renderer)
    keys = [out.add_prompt(p) for p in prompts]
    shared = [None] + [common_prefix_len(a, b) for a, b in zip(prompts, prompts[1:], strict=False)]
    breaks = [None] + [renderer.prefix_break(a, b) for a, b in zip(prompts, prompts[1:], strict=False)]

    def turn_steps(mode: str, rep: int) -> list[Step]:
        """One step per turn for ``mode`` and repeat ``rep`` (-1: a warm-up), all at T=0. Only ``cached``
        steps reuse the prefix and need the ``prefix_cache`` capability; every step carries the tokens its
        prompt shares with the previous turn's and where that prefix breaks."""
        return [
            Step(
                workload=spec.name,
                kind="conversation",
                mode=mode,
                case=f"turn={i + 1}",
                prompt=keys[i],
                max_new_tokens=spec.max_new_tokens,
                rep=rep,
                turn=i + 1,
                temperature=0.0,
                reuse_prefix=mode == "cached",
                shared_prefix_tokens=shared[i],
                prefix_break=breaks[i],
                needs=["prefix_cache"] if mode == "cached" else [],
            )
            for i in range(len(prompts))
        ]

    for mode in MODES:
        out.groups.append(
            Group(block=f"{spec.name}/{mode}", steps=turn_steps(mode, rep=-1), warmup=True, reset_cache=True)
        )
    for rep in range(repeats):
        for mode in rotated(MODES, rep + start):
            out.groups.append(
                Group(block=f"{spec.name}/{mode}", steps=turn_steps(mode, rep), reset_cache=True)
            )


def with_files(spec: ConversationSpec, loaded: Any, ctx: Any) -> list[ConversationSpec]:
    """One conversation per transcript read (``<name>/<k>``); each spec keeps ``FILE:LINE`` of its turns."""
    if spec.transcripts is not None:
        if loaded is None:  # the file could not be used: the reader has said why
            return [spec]
        ref = ctx.path.parent / spec.transcripts.path
        out = []
        for k, (line, messages) in enumerate(loaded, start=1):
            one = spec.model_copy(
                update={"name": f"{spec.name}/{k}", "messages": messages, "transcripts": None}
            )
            one._origins = [f"{ctx.shown(ref)}:{line}"]
            out.append(one)
        return out
    if spec.turns is not None:
        spec._origins = [ctx.origin(("turns", t)) for t in range(len(spec.turns))]
    else:
        spec._origins = [ctx.origin(("messages",))]
    return [spec]
