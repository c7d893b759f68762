"""Helpers for the failure-path and server tests: a small workload file and fake OpenAI-compatible servers.

The failing server lists one model and answers every completion with HTTP 500; its error message
carries Rich markup (``[/bold]``) and echoes the request's Authorization header, as careless
servers do, so tests can check that neither kills a run nor lands in a file. The chat server
(:func:`chat_server`) lists the models it is given, serves ``/v1/chat/completions`` only (a
completion gets 404, as from a chat-only server or hosted API), streams a short answer as text
deltas and reports cached prompt tokens from the second user message on (``None`` before: "not
reported"); it keeps every request body it received.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


class FakeHTTPServer(ThreadingHTTPServer):
    """The fake servers' HTTP server: a thread per connection, and a listen backlog that takes a closed loop's
    whole first wave. ``socketserver``'s backlog of 5 drops the sixth simultaneous connect while the accept
    thread is busy, and the client's kernel sends that SYN again a second later: a request in a wave of 8 then
    reached the server a second late, C=8 met a knee at 6 and the capacity search stopped short (seen in CI
    on a loaded machine)."""

    request_queue_size = 1024
    daemon_threads = True


SMALL = """\
workloads:
  - name: chat
    kind: conversation
    system: You answer in one short line.
    turns:
      - {user: "First question?", assistant: "First answer."}
      - {user: "Second question?", assistant: "Second answer."}
      - {user: "Third question?", assistant: "Third answer."}
  - name: lengths
    kind: sweep
    lengths: [16, 32]
    decode_tokens: 4
    warmup: 0
    filler: The on-call engineer opened the dashboard at three in the morning.
"""


def small_workload(folder: Path, text: str = SMALL) -> Path:
    path = folder / "small.yaml"
    path.write_text(text)
    return path


class JsonHandler(BaseHTTPRequestHandler):
    """A quiet handler that answers JSON and lists one model (``model_id``; or ``model_ids``) at /v1/models;
    the fake servers of the tests subclass it and add their own do_POST."""

    model_id = "fake-model"
    model_ids: tuple[str, ...] = ()

    def log_message(self, *args) -> None:
        pass

    def _json(self, code: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path == "/v1/models":
            ids = self.model_ids or (self.model_id,)
            self._json(
                200, {"object": "list", "data": [{"id": i, "object": "model", "owned_by": "x"} for i in ids]}
            )
        else:
            self._json(404, {"error": "not found"})


class _Failing(JsonHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        message = (
            "[/bold] engine crashed [red]hard; request headers: "
            f"Authorization={self.headers.get('Authorization')}"
        )
        self._json(500, {"error": {"message": message, "type": "internal_error"}})


@contextmanager
def failing_server() -> Iterator[str]:
    """An OpenAI-compatible server on 127.0.0.1 that answers 500 to every completion; yields its /v1 URL."""
    with serving(_Failing) as url:
        yield url


CHAT_ANSWER = ("The", " answer", ".")
CHAT_CACHED_TOKENS = 7  # what the chat server says it served from cache, from the second user message on


class _Chat(JsonHandler):
    received: list[dict] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        if self.path != "/v1/chat/completions":
            self._json(404, {"error": {"message": f"{self.path}: this server has chat/completions only"}})
            return
        self.received.append(body)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        pieces = CHAT_ANSWER[: max(1, int(body.get("max_tokens") or len(CHAT_ANSWER)))]
        for i, piece in enumerate(pieces):
            last = i == len(pieces) - 1
            self._event(
                {
                    "choices": [
                        {
                            "index": 0,
                            "delta": {"role": "assistant", "content": piece},
                            "finish_reason": ("stop" if len(pieces) == len(CHAT_ANSWER) else "length")
                            if last
                            else None,
                        }
                    ]
                }
            )
        users = sum(1 for m in body["messages"] if m["role"] == "user")
        usage = {"prompt_tokens": 20, "completion_tokens": len(pieces), "total_tokens": 20 + len(pieces)}
        if users > 1:
            usage["prompt_tokens_details"] = {"cached_tokens": CHAT_CACHED_TOKENS}
        self._event({"choices": [], "usage": usage})
        self.wfile.write(b"data: [DONE]\n\n")

    def _event(self, chunk: dict) -> None:
        full = {
            "id": "c1",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": self.model_ids[0],
            **chunk,
        }
        self.wfile.write(b"data: " + json.dumps(full).encode() + b"\n\n")
        self.wfile.flush()


@contextmanager
def chat_server(models: tuple[str, ...] = ("fake-model",)) -> Iterator[tuple[str, list[dict]]]:
    """A chat-only OpenAI-compatible server listing ``models``; yields its /v1 URL and the bodies it
    received."""
    handler = type("ChatHandler", (_Chat,), {"model_ids": tuple(models), "received": []})
    with serving(handler) as url:
        yield url, handler.received


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """``handler`` on 127.0.0.1 in a thread; yields the /v1 URL."""
    server = FakeHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/v1"
    finally:
        server.shutdown()
        server.server_close()


# --- a fake backend for in-process runs of harness.child ----------------------------------------
def echo_backend_class():
    """A backend that answers every request with the prompt's last token, instantly (no engine)."""
    from llm_call_anatomy.backends.base import Backend
    from llm_call_anatomy.contract.adapter import Capabilities, RawOutput

    class EchoBackend(Backend):
        name = "echo"
        capabilities = Capabilities(
            prefix_cache=True, resets_cache=True, grammar=True, logprobs=True, attentions=True
        )

        def _generate(self, request, clock):
            clock.tick()
            ids = [request.prompt_ids[-1]] * request.max_new_tokens
            return RawOutput(token_ids=ids, text="{}", finish_reason="length")

    return EchoBackend


def prepare_run(run_dir: Path, workload_file: Path, model_dir: Path, repeats: int = 1) -> None:
    """plan.json + run.json as compare.py writes them, for running ``harness.child`` in-process."""
    from transformers import AutoTokenizer

    from llm_call_anatomy.contract.chat import Renderer
    from llm_call_anatomy.workloads.catalog import build_plan, read_workloads

    specs = read_workloads([], [str(workload_file)])
    plan = build_plan(specs, Renderer(AutoTokenizer.from_pretrained(model_dir)), repeats)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "plan.json").write_text(plan.to_json())
    settings = {"model_path": str(model_dir), "model_label": "tiny", "dtype": "float32", "device": "cpu"}
    (run_dir / "run.json").write_text(
        json.dumps({"run_id": run_dir.name, "settings": settings, "resume": False})
    )
