"""Reading one streamed completion: tick the token clock per chunk, collect ids, text, usage, top-k.

A chunk "carries tokens" when vLLM / SGLang send its ``token_ids`` (``return_token_ids``: a
chunk may hold several tokens when the server's frontend falls behind, so the clock ticks with
their number), or, from a generic server, when it has text (a chat chunk's ``delta.content``) (one token per
chunk assumed, and the output ids are the text tokenized again:
``extra.output_ids_from = "retokenized-text"``).
The usage chunk (``stream_options.include_usage``) gives ``prompt_tokens_details.cached_tokens``.
A stream that ends without a ``finish_reason`` was cut off (a server that died while answering,
whose connection close ends an HTTP/1.0 body as if it were whole): :class:`StreamCut`, not a short
answer. A stream that is not what the protocol says (a chunk without ``choices``, a line that is
not JSON) is :class:`MalformedStream`, named by its cause; the messages are module constants for
every client that reads these streams.
"""

from __future__ import annotations

import json
from typing import Any

from llm_call_anatomy.backends.base import TokenClock
from llm_call_anatomy.contract.adapter import RawOutput, TokenCandidate

# What a malformed stream is, in the words every client's error uses (the cause, not a library's internals)
CHUNK_WITHOUT_CHOICES = "a chunk without choices"
LINE_NOT_JSON = "a line that is not JSON"
NO_FINISH_REASON = "the stream ended without a finish reason"


class StreamCut(RuntimeError):
    """The stream ended before the server said the answer was finished."""


class MalformedStream(RuntimeError):
    """The server sent something the streaming protocol does not allow."""


def malformed(what: str, after_tokens: int, detail: str = "") -> MalformedStream:
    return MalformedStream(
        f"malformed stream: {what} after {after_tokens} token(s)" + (f" ({detail})" if detail else "")
    )


def read_stream(
    stream, clock: TokenClock, tokenizer, top_logprobs: int = 0, step_logprobs: int = 0
) -> RawOutput:
    reader = StreamReader(clock, tokenizer, top_logprobs, step_logprobs)
    try:
        with stream:
            for chunk in stream:
                reader.add(chunk)
    except json.JSONDecodeError as exc:  # the client parses each data: line as JSON
        raise malformed(LINE_NOT_JSON, reader.tokens(), f"{exc.msg} at column {exc.colno}") from exc
    # the answer assembled once the stream ended (docs/explanation/anatomy.md)
    with clock.span("response parse"):
        return reader.output()


async def read_stream_async(
    stream, clock: TokenClock, tokenizer, top_logprobs: int = 0, step_logprobs: int = 0
) -> RawOutput:
    """The same from ``AsyncOpenAI`` (many requests in flight: ``backends.load_loop``)."""
    reader = StreamReader(clock, tokenizer, top_logprobs, step_logprobs)
    try:
        async with stream:
            async for chunk in stream:
                reader.add(chunk)
    except json.JSONDecodeError as exc:
        raise malformed(LINE_NOT_JSON, reader.tokens(), f"{exc.msg} at column {exc.colno}") from exc
    # the answer assembled once the stream ended (docs/explanation/anatomy.md)
    with clock.span("response parse"):
        return reader.output()


class StreamReader:
    """One streamed completion, chunk by chunk: the clock ticks as chunks with tokens arrive."""

    def __init__(self, clock: TokenClock, tokenizer, top_logprobs: int = 0, step_logprobs: int = 0) -> None:
        self.clock, self.tokenizer, self.top_logprobs, self.step_logprobs = (
            clock,
            tokenizer,
            top_logprobs,
            step_logprobs,
        )
        self.ids: list[int] = []
        self.steps: list[list[list]] = []
        self.texts: list[str] = []
        self.server_ids = False
        self.prompt_used = self.finish = self.usage = self.top = None

    def tokens(self) -> int:
        """Tokens seen so far: the server's ids, or the chunks with text."""
        return len(self.ids) if self.server_ids else sum(1 for t in self.texts if t)

    def add(self, chunk) -> None:
        """Take one chunk of the ``openai`` client's stream: its tokens tick the clock; its text, ids, step-0
        candidates, per-step top-k, finish reason and usage are kept."""
        choices = getattr(chunk, "choices", None)
        if not isinstance(choices, list):
            raise malformed(CHUNK_WITHOUT_CHOICES, self.tokens())
        for choice in choices:
            new = getattr(choice, "token_ids", None)
            text = chunk_text(choice)
            n = len(new) if new is not None else (1 if text else 0)
            if n:
                self.clock.tick(n)
            if new is not None:
                self.server_ids = True
                self.ids.extend(int(i) for i in new)
            self.texts.append(text)
            if self.prompt_used is None and getattr(choice, "prompt_token_ids", None):
                self.prompt_used = [int(i) for i in choice.prompt_token_ids]
            if self.top_logprobs and self.top is None and n:
                self.top = candidates(choice.logprobs, self.top_logprobs, self.tokenizer)
            if self.step_logprobs and choice.logprobs is not None:
                self.steps += [
                    ranked(position or {}, self.step_logprobs, self.tokenizer)
                    for position in choice.logprobs.top_logprobs or []
                ]
            self.finish = choice.finish_reason or self.finish
        if chunk.usage is not None:
            self.usage = chunk.usage

    def output(self) -> RawOutput:
        """The finished stream as a RawOutput; a stream without a finish reason raises :class:`StreamCut`."""
        if self.finish is None:
            raise StreamCut(
                f"{NO_FINISH_REASON} after {self.tokens()} token(s) (the server stopped answering)"
            )
        text = "".join(self.texts)
        ids = self.ids
        said_prompt = getattr(self.usage, "prompt_tokens", None)
        extra: dict[str, Any] = {"server_prompt_tokens": said_prompt}
        reported = None
        if not self.server_ids:
            ids = self.tokenizer.encode(text, add_special_tokens=False)
            extra["output_ids_from"] = "retokenized-text"
            counted = getattr(self.usage, "completion_tokens", None)
            reported = (
                counted if isinstance(counted, int) else None
            )  # the server's count beats the re-tokenized text's
        details = getattr(self.usage, "prompt_tokens_details", None)
        return RawOutput(
            token_ids=ids,
            text=text,
            finish_reason=self.finish,
            cached_tokens=getattr(details, "cached_tokens", None),  # None: the server did not say
            prompt_ids_used=self.prompt_used,
            top_candidates=self.top,
            step_logprobs=self.steps or None,
            extra=extra,
            reported_output_tokens=reported,
            reported_prompt_tokens=said_prompt if isinstance(said_prompt, int) else None,
        )


def chunk_text(choice) -> str:
    """A completions chunk's ``text``, or a chat chunk's ``delta.content`` (``--endpoint chat``)."""
    text = getattr(choice, "text", None)
    if text is None:
        delta = getattr(choice, "delta", None)
        text = getattr(delta, "content", None) if delta is not None else None
    return text or ""


def candidates(logprobs, k: int, tokenizer) -> list[TokenCandidate] | None:
    """Step 0's top-k from ``logprobs.top_logprobs[0]`` ({token: logprob}); there are no logits over HTTP."""
    if logprobs is None or not logprobs.top_logprobs or not logprobs.top_logprobs[0]:
        return None
    ranked = sorted(logprobs.top_logprobs[0].items(), key=lambda kv: kv[1], reverse=True)[:k]
    out = []
    for key, logprob in ranked:
        token_id = _token_id(key, tokenizer)
        text = tokenizer.decode([token_id]) if token_id is not None else key
        out.append(TokenCandidate(token_id, text, float(logprob), None))  # type: ignore[arg-type]
    return out


def ranked(position: dict[str, float], k: int, tokenizer) -> list[list]:
    """One position's top-k as ``[token_id, logprob]``, best first (token_id None: a text that is not one
    token)."""
    best = sorted(position.items(), key=lambda kv: kv[1], reverse=True)[:k]
    return [[_token_id(key, tokenizer), float(logprob)] for key, logprob in best]


def _token_id(key: str, tokenizer) -> int | None:
    """vLLM keys are ``token_id:N`` (``return_tokens_as_token_ids``); others are the token's text."""
    if key.startswith("token_id:"):
        return int(key.split(":", 1)[1])
    ids = tokenizer.encode(key, add_special_tokens=False)
    return ids[0] if len(ids) == 1 else None  # None: the text does not name exactly one token
