"""A stream cut in the middle of its answer is named by the project's own phrase (issue 44, "also seen"):
"the stream ended without a finish reason after N token(s)" and that the connection was cut, not aiohttp's
"Response payload is not completed" text."""

from __future__ import annotations

import asyncio
import json

import pytest

from llm_call_anatomy.backends.base import TokenClock
from llm_call_anatomy.backends.openai.lean_stream import LeanClientSpec, StreamFault
from llm_call_anatomy.backends.openai.stream import NO_FINISH_REASON
from llm_call_anatomy.contract.adapter import Request

pytestmark = pytest.mark.openai


async def _cut_server():
    """Streams one token of a chunked SSE body, then closes the connection in the middle of the body."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(
            int(line.split(b":")[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length")
        )
        await reader.readexactly(length)
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
        chunk = {"choices": [{"index": 0, "text": "x", "finish_reason": None}]}
        data = f"data: {json.dumps(chunk)}\n\n".encode()
        writer.write(b"%x\r\n%s\r\n" % (len(data), data))
        writer.write(b'40\r\ndata: {"choi')  # a chunk announced, cut short
        await writer.drain()
        writer.transport.abort()

    return await asyncio.start_server(handle, "127.0.0.1", 0)


def test_a_cut_stream_is_named_by_the_projects_phrase() -> None:
    async def one():
        server = await _cut_server()
        port = server.sockets[0].getsockname()[1]
        client = LeanClientSpec(base_url=f"http://127.0.0.1:{port}/v1", model="m").build()
        try:
            return await client.stream(
                Request(prompt_ids=[1, 2, 3], max_new_tokens=4), TokenClock(lambda: None)
            )
        finally:
            await client.aclose()
            server.close()

    with pytest.raises(StreamFault) as err:
        asyncio.run(one())
    text = str(err.value)
    assert text.startswith(f"{NO_FINISH_REASON} after 1 token(s)") and "connection was cut" in text, text
    assert "payload is not completed" not in text.lower()  # not aiohttp's own text
