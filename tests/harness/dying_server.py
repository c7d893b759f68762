"""A launched server that dies in the middle of a load level, for tests/harness/test_server_failures.py.

``python -m tests.harness.dying_server PORT SERVE [chunked]`` answers /health and /v1/models, and
streams every completion as vLLM's server does with ``return_token_ids`` (one token per chunk,
``STEP_S`` apart); completion number SERVE + 1 gets one token, then the whole process exits with
code 3, cutting off every stream in flight. Its body ends where the connection closes (HTTP/1.0:
a cut stream looks whole but has no ``finish_reason``) or, with ``chunked``, is sent in HTTP/1.1
chunks as uvicorn sends it (a cut stream is a broken one). :class:`DyingServerBackend` launches it the way
``vllm-server`` launches vLLM's (``backends.openai.servers.LaunchedServerBackend``).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import NoReturn

from llm_call_anatomy.backends.openai.servers import LaunchedServerBackend
from tests.harness.fakes import FakeHTTPServer, JsonHandler

STEP_S = 0.03
EXIT_CODE = 3
ROOT = Path(__file__).resolve().parents[2]


class _Streaming(JsonHandler):
    serve = 0  # completions answered in full before the server dies
    count = 0
    lock = threading.Lock()
    chunked = False

    def _send(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data) if self.chunked else data)
        self.wfile.flush()

    def do_GET(self) -> None:
        if self.path == "/health":
            self._json(200, {})
        else:
            super().do_GET()

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with self.lock:
            type(self).count += 1
            number = self.count
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        if self.chunked:
            self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        tokens = int(body["max_tokens"])
        for i in range(tokens):
            choice = {
                "index": 0,
                "text": "x",
                "token_ids": [7],
                "finish_reason": "length" if i == tokens - 1 else None,
            }
            chunk = {
                "id": f"r{number}",
                "object": "text_completion",
                "created": 0,
                "model": self.model_id,
                "choices": [choice],
            }
            self._send(f"data: {json.dumps(chunk)}\n\n".encode())
            if number > self.serve:
                die(number)
            time.sleep(STEP_S)
        usage = {
            "id": f"r{number}",
            "object": "text_completion",
            "created": 0,
            "model": self.model_id,
            "choices": [],
            "usage": {
                "prompt_tokens": len(body["prompt"]),
                "completion_tokens": tokens,
                "total_tokens": len(body["prompt"]) + tokens,
            },
        }
        self._send(f"data: {json.dumps(usage)}\n\ndata: [DONE]\n\n".encode())
        if self.chunked:
            self.wfile.write(b"0\r\n\r\n")


def die(number: int) -> NoReturn:
    """Say which completion the server dies in, then end the whole process at once (``os._exit``: no
    clean-up, every stream in flight is cut).

    The line goes to the log in one ``write(2)`` of whole bytes, not through ``print``: with
    ``PYTHONUNBUFFERED=1`` (set where the suite runs) ``print`` writes the text and its newline in two
    calls, and another handler thread's traceback (``socketserver`` prints one for every connection the
    client resets, on the same log) could land between them and split the line. One write to the log,
    which the harness opens for appending, cannot be split; it is done before ``os._exit``, so it is
    in the file before the process is reaped."""
    os.write(sys.stdout.fileno(), f"dying in the middle of completion {number}\n".encode())
    os._exit(EXIT_CODE)


class DyingServerBackend(LaunchedServerBackend):
    """``vllm-server``'s launch, health wait, exit detection and log, around the dying fake server."""

    name = "dying-server"
    engine_module = "json"  # importable everywhere
    serve = 11
    chunked = False

    def server_argv(self, port: int) -> list[str]:
        return [
            sys.executable,
            "-m",
            "tests.harness.dying_server",
            str(port),
            str(self.serve),
            *(["chunked"] if self.chunked else []),
        ]

    def server_env(self) -> dict[str, str]:
        return {"PYTHONPATH": str(ROOT)}


def main(argv: list[str]) -> None:
    port, serve = int(argv[0]), int(argv[1])
    _Streaming.serve = serve
    if argv[2:] == ["chunked"]:
        _Streaming.chunked, _Streaming.protocol_version = True, "HTTP/1.1"
    server = FakeHTTPServer(("127.0.0.1", port), _Streaming)
    print(f"fake server on port {port}, dies during completion {serve + 1}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main(sys.argv[1:])
