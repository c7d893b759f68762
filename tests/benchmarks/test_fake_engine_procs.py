"""Benchmark 4's fake engine as several processes on one port (benchmarks/fake_engine_procs.py) and the
benchmark (benchmarks/load_client.py) that drives it with the study's own lean client.

- Two processes behind one port: every request is served once by one of them (the merged log holds each
  response id once), both serve streams, and ``/metrics`` — whichever process answers the scrape — is the
  sum over both, so the harness's own server-side reading counts every request of the level.
- The benchmark on small levels: each level says whether the server fell behind its step (by the stated
  rule on its own send gaps, whatever this machine's speed), what it sent against its target pace, and how
  the requests spread over the processes; bad ``--server-procs`` / ``--levels`` exit 2 before anything runs.
"""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Iterator

import pytest

from benchmarks import load_client
from benchmarks.fake_engine_procs import STREAMS_PER_SERVER_PROC, auto_server_procs, start_procs
from llm_call_anatomy.backends.load_level import run_level
from llm_call_anatomy.backends.load_loop import LoadSettings
from llm_call_anatomy.backends.openai import OpenAIBackend
from llm_call_anatomy.contract.adapter import BackendSettings, Request

pytestmark = pytest.mark.openai
STEP_S = 0.005


@pytest.fixture(scope="module")
def two_procs() -> Iterator:
    server = start_procs(STEP_S, 2)
    yield server
    server.stop()


def _success_total(url: str) -> float:
    with urllib.request.urlopen(url + "/metrics") as resp:  # a new connection each time: any process answers
        text = resp.read().decode()
    return float(re.search(r"^vllm:request_success_total\{[^}]*\} (\S+)$", text, re.M).group(1))


def test_two_processes_serve_one_port_and_their_metrics_are_summed(two_procs, tiny_model_dir) -> None:
    backend = OpenAIBackend(
        BackendSettings(model_path=str(tiny_model_dir), model_label="fake", base_url=two_procs.url + "/v1")
    )
    backend.start()
    try:
        before = set(two_procs.log())
        sessions = [[Request(prompt_ids=[k + 1] * 64, max_new_tokens=6, ignore_eos=True)] for k in range(48)]
        outs, facts = run_level(backend, sessions, LoadSettings(concurrency=24, client_procs=1))
    finally:
        backend.close()
    assert all(o.error is None for (o,) in outs)
    log = {k: v for k, v in two_procs.log().items() if k not in before}
    ids = [o.output.extra["response_id"] for (o,) in outs]
    assert sorted(ids) == sorted(log) and len(set(ids)) == 48  # each request served once, by one process
    assert {k.split("-")[1] for k in log} == {"0", "1"}  # 24 connections over two listeners: both served
    assert all(len(e["sent"]) == 6 for e in log.values())
    server = facts.server_timings  # the harness's own scrape of /metrics, before and after the level
    assert server["ttft_n"] == server["e2e_n"] == 48 and server["itl_n"] == 48 * 5
    totals = {_success_total(two_procs.url) for _ in range(8)}
    assert totals == {float(len(two_procs.log()))}  # every scrape, whichever process answered it: the sum


def test_automatic_server_processes_follow_the_busiest_level_within_half_the_cores() -> None:
    per = STREAMS_PER_SERVER_PROC
    assert auto_server_procs(1, cpus=16) == 1 and auto_server_procs(per, cpus=16) == 1
    assert auto_server_procs(per + 1, cpus=16) == 2 and auto_server_procs(4 * per, cpus=16) == 4
    assert auto_server_procs(100 * per, cpus=16) == 8 and auto_server_procs(100 * per, cpus=2) == 1


def test_the_benchmark_flags_each_level_by_the_servers_own_pace(tmp_path) -> None:
    out = tmp_path / "b4.json"
    argv = ["--levels", "2,6", "--seconds", "0.3", "--tokens", "6", "--prompt-tokens", "64"]
    assert load_client.main([*argv, "--server-procs", "2", "--step-ms", "5", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["settings"]["server_procs"] == 2 and [r["concurrency"] for r in result["rows"]] == [2, 6]
    for r in result["rows"]:
        assert r["failed"] == 0 and r["server_procs"] == 2 and r["server_step_ms"] == 5
        assert r["server_fell_behind"] == (r["server_itl_ms_p50"] > load_client.SERVER_BEHIND * 5)
        assert sum(r["server_requests_per_proc"]) == r["requests"] and len(r["server_requests_per_proc"]) <= 2
        assert r["server_sent_tokens_per_s"] > 0 and r["server_pace_tokens_per_s"] == r["concurrency"] / 0.005
        assert r["server_side"]["ttft_n"] == r["requests"]  # the summed /metrics, read by the harness
    assert "server ITL p50 ms (step)" in load_client.table(result["rows"])


@pytest.mark.parametrize(
    "bad", [["--server-procs", "0"], ["--server-procs", "-1"], ["--levels", "0,4"], ["--levels", "a"]]
)
def test_bad_input_exits_2_before_anything_runs(bad, capsys) -> None:
    with pytest.raises(SystemExit) as stop:
        load_client.main(bad)
    assert stop.value.code == 2 and bad[0] in capsys.readouterr().err
