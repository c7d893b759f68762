"""The load path's lean client (backends/openai/lean_stream.py) and its client processes
(backends/load_shards.py), against the paced fake engine server (benchmarks/fake_engine.py, a real HTTP server
in its own process).

- Two client processes drive one level: every planned request comes back exactly once, stamps are
  monotone and on the one clock (each token arrives after the server's own send time for it, and
  within the level), the prompt's ids are asked for once per process, the rest count by usage.
- Faults become errors naming the cause: HTTP 429 and 503, a line that is not JSON, a chunk
  without choices, a stream without a finish reason.
- A client process that dies mid-level: its unfinished requests are errors naming it, the others'
  are whole, the level says it is incomplete.
"""

from __future__ import annotations

import asyncio
import json
import threading
import urllib.request
from collections.abc import Iterator

import pytest

from benchmarks.fake_engine import start
from llm_call_anatomy.backends import load_level
from llm_call_anatomy.backends.base import TokenClock
from llm_call_anatomy.backends.load_level import run_level
from llm_call_anatomy.backends.load_loop import LoadSettings
from llm_call_anatomy.backends.load_shards import (
    TEST_EXIT_VAR,
    auto_client_procs,
    client_procs_error,
    server_is_local,
    shards,
)
from llm_call_anatomy.backends.openai import OpenAIBackend
from llm_call_anatomy.backends.openai.lean_stream import LeanClientSpec, StreamFault
from llm_call_anatomy.backends.openai.options import OpenAIOptions
from llm_call_anatomy.contract.adapter import BackendSettings, Request

pytestmark = pytest.mark.openai
STEP_S = 0.005


@pytest.fixture(scope="module")
def fake_url() -> Iterator[str]:
    proc, url = start(STEP_S)
    yield url
    proc.terminate()
    proc.join(5)


@pytest.fixture
def server_backend(fake_url: str, tiny_model_dir) -> Iterator:
    """The real ``openai`` backend, started against the fake server (it finds vLLM's /metrics there)."""
    made = []

    def make(model: str | None = None) -> OpenAIBackend:
        options = OpenAIOptions(served_model=model)
        backend = OpenAIBackend(
            BackendSettings(
                model_path=str(tiny_model_dir),
                model_label="fake",
                base_url=fake_url + "/v1",
                request_timeout_s=30.0,
                options=options,
            )
        )
        backend.start()
        made.append(backend)
        return backend

    yield make
    for backend in made:
        backend.close()


def prompt(n: int = 1024, seed: int = 0) -> list[int]:
    return [(seed * 7919 + i) % 30000 + 1 for i in range(n)]


def test_two_client_processes_merge_into_one_level(fake_url: str, server_backend) -> None:
    sessions = [[Request(prompt_ids=prompt(seed=k), max_new_tokens=12, ignore_eos=True)] for k in range(10)]
    outs, facts = run_level(server_backend(), sessions, LoadSettings(concurrency=4, client_procs=2))
    assert facts.client_procs == 2 and len(facts.client_cpu_share) == 2
    assert all(x >= 0 for x in facts.client_cpu_share) and facts.client_failed is None
    assert facts.other == {}  # every key the level record will carry is named (LevelFacts.from_engine)
    server = facts.server_timings  # the fake server's /metrics over the level, sampled by this process
    assert server["ttft_n"] == server["e2e_n"] == 10 and server["itl_n"] == 10 * 11
    assert 0 < server["ttft_ms_p50"] <= server["ttft_ms_p99"] and server["tpot_n"] == 10
    # its /metrics sampled at most once a second (load_level.sample_pause_s), and at the level's start and end
    assert 2 <= facts.gauge_samples <= 3 + facts.wall_s / load_level.SERVER_EVERY_S
    assert {(o.session, o.turn) for s in outs for o in s} == {
        (k, 0) for k in range(10)
    }  # each once, none lost
    with urllib.request.urlopen(fake_url + "/fake/log") as resp:
        log = json.loads(resp.read())
    origin = facts.origin_perf_counter
    sampled = 0
    for (o,) in outs:
        assert o.error is None, o.error
        out = o.output
        assert out.output_tokens == 12 and out.finish_reason == "length" and out.cached_tokens == 0
        times = o.token_times_s
        assert len(times) == 12 and times == sorted(times) and len(o.chunk_times_s) == 12
        assert 0 <= o.submit_s < o.first_token_s == times[0] <= o.finish_s <= facts.wall_s
        sent = log[out.extra["response_id"]]["sent"]  # the server's own send times, same clock
        assert len(sent) == 12 and all(t + origin >= s for t, s in zip(times, sent, strict=True))
        if out.prompt_ids_used is not None:
            sampled += 1
            assert out.prompt_ids_used == sessions[o.session][0].prompt_ids and len(out.token_ids) == 12
        else:
            assert out.token_ids == [] and out.extra["output_ids_from"] == "not-requested"
    assert sampled == 2  # the prompt's ids were asked for once per client process, not by every request


def test_open_loop_shards_keep_the_arrivals(server_backend) -> None:
    sessions = [[Request(prompt_ids=prompt(64, k), max_new_tokens=3)] for k in range(6)]
    outs, facts = run_level(server_backend(), sessions, LoadSettings(rate_rps=40.0, seed=3, client_procs=3))
    submits = [o.submit_s for (o,) in outs]
    assert facts.client_procs == 3 and all(o.error is None for (o,) in outs)
    assert submits[0] < 0.05 and submits[-1] > submits[0]  # Poisson gaps, not all at once


@pytest.mark.parametrize(
    ("fault", "cause"),
    [
        ("429", "HTTP 429 Too Many Requests"),
        ("503", "HTTP 503 Service Unavailable"),
        ("not-json", "a line that is not JSON"),
        ("no-choices", "a chunk without choices"),
        ("no-finish", "the stream ended without a finish reason"),
    ],
)
def test_faults_name_their_cause(fake_url: str, fault: str, cause: str) -> None:
    client = LeanClientSpec(base_url=fake_url + "/v1", model=f"fault:{fault}", flavor="vllm").build()

    async def one():
        try:
            return await client.stream(
                Request(prompt_ids=prompt(16), max_new_tokens=4), TokenClock(lambda: None)
            )
        finally:
            await client.aclose()

    with pytest.raises(StreamFault, match=cause):
        asyncio.run(one())


def test_a_fault_is_one_error_record_and_the_level_goes_on(server_backend) -> None:
    sessions = [[Request(prompt_ids=prompt(16), max_new_tokens=4)] for _ in range(3)]
    outs, facts = run_level(
        server_backend("fault:no-choices"), sessions, LoadSettings(concurrency=3, client_procs=1)
    )
    assert [o.error.split(":")[0] for (o,) in outs] == [
        "StreamFault"
    ] * 3 and "chunk without choices" in outs[0][0].error
    assert facts.client_failed is None


def test_a_client_process_that_dies_turns_its_requests_into_errors(server_backend, monkeypatch) -> None:
    monkeypatch.setenv(TEST_EXIT_VAR, "0:1")  # process 0 exits after its first outcome
    sessions = [[Request(prompt_ids=prompt(32, k), max_new_tokens=20)] for k in range(8)]
    outs, facts = run_level(server_backend(), sessions, LoadSettings(concurrency=4, client_procs=2))
    mine, others = [outs[k][0] for k in range(0, 8, 2)], [outs[k][0] for k in range(1, 8, 2)]
    assert all(o.error is None and o.output.output_tokens == 20 for o in others)
    died = [o for o in mine if o.error]
    assert died and all("client process 0" in o.error and "died with exit code 3" in o.error for o in died)
    assert sum(o.output is not None for o in mine) == 1  # the one it reported before it died, kept once
    assert (
        len(died) == 1 and sum(not o.started for o in mine) == 2
    )  # in flight: an error; never started: not started
    assert all(o.started for o in died) and "client process 0" in facts.client_failed
    assert facts.client_cpu_share[0] is None and facts.client_cpu_share[1] is not None
    assert facts.other == {}  # client_failed too is a named key of the level record


def test_client_procs_bounds_and_the_automatic_count() -> None:
    assert "give 1 or more" in client_procs_error(
        0, 8
    ) and "more client processes than the 8" in client_procs_error(9, 8)
    assert client_procs_error(None, 8) is None and client_procs_error(8, 8) is None
    assert auto_client_procs(LoadSettings(concurrency=128), 512, cpus=16) == 4
    assert auto_client_procs(LoadSettings(concurrency=128), 512, cpus=2) == 1
    assert auto_client_procs(LoadSettings(concurrency=8), 512, cpus=16) == 1
    assert auto_client_procs(LoadSettings(concurrency=128), 2, cpus=16) == 2
    assert auto_client_procs(LoadSettings(concurrency=512), 4096, cpus=16) == 8  # the server shares the host
    assert auto_client_procs(LoadSettings(concurrency=512), 4096, cpus=16, server_local=False) == 15
    assert auto_client_procs(LoadSettings(concurrency=64), 4096, cpus=16, server_local=False) == 2
    # open loop: the requests/s offered (a sessions load's rate is new users/s, each running all its turns),
    # at most the streams its sessions can hold
    assert auto_client_procs(LoadSettings(rate_rps=8), 33, cpus=16) == 1
    assert auto_client_procs(LoadSettings(rate_rps=32), 33, cpus=16) == 2
    assert auto_client_procs(LoadSettings(rate_rps=2), 128, cpus=16, requests=1280) == 2  # 20 requests/s
    assert auto_client_procs(LoadSettings(rate_rps=8), 128, cpus=16, requests=1280) == 4  # as C = 128: not 1
    assert auto_client_procs(LoadSettings(rate_rps=400), 24, cpus=16) == 1  # 24 streams at most
    assert all(
        map(server_is_local, [None, "http://127.0.0.1:8000/v1", "http://localhost:1/v1", "http://[::1]:2"])
    )
    assert not any(map(server_is_local, ["http://10.0.0.7:8000/v1", "https://api.example.com/v1"]))
    split = shards(10, 3, LoadSettings(concurrency=8))
    assert sorted(k for keys, _ in split for k in keys) == list(range(10)) and [w for _, w in split] == [
        3,
        3,
        2,
    ]
    assert len(shards(10, 4, LoadSettings(concurrency=2))) == 2  # never a process without a stream


def test_a_server_that_dies_mid_level_is_named_in_each_error(tiny_model_dir) -> None:
    proc, url = start(STEP_S)

    class Launched(OpenAIBackend):  # what a launched server does: it knows when its process exited
        def _check_server(self, wait_s: float = 0.0) -> None:
            proc.join(wait_s)
            if proc.exitcode is not None:
                raise RuntimeError(f"the server exited with {proc.exitcode}; see its log")

    backend = Launched(
        BackendSettings(model_path=str(tiny_model_dir), model_label="fake", base_url=url + "/v1")
    )
    backend.start()
    killer = threading.Timer(0.5, proc.kill)
    killer.start()
    try:
        sessions = [[Request(prompt_ids=prompt(32, k), max_new_tokens=400)] for k in range(4)]
        outs, _ = run_level(backend, sessions, LoadSettings(concurrency=4, client_procs=2))
    finally:
        killer.cancel()
        backend.close()
    errors = [o.error for (o,) in outs]
    assert all(
        e and e.startswith("RuntimeError: the server exited with -9; see its log (") for e in errors
    ), errors


async def _split_end_server(connections: list[int], end_after_s: float):
    """A keep-alive HTTP/1.1 server that streams one SSE chunk and ``data: [DONE]``, then sends the chunked
    body's end in a write of its own ``end_after_s`` later, as uvicorn does; counts the connections it
    accepts."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(1)
        while head := await reader.readuntil(b"\r\n\r\n"):
            length = next(
                int(line.split(b":")[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length")
            )
            await reader.readexactly(length)
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
            )
            choice = {"index": 0, "text": "x", "finish_reason": "length"}
            usage = {"prompt_tokens": 4, "completion_tokens": 1, "total_tokens": 5}
            for event in (json.dumps({"choices": [choice], "usage": usage}), "[DONE]"):
                data = f"data: {event}\n\n".encode()
                writer.write(b"%x\r\n%s\r\n" % (len(data), data))
            await writer.drain()
            await asyncio.sleep(end_after_s)
            writer.write(b"0\r\n\r\n")
            await writer.drain()

    return await asyncio.start_server(handle, "127.0.0.1", 0)


@pytest.mark.parametrize("end_after_s", [0.02, 2.0])
def test_the_client_keeps_its_connection_when_the_body_ends_in_a_later_write(
    end_after_s, monkeypatch
) -> None:
    """After [DONE] the client reads the body to its end, so that aiohttp keeps the connection: five
    requests in a row, one connection (released with the end unread, aiohttp closed it: five). A server
    whose end comes later than the client waits for (2 s, past ``DRAIN_S``, here 0.5 s) costs a new
    connection a request, and no request hangs or fails."""
    from llm_call_anatomy.backends.openai import lean_stream

    monkeypatch.setattr(lean_stream, "DRAIN_S", 0.5)
    connections: list[int] = []

    async def five() -> list:
        server = await _split_end_server(connections, end_after_s)
        port = server.sockets[0].getsockname()[1]
        client = LeanClientSpec(base_url=f"http://127.0.0.1:{port}/v1", model="m").build()
        try:
            return [
                await client.stream(Request(prompt_ids=prompt(4), max_new_tokens=1), TokenClock(lambda: None))
                for _ in range(5)
            ]
        finally:
            await client.aclose()
            server.close()

    outputs = asyncio.run(five())
    assert [o.finish_reason for o in outputs] == ["length"] * 5
    assert len(connections) == (1 if end_after_s < lean_stream.DRAIN_S else 5)


@pytest.mark.parametrize("idle_s", [0.0, 0.6])
def test_an_idle_connection_is_dropped_before_the_server_drops_it(idle_s, monkeypatch) -> None:
    """A user who thinks longer than ``KEEPALIVE_S`` (here 0.3 s) sends on a new connection, not on one a
    server may be closing at that instant (a reset in under a millisecond, once in 1,315 requests at a
    30 s think on the H100); one who does not think keeps its connection."""
    from llm_call_anatomy.backends.openai import lean_stream

    monkeypatch.setattr(lean_stream, "KEEPALIVE_S", 0.3)
    connections: list[int] = []

    async def two() -> list:
        server = await _split_end_server(connections, 0.0)
        port = server.sockets[0].getsockname()[1]
        client = LeanClientSpec(base_url=f"http://127.0.0.1:{port}/v1", model="m").build()
        try:
            outs = []
            for _ in range(2):
                request = Request(prompt_ids=prompt(4), max_new_tokens=1)
                outs.append(await client.stream(request, TokenClock(lambda: None)))
                await asyncio.sleep(idle_s)
            return outs
        finally:
            await client.aclose()
            server.close()

    outputs = asyncio.run(two())
    assert [o.finish_reason for o in outputs] == ["length"] * 2
    assert len(connections) == (2 if idle_s > lean_stream.KEEPALIVE_S else 1)


def test_the_keep_alive_is_shorter_than_the_servers() -> None:
    """uvicorn (vLLM's and SGLang's HTTP server) closes a connection idle for ``timeout_keep_alive``; the
    client must give it up first."""
    import inspect

    uvicorn = pytest.importorskip("uvicorn")
    from llm_call_anatomy.backends.openai import lean_stream

    server_s = inspect.signature(uvicorn.Config).parameters["timeout_keep_alive"].default
    assert server_s > lean_stream.KEEPALIVE_S
