"""The load path's HTTP client: one streamed completion over aiohttp, its SSE chunks parsed as plain dicts.

Under load the client must never be what is measured. The ``openai`` package costs, per request,
a ``maybe_transform`` walk over every prompt id (~9 ms for 1,024 ids on a small CPU) and, per
chunk, a pydantic model; the batch-1 workloads keep it (``backend.py``), the load loop streams
through :class:`LeanClient` instead:

- **aiohttp**, not httpx: its HTTP parser and stream reader are C-accelerated, and it is what
  ``vllm bench serve`` and SGLang's ``bench_serving`` drive servers with, so the reference clients
  of ``benchmarks/serving_proof.py`` and this one pay the same transport (httpx's async path is
  pure Python over h11 and anyio). It is already a dependency of vLLM and SGLang.
- The request body is serialised once, and chunks are parsed into plain dicts, with the fastest JSON
  library installed (``json_codec.py``: orjson, msgspec — vLLM's bundle has it, not orjson —, the
  stdlib); nothing else is built per chunk.
- The stream is read **a block at a time** (``readany``: whatever the socket has delivered, one
  wake-up of the request's task per read, not one per SSE line), split into lines in bulk, and every
  token of a read is stamped with **the read's arrival** (one ``perf_counter`` as the read is taken).
  Chunks that come in one read reached this process together; stamping each as it is parsed would
  add the parse time of the chunks before it, which is the client's, not the server's. A line cut
  across two reads is stamped by the read that completes it.
- **Connections are kept**: after ``data: [DONE]`` the body is read to its end (``_drain``), as ``vllm
  bench serve`` reads it, so that aiohttp returns the connection to the pool; released with the end
  unread, it closes it, and the worker's next request pays a new connection
  (docs/explanation/serving-load.md: against uvicorn the end had mostly come already; it matters where it
  comes late).
- **An idle connection is dropped before the server drops it** (``KEEPALIVE_S``, 4 s, below uvicorn's
  ``timeout_keep_alive`` of 5 s, which vLLM's ``VLLM_HTTP_TIMEOUT_KEEP_ALIVE`` and SGLang keep). With
  aiohttp's default (15 s) a user who thought 5-15 s could send on a connection the server was closing
  at that instant: the request died in under a millisecond, ``Connection reset by peer`` (once in 1,315
  requests of a 724-user level at a 30 s think, ``lab/results/brackets-h100-2026-12-07b``). Past 5 s
  the server has closed the connection anyway, so the next request opened a new one before too.
- **No cookie jar** (``DummyCookieJar``): no server of the study sets cookies, and the default jar's
  work per request and per response sits on the path from the response headers to the first read.
  That path matters: a request whose headers the client took in only after the server had sent its
  first token has that token stamped late (28 % of requests at C = 32 on a 2-core VM, their added TTFT
  p50 2.9 ms against 0.9 ms); without the jar fewer came late (35–55 of 428 against 75–85, C = 32).
- The prompt's ids are **not echoed** under load: vLLM's and SGLang's ``return_token_ids`` sends
  the whole prompt back in the first chunk. Only a sample asks for it (``want_ids``: the first
  request each client process sends in a level, so ``prompt_ids_match`` is checked once per level
  per process); the others ask for ``stream_options.continuous_usage_stats`` (every chunk carries
  the running ``completion_tokens``) so that a chunk holding several tokens ticks the clock by
  their number. Their output ids are not known (``extra.output_ids_from = "not-requested"``); the
  output-token count is the server's (``usage.completion_tokens``).

Per request it keeps what the study needs: the arrival of every chunk and of every token (the
:class:`~backends.base.TokenClock` ticks once per chunk with its token count, at its read's time),
the finish reason, ``usage.prompt_tokens_details.cached_tokens``, and a fault named by its cause
(:class:`StreamFault`): an HTTP error status (429, 503...), a line that is not JSON, a chunk without
choices, an error object in the stream, a stream that ended without a finish reason.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from time import perf_counter
from typing import Any

import aiohttp

from llm_call_anatomy.backends.base import TokenClock
from llm_call_anatomy.backends.openai.bodies import ignore_eos_fields, response_format, sampling_fields
from llm_call_anatomy.backends.openai.json_codec import Codec, choose
from llm_call_anatomy.backends.openai.stream import NO_FINISH_REASON
from llm_call_anatomy.contract.adapter import RawOutput, Request

CODEC = choose()  # orjson, msgspec or json: see json_codec.py

EXTENSIONS = ("vllm", "sglang")  # servers that take token-id prompts, ignore_eos and return_token_ids


KEEPALIVE_S = 4.0  # an idle pooled connection is closed after this, before a uvicorn server's 5 s does it

DRAIN_S = 1.0  # how long the body's end may take after [DONE] before the connection is given up


async def _drain(content: aiohttp.StreamReader) -> None:
    """Read what follows ``data: [DONE]`` up to the body's end (a chunked body's last, empty chunk), for at
    most ``DRAIN_S``. aiohttp returns a connection to the pool only where its response was read to the end:
    released after [DONE] with the end still unread, it closes the connection, and the next request of
    that worker opens a new one, a TCP handshake and an accept on the server's event loop that a real client
    keeping its connection does not cost. uvicorn sends the end in a write of its own after [DONE]; where
    it comes in a later read (a server's loop under load), the drain waits for it, as ``vllm bench serve``
    does (its read loop ends with the body). A server that keeps the body open past ``DRAIN_S`` gets a
    closed connection, not a request that hangs."""
    try:
        async with asyncio.timeout(DRAIN_S):
            await content.read()
    except TimeoutError:
        pass


class StreamFault(RuntimeError):
    """A streamed answer the client cannot use; the message names the cause."""


@dataclass(frozen=True)
class LeanClientSpec:
    """Everything a client process needs to stream requests to one server (picklable: sent to each
    process)."""

    base_url: str  # ``http://host:port/v1``
    model: str
    headers: dict[str, str] = field(default_factory=dict)
    flavor: str | None = None  # "vllm" / "sglang": token-id prompts and the extensions
    timeout_s: float = 300.0

    def build(self) -> LeanClient:
        return LeanClient(self)

    def describe(self) -> str:
        return f"aiohttp {aiohttp.__version__}, {CODEC.name} (backends/openai/lean_stream.py)"


class LeanClient:
    """Streams completions from one server; one aiohttp session per event loop, created on first use."""

    def __init__(self, spec: LeanClientSpec) -> None:
        self.spec = spec
        self.url = spec.base_url.rstrip("/") + "/completions"
        self._session: aiohttp.ClientSession | None = None
        self.ids_sampled = False  # the first request asks for the ids (prompt echo included), the rest do not

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None:
            connector = aiohttp.TCPConnector(  # no pool cap: C streams, C connections
                limit=0, force_close=False, keepalive_timeout=KEEPALIVE_S
            )
            self._session = aiohttp.ClientSession(
                connector=connector,
                headers={**self.spec.headers, "Content-Type": "application/json"},  # not per request
                timeout=aiohttp.ClientTimeout(total=None),
                auto_decompress=False,
                cookie_jar=aiohttp.DummyCookieJar(),  # no cookie work per request and response: see below
            )
        return self._session

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def body(self, request: Request, want_ids: bool) -> bytes:
        """The completions request as JSON bytes; ``want_ids``: a server with the extensions (vLLM, SGLang)
        is asked for the generated ids, else for usage in every chunk, which counts the tokens without
        them."""
        body: dict[str, Any] = {
            "model": self.spec.model,
            "prompt": request.prompt_ids,
            **sampling_fields(request),
        }
        if request.json_schema is not None:
            body["response_format"] = response_format(request.json_schema)
        if self.spec.flavor in EXTENSIONS:
            body.update(ignore_eos_fields(request, "ignore_eos"))
            if want_ids:
                body["return_token_ids"] = True
            else:
                body["stream_options"]["continuous_usage_stats"] = True
        return CODEC.dumps(body)

    async def stream(self, request: Request, clock: TokenClock) -> RawOutput:
        """Send one streamed completion and read its SSE lines into a :class:`RawOutput`, ticking ``clock``
        per chunk at the time of the read it came in; only this client's first request asks for the token
        ids (``want_ids``), the rest count tokens from the usage. An answer other than HTTP 200 raises
        :class:`StreamFault` with the status and the first 200 characters of its body."""
        want_ids = not self.ids_sampled
        self.ids_sampled = True
        data = self.body(request, want_ids)
        reader = ChunkReader(clock)
        async with self._client().post(self.url, data=data) as resp:
            if resp.status != 200:
                text = (await resp.text(errors="replace"))[:200].strip()
                raise StreamFault(
                    f"the server answered HTTP {resp.status} {resp.reason or ''}".rstrip()
                    + (f": {text}" if text else "")
                )
            content = resp.content
            try:
                while data := await content.readany():  # whatever the socket has: one wake-up per read
                    if reader.feed(data, perf_counter()):
                        await _drain(content)  # the body's end, so that the connection is kept
                        break
                else:
                    reader.feed(b"\n", perf_counter())  # the end of the stream ends a last line left open
            except (aiohttp.ClientPayloadError, aiohttp.ServerDisconnectedError, ConnectionResetError) as exc:
                if reader.finish is not None:
                    return reader.output()  # cut after its finish reason: the answer is whole
                tokens = sum(n for _, n in clock.stamps)
                raise StreamFault(  # the project's own phrase (backends/openai/stream.py), not aiohttp's text
                    f"{NO_FINISH_REASON} after {tokens} token(s): the connection was cut "
                    f"({type(exc).__name__})"
                ) from None
        return reader.output()


class ChunkReader:
    """One SSE stream, read by read (:meth:`feed`) and line by line: ticks the clock per chunk that carries
    tokens, at its read's arrival, and keeps ids, text, usage."""

    def __init__(self, clock: TokenClock, codec: Codec = CODEC) -> None:
        self.clock = clock
        self.loads = codec.loads
        self.ids: list[int] = []
        self.texts: list[str] = []
        self.server_ids = False
        self.counted = 0  # completion_tokens seen in continuous usage
        self.counting = False
        self.prompt_used: list[int] | None = None
        self.finish: str | None = None
        self.usage: dict | None = None
        self.response_id: str | None = None
        self.rest = b""  # the start of a line whose end has not come yet
        self.now = 0.0  # when the read being parsed arrived: every token in it is stamped then

    def feed(self, data: bytes, now: float) -> bool:
        """Take one read of the stream, which arrived at ``now`` (``perf_counter``): its complete lines are
        parsed in order, and every token they carry is stamped ``now`` (they reached this process together);
        a line cut by the read waits for the next. True at ``data: [DONE]`` (what follows it is not read)."""
        self.now = now
        lines = (self.rest + data if self.rest else data).split(b"\n")
        self.rest = lines.pop()
        return any(self.line(raw) for raw in lines if raw)  # stops at [DONE]

    def line(self, raw: bytes) -> bool:
        """Read one line; True at ``data: [DONE]``."""
        raw = raw.strip()
        if raw[:5] != b"data:":
            return False  # blank separators, SSE comments and event names carry nothing
        payload = raw[5:].lstrip()
        if payload == b"[DONE]":
            return True
        try:
            chunk = self.loads(payload)
        except ValueError:
            raise StreamFault(
                f"the server sent a line that is not JSON: {payload[:120].decode('utf-8', 'replace')!r}"
            ) from None
        if not isinstance(chunk, dict):
            raise StreamFault(
                "the server sent a line that is not JSON object: "
                f"{payload[:120].decode('utf-8', 'replace')!r}"
            )
        self.chunk(chunk)
        return False

    def chunk(self, chunk: dict) -> None:
        """Take one parsed chunk: its tokens tick the clock (by ids, by the usage count, or one per text
        chunk), its usage, finish reason and echoed prompt ids are kept; an error chunk raises
        :class:`StreamFault`."""
        usage = chunk.get("usage")
        choices = chunk.get("choices")
        if self.response_id is None:
            self.response_id = chunk.get("id")
        if not choices:
            if "error" in chunk:
                error = chunk["error"]
                message = error.get("message") if isinstance(error, dict) else error
                raise StreamFault(f"the server sent an error in the stream: {str(message)[:200]}")
            if usage is None:
                raise StreamFault("the server sent a chunk without choices (and no usage)")
            self.usage = usage
            return
        if usage is not None:
            self.usage = usage
        for choice in choices:
            new = choice.get("token_ids")
            text = choice.get("text") or ""
            if new is not None:
                n = len(new)
                self.server_ids = True
                self.ids.extend(new)
            elif usage is not None and isinstance(usage.get("completion_tokens"), int):
                self.counting = True
                n = usage["completion_tokens"] - self.counted
                self.counted = usage["completion_tokens"]
            else:
                n = 1 if text else 0
            if n > 0:
                self.clock.tick(n, at=self.now)
            self.texts.append(text)
            if self.prompt_used is None and choice.get("prompt_token_ids"):
                self.prompt_used = choice["prompt_token_ids"]
            self.finish = choice.get("finish_reason") or self.finish

    def output(self) -> RawOutput:
        """The finished stream as a RawOutput; one without a finish reason raises :class:`StreamFault`."""
        if self.finish is None:
            tokens = sum(n for _, n in self.clock.stamps)
            raise StreamFault(f"{NO_FINISH_REASON} after {tokens} token(s) (the server stopped answering)")
        usage = self.usage or {}
        details = usage.get("prompt_tokens_details") or {}
        counted = usage.get("completion_tokens")
        extra: dict[str, Any] = {
            "server_prompt_tokens": usage.get("prompt_tokens"),
            "client": "lean-aiohttp",
            "output_ids_from": "server" if self.server_ids else "not-requested",
            "response_id": self.response_id,
        }
        return RawOutput(
            token_ids=self.ids,
            text="".join(self.texts),
            finish_reason=self.finish,
            cached_tokens=details.get("cached_tokens"),  # None: the server did not say
            prompt_ids_used=self.prompt_used,
            extra=extra,
            reported_output_tokens=None if self.server_ids or not isinstance(counted, int) else counted,
        )
