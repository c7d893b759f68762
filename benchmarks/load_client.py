"""Benchmark 4: the load generator's own ceiling — how many requests/s and streamed tokens/s the
harness's client side sustains against a local fake server that answers instantly.

The fake server (stdlib asyncio, HTTP/1.1 keep-alive) speaks just enough of the OpenAI API for
the ``openai`` backend: ``GET /v1/models`` and a streamed ``POST /v1/completions`` that sends
``max_tokens`` chunks of one token each (with vLLM's ``token_ids`` extension), then usage and
``[DONE]``; every other path is a 404 (no /metrics, no cache reset). The same load loop the study
uses (``backends.load_loop.run_level``) drives the real ``OpenAIBackend`` through ``AsyncOpenAI`` at
each concurrency; the server runs in its own process so the two do not share an interpreter.

    python -m benchmarks.load_client [--levels 1,8,32,128] [--requests 256] [--tokens 64]

If the engine under test streams more than these figures, the harness would be the bottleneck:
compare them with the output tokens/s the Load section reports. Not a timed test.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import socket
import time

CHUNK = 'data: {{"id":"c","object":"text_completion","created":0,"model":"fake","choices":[{{"index":0,"text":"x","token_ids":[{tid}],"finish_reason":{finish}}}],"usage":null}}\n\n'
USAGE = 'data: {{"id":"c","object":"text_completion","created":0,"model":"fake","choices":[],"usage":{{"prompt_tokens":{p},"completion_tokens":{n},"total_tokens":{t}}}}}\n\n'


async def _handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    sock = writer.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # each chunk goes out at once
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, path, _ = lines[0].split(" ", 2)
            length = next((int(v) for k, _, v in (x.partition(":") for x in lines[1:]) if k.lower() == "content-length"), 0)
            body = json.loads(await reader.readexactly(length)) if length else {}
            if method == "GET" and path.endswith("/models"):
                data = json.dumps({"object": "list", "data": [{"id": "fake", "object": "model"}]}).encode()
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s" % (len(data), data))
            elif method == "POST" and path.endswith("/completions"):
                n, prompt = int(body.get("max_tokens", 16)), body.get("prompt") or []
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
                for i in range(n):
                    _chunk(writer, CHUNK.format(tid=i % 100 + 1, finish='"length"' if i == n - 1 else "null"))
                    await writer.drain()
                p = len(prompt) if isinstance(prompt, list) else 1
                _chunk(writer, USAGE.format(p=p, n=n, t=p + n) + "data: [DONE]\n\n")
                writer.write(b"0\r\n\r\n")
            else:
                writer.write(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n")
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


def _chunk(writer: asyncio.StreamWriter, text: str) -> None:
    data = text.encode()
    writer.write(b"%x\r\n%s\r\n" % (len(data), data))


def serve(port: int) -> None:
    async def main() -> None:
        server = await asyncio.start_server(_handle, "127.0.0.1", port, backlog=1024)
        for sock in server.sockets:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        async with server:
            await server.serve_forever()

    asyncio.run(main())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def measure(levels: list[int], requests: int, tokens: int, model_path: str) -> list[dict]:
    from backends.base import BackendSettings, Request
    from backends.load_loop import LoadSettings, run_level
    from backends.openai import OpenAIBackend

    port = free_port()
    server = multiprocessing.get_context("spawn").Process(target=serve, args=(port,), daemon=True)
    server.start()
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
                break
            except OSError:
                time.sleep(0.05)
        settings = BackendSettings(model_path=model_path, model_label="fake", base_url=f"http://127.0.0.1:{port}/v1")
        backend = OpenAIBackend(settings)
        backend.start()
        rows = []
        for c in levels:
            sessions = [[Request(prompt_ids=[1, 2, 3, 4], max_new_tokens=tokens, ignore_eos=True)] for _ in range(requests)]
            outs, facts = run_level(backend, sessions, LoadSettings(concurrency=c))
            done = [o[0] for o in outs if o[0].error is None and o[0].output is not None]
            streamed = sum(len(o.output.token_ids) for o in done)
            rows.append({"concurrency": c, "requests": len(done), "failed": requests - len(done),
                         "wall_s": facts["wall_s"], "requests_per_s": len(done) / facts["wall_s"],
                         "tokens_per_s": streamed / facts["wall_s"]})
        backend.close()
        return rows
    finally:
        server.terminate()
        server.join(5)


def table(rows: list[dict]) -> str:
    lines = ["| concurrency | requests | requests/s | streamed tokens/s |", "|---|---|---|---|"]
    lines += [f"| {r['concurrency']} | {r['requests']} | {r['requests_per_s']:,.0f} | {r['tokens_per_s']:,.0f} |" for r in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--levels", default="1,8,32,128")
    p.add_argument("--requests", type=int, default=256, help="requests per level")
    p.add_argument("--tokens", type=int, default=64, help="streamed tokens per request")
    p.add_argument("--json", default=None, help="also write the rows here")
    args = p.parse_args(argv)
    from harness.models import build_tiny

    rows = measure([int(x) for x in args.levels.split(",")], args.requests, args.tokens, str(build_tiny()))
    print(table(rows))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
