"""A local fake of an engine's OpenAI server that paces streams as an engine does: benchmark 4's server.

One asyncio process (stdlib only, HTTP/1.1 keep-alive, chunked SSE). Every ``step_s`` (default
7 ms, a decode step of a real engine under load) ONE step emits the next token of every stream in
flight, so a stream's tokens are ``step_s`` apart whatever the concurrency, and a request that
arrives waits for the next step for its first token (a prefill of one step). It speaks vLLM's
dialect: ``GET /v1/models``, ``/health``, ``/version``, a streamed ``POST /v1/completions`` (one
token per chunk; ``token_ids`` only when ``return_token_ids`` is asked, and then the prompt's ids in
the first chunk, as vLLM does; running usage when ``continuous_usage_stats`` is asked; a usage
chunk at the end when ``include_usage`` is), and a realistic ``GET /metrics`` (vLLM's latency
histograms with its bucket bounds, its gauges and counters, ``vllm:cache_config_info``: rendered by
:mod:`benchmarks.fake_engine_metrics`), so a client that scrapes it pays what it pays against vLLM.

It keeps, per response id, the time each request was read and each token was sent, on
``time.perf_counter()`` (``CLOCK_MONOTONIC``: the same clock as a client on this host), served as
JSON at ``GET /fake/log``: what the client added is measured against the server's own send times.

One process paces about 45,000 tokens/s (the H200 host, 2026-12-01); :mod:`benchmarks.fake_engine_procs`
runs several on one port (``SO_REUSEPORT``: the kernel spreads the connections, each process paces the
streams of its own connections), each publishing its counters into its row of a shared
:class:`benchmarks.fake_engine_procs.Board`, so that ``/metrics``, whichever process answers it, is the
sum over all of them, as one engine's would be.

Faults, for tests, chosen by the request's ``model``: ``fault:429`` / ``fault:503`` (that status),
``fault:not-json`` (a malformed SSE line), ``fault:no-choices`` (a chunk without choices),
``fault:no-finish`` (the stream ends without a finish reason).

    python -m benchmarks.fake_engine --port 8000 [--step-ms 7] [--procs N]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import socket
import sys
import time

from benchmarks.fake_engine_metrics import (  # noqa: F401 - BLOCK_SIZE, KV_BLOCKS: imported from here
    BLOCK_SIZE,
    HISTOGRAMS,
    KV_BLOCKS,
    MODEL,
    Histogram,
    observe_stream,
    render_metrics,
)


class Stream:
    def __init__(self, writer, rid: str, body: dict, received: float) -> None:
        self.writer, self.rid, self.body, self.received = writer, rid, body, received
        self.n = int(body.get("max_tokens") or 16)
        opts = body.get("stream_options") or {}
        self.ids, self.usage, self.running = (
            bool(body.get("return_token_ids")),
            bool(opts.get("include_usage")),
            bool(opts.get("continuous_usage_stats")),
        )
        prompt = body.get("prompt") or []
        self.prompt = prompt if isinstance(prompt, list) else [1] * max(1, len(str(prompt)) // 4)
        self.sent: list[float] = []
        self.fault = (
            str(body.get("model", "")).removeprefix("fault:")
            if str(body.get("model", "")).startswith("fault:")
            else None
        )
        self.done = asyncio.get_running_loop().create_future()


class FakeEngine:
    def __init__(self, step_s: float = 0.007, index: int = 0, board=None) -> None:
        self.step_s, self.index, self.board = step_s, index, board  # index: this process's row of the board
        self.active: list[Stream] = []
        self.log: dict[str, dict] = {}
        self.hist = {name: Histogram(b) for name, b in HISTOGRAMS.items()}
        self.finished = self.prompt_tokens = self.generation_tokens = 0
        self.next_id = 0
        self.wake = asyncio.Event()

    async def stepper(self) -> None:
        while True:
            if not self.active:
                self.wake.clear()
                await self.wake.wait()
            t0 = time.perf_counter()
            for s in list(self.active):
                self._emit(s)
            for w in {s.writer for s in self.active}:
                with contextlib.suppress(ConnectionError):
                    await w.drain()
            self.active = [s for s in self.active if not s.done.done()]
            if self.board is not None:
                self.board.publish(self.index, self)
            await asyncio.sleep(max(0.0, self.step_s - (time.perf_counter() - t0)))

    def _emit(self, s: Stream) -> None:
        i = len(s.sent)
        last = i == s.n - 1
        choice: dict = {
            "index": 0,
            "text": " x",
            "logprobs": None,
            "finish_reason": "length" if last else None,
            "stop_reason": None,
        }
        if s.ids:
            choice["token_ids"] = [i % 100 + 1]
            if i == 0:
                choice["prompt_token_ids"] = s.prompt
        chunk: dict = {
            "id": s.rid,
            "object": "text_completion",
            "created": 0,
            "model": MODEL,
            "choices": [choice],
        }
        if s.running:
            chunk["usage"] = {
                "prompt_tokens": len(s.prompt),
                "completion_tokens": i + 1,
                "total_tokens": len(s.prompt) + i + 1,
            }
        text = "data: " + json.dumps(chunk) + "\n\n"
        if s.fault == "not-json" and i == 1:
            text = "data: {not json\n\n"
        elif s.fault == "no-choices" and i == 1:
            text = "data: " + json.dumps({"id": s.rid, "object": "text_completion", "choices": []}) + "\n\n"
        if s.fault == "no-finish" and last:
            return self._finish(s, "0\r\n\r\n")
        s.sent.append(time.perf_counter())
        _chunk(s.writer, text)
        if last:
            tail = ""
            if s.usage:
                tail = (
                    "data: "
                    + json.dumps(
                        {
                            "id": s.rid,
                            "object": "text_completion",
                            "created": 0,
                            "model": MODEL,
                            "choices": [],
                            "usage": {
                                "prompt_tokens": len(s.prompt),
                                "completion_tokens": s.n,
                                "total_tokens": len(s.prompt) + s.n,
                                "prompt_tokens_details": {"cached_tokens": 0},
                            },
                        }
                    )
                    + "\n\n"
                )
            self._finish(s, None, tail + "data: [DONE]\n\n")

    def _finish(self, s: Stream, raw: str | None, text: str = "") -> None:
        if text:
            _chunk(s.writer, text)
        s.writer.write((raw or "0\r\n\r\n").encode())
        sent = s.sent
        observe_stream(self.hist, s.received, sent)
        self.finished += 1
        self.prompt_tokens += len(s.prompt)
        self.generation_tokens += len(sent)
        self.log[s.rid] = {"received": s.received, "sent": sent}
        s.done.set_result(None)

    def metrics(self) -> str:
        """vLLM's ``/metrics`` text: this process's counters, or with a board, the sum over every process."""
        if getattr(self, "board", None) is not None:
            return render_metrics(*self.board.total())
        return render_metrics(
            len(self.active), self.finished, self.prompt_tokens, self.generation_tokens, self.hist
        )

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """One keep-alive HTTP/1.1 connection: completions streamed at the engine's step, plus
        ``/v1/models``, ``/metrics``, ``/fake/log`` (every stream's send times) and ``/health``; else 404."""
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                length = next(
                    (
                        int(v)
                        for k, _, v in (x.partition(":") for x in lines[1:])
                        if k.lower() == "content-length"
                    ),
                    0,
                )
                raw = await reader.readexactly(length) if length else b""
                received = time.perf_counter()
                if method == "POST" and path.endswith("/completions"):
                    await self._completion(writer, json.loads(raw), received)
                elif method == "GET" and path.endswith("/models"):
                    _json(writer, {"object": "list", "data": [{"id": MODEL, "object": "model"}]})
                elif method == "GET" and path == "/metrics":
                    _send(writer, 200, "text/plain; version=0.0.4", self.metrics().encode())
                elif method == "GET" and path == "/fake/log":
                    _json(writer, self.log)
                elif method == "GET" and path in ("/health", "/version"):
                    _json(writer, {"version": "fake-engine"})
                else:
                    _send(writer, 404, "text/plain", b"")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()

    async def _completion(self, writer, body: dict, received: float) -> None:
        self.next_id += 1
        s = Stream(writer, f"cmpl-{self.index}-{self.next_id}", body, received)
        if s.fault in ("429", "503"):
            reason = "Too Many Requests" if s.fault == "429" else "Service Unavailable"
            data = json.dumps({"error": {"message": f"fake {reason.lower()}", "code": int(s.fault)}}).encode()
            writer.write(
                b"HTTP/1.1 %s %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s"
                % (s.fault.encode(), reason.encode(), len(data), data)
            )
            return
        writer.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
        )
        self.active.append(s)
        if self.board is not None:
            self.board.set_active(self.index, len(self.active))
        self.wake.set()
        await s.done


def _chunk(writer, text: str) -> None:
    data = text.encode()
    writer.write(b"%x\r\n%s\r\n" % (len(data), data))


def _send(writer, status: int, ctype: str, data: bytes) -> None:
    reason = {200: "OK", 404: "Not Found"}[status]
    writer.write(
        b"HTTP/1.1 %d %s\r\ncontent-type: %s\r\ncontent-length: %d\r\n\r\n%s"
        % (status, reason.encode(), ctype.encode(), len(data), data)
    )


def _json(writer, obj) -> None:
    _send(writer, 200, "application/json", json.dumps(obj).encode())


def serve(port: int, step_s: float = 0.007, ready=None, *, index: int = 0, board=None, control=None) -> None:
    """Serve on ``port`` until killed. With a ``board`` (several processes on one port): the port is shared
    (``SO_REUSEPORT``), this process is row ``index`` of the board, and it also listens on a port of its own,
    put on the ``control`` queue as ``(index, port)``, where ``/fake/log`` is this process's alone."""

    async def main() -> None:
        engine = FakeEngine(step_s, index, board)
        server = await asyncio.start_server(
            engine.handle, "127.0.0.1", port, backlog=2048, limit=1 << 22, reuse_port=board is not None
        )
        stepper = asyncio.create_task(engine.stepper())
        if control is not None:
            own = await asyncio.start_server(engine.handle, "127.0.0.1", 0, limit=1 << 22)
            control.put((index, own.sockets[0].getsockname()[1]))
        if ready is not None:
            ready.set()
        async with server:
            await server.serve_forever()
        stepper.cancel()

    asyncio.run(main())


def start(step_s: float = 0.007):
    """The server in its own process on a free port of 127.0.0.1, once it accepts connections: (process,
    root URL)."""
    import multiprocessing

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = multiprocessing.get_context("spawn").Process(target=serve, args=(port, step_s), daemon=True)
    proc.start()
    wait_accepting(port)
    return proc, f"http://127.0.0.1:{port}"


def wait_accepting(port: int) -> None:
    """Until 127.0.0.1:``port`` accepts a connection, for at most about 20 s (400 tries)."""
    for _ in range(400):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            return
        except OSError:
            time.sleep(0.05)


def main(argv: list[str] | None = None) -> int:
    """Serve on ``--port`` until stopped: one process, or ``--procs N`` sharing the port (SO_REUSEPORT)."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--step-ms", type=float, default=7.0)
    p.add_argument("--procs", type=int, default=1, help="server processes on the one port (SO_REUSEPORT)")
    args = p.parse_args(argv)
    if args.procs < 1:
        p.error(f"--procs {args.procs}: give 1 or more server processes")
    if args.procs == 1:
        serve(args.port, args.step_ms / 1e3)
        return 0
    from benchmarks.fake_engine_procs import start_procs

    server = start_procs(args.step_ms / 1e3, args.procs, port=args.port)
    print(f"{args.procs} processes on {server.url}", flush=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # stopped: its processes with it
    try:
        server.wait()
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
