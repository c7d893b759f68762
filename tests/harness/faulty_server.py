"""A fake OpenAI-compatible server with faults (the failure-path tests of issue 26) and a latency that grows
with load (the capacity search over HTTP, issue 22).

    with faulty_server(Faults(every_nth_429=3, short=True)) as server:
        compare.py --backend openai --base-url {server.url} --model tiny --workloads load ...

It lists one model and streams completions as a generic server does (text only, one token per
chunk, a usage chunk at the end, no ``token_ids``), with the faults of :class:`Faults` switched
on: every n-th completion answered 429; short answers (half of ``max_tokens``, finish "stop",
whatever ``ignore_eos`` says); usage counts inflated x10 with cached tokens above the prompt; a
chunk without ``choices``; a line that is not JSON; a pause between tokens; a window of completions
answered with an HTTP error (``fail_from``, ``fail_count``, ``fail_status``); and a death after
``die_after`` completions (the one in flight gets one token, every stream in flight is cut, the
port then refuses connections). With ``ttft_unit_s`` a completion's first token waits ``ttft_unit_s``
x the completions in flight when it arrived (itself included), plus ``saturated_s`` once more than
``knee`` are in flight: a server with a known knee (:class:`Faults` says how it counts).
``server.restart()`` brings a dead server back on the same port (a ``--resume`` against "the same
server"). It runs in a thread of the test's process.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field

from tests.harness.fakes import FakeHTTPServer, JsonHandler


@dataclass
class Faults:
    # each "every n-th completion" fault: 0 never, 1 (or True) every completion; a 429 comes before the others
    every_nth_429: int = 0  # answered 429 Too Many Requests
    short: int = 0  # half of max_tokens with finish "stop"
    inflated_usage: int = 0  # completion tokens x10, cached tokens above the prompt, prompt tokens of 1
    no_choices: bool = False  # the second chunk has no "choices"
    not_json: bool = False  # the second line is not JSON
    token_gap_s: float = 0.0  # between tokens
    die_after: int | None = None  # completions served before the server dies
    # completions numbered fail_from .. fail_from + fail_count - 1 (from 1) answered HTTP fail_status
    fail_from: int = 0
    fail_count: int = 0
    fail_status: int = 500
    # a latency that grows with load: the first token waits ttft_unit_s x the completions in flight at arrival
    # (itself included), plus saturated_s while more than knee are; a completion leaves the count before its
    # usage chunk, so a closed loop's next request (sent after the stream's end) sees exactly C in flight
    ttft_unit_s: float = 0.0
    knee: int | None = None
    saturated_s: float = 0.0
    model_id: str = "tiny"
    version: str | None = None  # served at /version (a vLLM-like server) when set


@dataclass
class _State:
    faults: Faults
    count: int = 0
    in_flight: int = 0  # completions between their arrival and their usage chunk
    dead: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _every(n: int, number: int) -> bool:
    return bool(n) and number % int(n) == 0


class _Handler(JsonHandler):
    state: _State

    def do_GET(self) -> None:
        faults = self.state.faults
        if self.path == "/v1/models":
            self._json(
                200, {"object": "list", "data": [{"id": faults.model_id, "object": "model", "owned_by": "x"}]}
            )
        elif self.path == "/version" and faults.version:
            self._json(200, {"version": faults.version})
        else:
            self._json(404, {"error": "not found"})

    def _event(self, body: dict | str) -> None:
        data = body if isinstance(body, str) else json.dumps(body)
        self.wfile.write(f"data: {data}\n\n".encode())
        self.wfile.flush()

    def _cut(self) -> None:
        """Die here: the connection goes without a finish reason."""
        with suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)
        self.close_connection = True

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        state, faults = self.state, self.state.faults
        with state.lock:
            state.count += 1
            number = state.count
        if state.dead.is_set():
            return self._cut()
        if _every(faults.every_nth_429, number):
            return self._json(429, {"error": {"message": "Too Many Requests", "type": "rate_limit"}})
        if faults.fail_from <= number < faults.fail_from + faults.fail_count:
            return self._json(faults.fail_status, {"error": {"message": "injected", "type": "server_error"}})
        with state.lock:
            state.in_flight += 1
            in_flight = state.in_flight
        self._counted = True
        try:
            self._serve(body, number, in_flight)
        finally:
            self._leave()

    def _leave(self) -> None:
        """Out of the in-flight count, once."""
        if self._counted:
            self._counted = False
            with self.state.lock:
                self.state.in_flight -= 1

    def _first_token_wait(self, in_flight: int) -> float:
        faults = self.state.faults
        saturated = faults.knee is not None and in_flight > faults.knee
        return faults.ttft_unit_s * in_flight + (faults.saturated_s if saturated else 0.0)

    def _serve(self, body: dict, number: int, in_flight: int) -> None:
        state, faults = self.state, self.state.faults
        dying = faults.die_after is not None and number > faults.die_after
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        asked = int(body["max_tokens"])
        short = _every(faults.short, number)
        tokens = max(1, asked // 2) if short else asked
        prompt = len(body["prompt"]) if isinstance(body["prompt"], list) else len(str(body["prompt"]).split())
        base = {"id": f"r{number}", "object": "text_completion", "created": 0, "model": faults.model_id}
        wait = self._first_token_wait(in_flight)
        if wait:
            time.sleep(wait)
        for i in range(tokens):
            if i == 1 and faults.no_choices:
                self._event({**base, "usage": None})
            if i == 1 and faults.not_json:
                self._event("{not json")
            last = i == tokens - 1
            self._event(
                {
                    **base,
                    "choices": [
                        {
                            "index": 0,
                            "text": " x",
                            "logprobs": None,
                            "finish_reason": ("stop" if short else "length") if last else None,
                        }
                    ],
                }
            )
            if dying:
                state.dead.set()
                return self._cut()
            if state.dead.is_set():
                return self._cut()
            if faults.token_gap_s and not last:
                time.sleep(faults.token_gap_s)
        usage = {
            "prompt_tokens": prompt,
            "completion_tokens": tokens,
            "total_tokens": prompt + tokens,
            "prompt_tokens_details": {"cached_tokens": 0},
        }
        if _every(faults.inflated_usage, number):
            usage = {
                "prompt_tokens": 1,
                "completion_tokens": tokens * 10,
                "total_tokens": 1 + tokens * 10,
                "prompt_tokens_details": {"cached_tokens": prompt + 50},
            }
        self._leave()  # before the stream ends: the client's next request must not find this one in flight
        self._event({**base, "choices": [], "usage": usage})
        self._event("[DONE]")


class FaultyServer:
    """The server on 127.0.0.1 (a free port, or ``port``); ``url`` is its /v1 base URL."""

    def __init__(self, faults: Faults, port: int = 0) -> None:
        self.state = _State(faults)
        self.port = port
        self._start()

    def _start(self) -> None:
        handler = type("FaultyHandler", (_Handler,), {"state": self.state})
        self.server = FakeHTTPServer(("127.0.0.1", self.port), handler)
        self.port = self.server.server_port
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.watch = threading.Thread(target=self._die_when_dead, daemon=True)
        self.watch.start()

    def _die_when_dead(self) -> None:
        self.state.dead.wait()
        self.server.shutdown()
        self.server.server_close()  # the port now refuses connections

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def completions(self) -> int:
        return self.state.count

    def restart(self, faults: Faults | None = None) -> None:
        """Up again on the same port (after a death, or with other faults)."""
        self.stop()
        self.state = _State(faults or Faults(model_id=self.state.faults.model_id))
        self._start()

    def stop(self) -> None:
        if not self.state.dead.is_set():
            self.state.dead.set()
        self.watch.join(timeout=5)


@contextmanager
def faulty_server(faults: Faults) -> Iterator[FaultyServer]:
    server = FaultyServer(faults)
    try:
        yield server
    finally:
        server.stop()
