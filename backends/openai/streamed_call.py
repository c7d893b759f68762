"""One streamed call through the ``openai`` client, bounded by ``--request-timeout``, a lost server named.

:class:`StreamedCalls` holds what an adapter's calls share (endpoint, tokenizer, timeout, server check).
Its ``call`` serves the batch-1 workloads: the client's timeout bounds the wait for the response and a
timer closes the stream at the deadline, so the timeout bounds the whole request (as under load,
``backends.load_loop``). Its ``call_async`` serves a load level driven from this process (a server that
takes text prompts only), in the level's event loop. Either way a connection lost before or during the
stream asks ``check_server`` (a launched server: did it exit, and where is its log) before the error
goes up. The caller builds the body (``bodies.py``, ``chat.py``) and says how the prompt went out.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
import openai

from llm_call_anatomy.backends.base import TokenClock
from llm_call_anatomy.backends.load_loop import timeout_message
from llm_call_anatomy.backends.openai.stream import StreamCut, read_stream, read_stream_async
from llm_call_anatomy.contract.adapter import RawOutput, Request

# What a request sees when its server went away: a refused, reset or broken connection, before or in
# the middle of the stream (the client wraps it as APIConnectionError; httpx's own error where a
# client version does not), or a stream that ended early (StreamCut). A launched server then says
# whether it exited (``check_server``), and the error names its log.
SERVER_GONE = (openai.APIConnectionError, openai.InternalServerError, httpx.TransportError, StreamCut)


class RequestTimeout(RuntimeError):
    """A request was not answered whole within ``--request-timeout``."""


def create(client: Any, body: dict[str, Any], chat: bool) -> Any:
    """The streamed request on its endpoint (``client`` sync or async: the call is the same)."""
    return (client.chat.completions if chat else client.completions).create(**body)


@dataclass(frozen=True)
class StreamedCalls:
    """What every streamed call of one adapter shares: the endpoint (``chat``: chat completions, else
    completions), the tokenizer that reads the chunks, ``--request-timeout`` and the server check a lost
    connection asks (``check_server``). :meth:`call` and :meth:`call_async` send one body each."""

    chat: bool
    tokenizer: Any
    timeout_s: float
    check_server: Callable[..., None]

    def call(
        self, client: openai.OpenAI, body: dict[str, Any], request: Request, clock: TokenClock
    ) -> RawOutput:
        """``body`` streamed, the clock ticking as tokens arrive; :class:`RequestTimeout` past the timeout."""
        deadline = time.perf_counter() + self.timeout_s
        try:
            stream = create(client, body, self.chat)
            timer = threading.Timer(max(0.0, deadline - time.perf_counter()), stream.close)
            timer.start()
            try:
                return read_stream(stream, clock, self.tokenizer, request.top_logprobs, request.step_logprobs)
            finally:
                timer.cancel()
        except Exception as exc:
            if isinstance(exc, openai.APITimeoutError) or time.perf_counter() >= deadline:
                raise RequestTimeout(timeout_message(self.timeout_s)) from exc
            if isinstance(exc, SERVER_GONE):
                self.check_server(wait_s=3.0)
            raise

    async def call_async(
        self, client: openai.AsyncOpenAI, body: dict[str, Any], request: Request, clock: TokenClock
    ) -> RawOutput:
        """:meth:`call` in an event loop, among other requests in flight (the client's timeout bounds it)."""
        try:
            stream = await create(client, body, self.chat)
            return await read_stream_async(stream, clock, self.tokenizer, request.top_logprobs)
        except openai.APITimeoutError as exc:
            raise RequestTimeout(timeout_message(self.timeout_s)) from exc
        except SERVER_GONE:
            self.check_server(wait_s=3.0)
            raise
