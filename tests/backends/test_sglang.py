"""The SGLang adapter. SGLang has no CPU build, so CI checks: the parsers on answers recorded on an
H200 (``tests/fixtures/sglang/``, see its README), the streamed request path around a recorded engine,
and the skip path through the real CLI; the request and engine settings against SGLang 0.5.17's own
field names are in ``test_sglang_config.py``. The engine itself runs in the ``gpu``+``sglang`` test, on
a CUDA machine with SGLang installed:

    LCA_CACHE=/tmp/lca PYTHONPATH=/tmp/site-sgl \\
        python -m pytest -m "gpu and sglang" tests/backends/test_sglang.py
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import math
from pathlib import Path

import jsonschema
import pytest

from llm_call_anatomy import backends
from llm_call_anatomy.backends.base import BackendUnavailable
from llm_call_anatomy.backends.sglang import SGLangBackend
from llm_call_anatomy.backends.sglang.meta import (
    EngineAbort,
    engine_timing,
    flush_succeeded,
    parse_meta_info,
    to_raw_output,
)
from llm_call_anatomy.contract.adapter import BackendSettings, Request
from tests.conftest import compare, records

SGLANG_MISSING = importlib.util.find_spec("sglang") is None
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "sglang"


def settings(**kw) -> BackendSettings:
    return BackendSettings(model_path="/models/m", model_label="m", **kw)


def load_fixture(name: str) -> dict:
    path = FIXTURES / name
    if not path.exists():
        pytest.skip(f"{path} is missing: record it with benchmarks/record_sglang_fixtures.py on a GPU")
    return json.loads(path.read_text())


# --- flush answers, meta_info edge cases ------------------------------------------------------------
@dataclasses.dataclass
class FlushAnswer:  # the shape of 0.5.17's FlushCacheReqOutput
    success: bool
    message: str = ""


@pytest.mark.parametrize(
    ("answer", "ok"),
    [(True, True), (False, False), (FlushAnswer(True), True), (FlushAnswer(False, "busy"), False),
     ({"success": True}, True), (None, False), ("done", False)],
)  # fmt: skip
def test_flush_answers(answer, ok):
    got, why = flush_succeeded(answer)
    assert got is ok and (ok or why)


def test_an_abort_raises_and_bad_stamps_give_no_timing():
    with pytest.raises(EngineAbort, match="grammar"):
        parse_meta_info({"finish_reason": {"type": "abort", "message": "bad grammar"}})
    stamps = {"request_received_ts": 100.0, "prefill_finished_time": 100.02, "request_finished_ts": 100.05}
    ttft, decode, _ = engine_timing(stamps, completion_tokens=4)
    assert ttft == pytest.approx(20.0) and decode == pytest.approx(10.0)
    assert engine_timing(stamps, completion_tokens=1)[1] is None  # no token after the first
    assert engine_timing({**stamps, "prefill_finished_time": 99.0}, 4)[:2] == (None, None)  # out of order
    assert engine_timing({**stamps, "request_received_ts": True}, 4)[:2] == (None, None)
    assert engine_timing({}, 4)[:2] == (None, None)


# --- answers recorded on the H200 -------------------------------------------------------------------
def adapter_cases(doc: dict) -> dict[str, dict]:
    return {name: case for name, case in doc["cases"].items() if "request" in case}


def test_recorded_answers_parse_into_the_adapters_output():
    doc = load_fixture("meta_info.json")
    cases = adapter_cases(doc)
    assert {"plain", "logprobs", "json_schema", "turn1", "turn2", "turn2_full"} <= set(cases)
    assert doc["environment"]["enable_metrics"] is True and not doc["errors"]
    for name, case in cases.items():
        request, response = case["request"], case["response"]
        out = to_raw_output(response, request["prompt_ids"], top_k=request["top_logprobs"])
        meta = response["meta_info"]
        assert out.token_ids == response["output_ids"] and len(out.token_ids) == meta["completion_tokens"]
        assert out.finish_reason in ("stop", "length"), name
        assert out.prompt_ids_used == request["prompt_ids"]  # echoed by return_prompt_token_ids
        assert out.extra["prompt_tokens_match"] is True
        assert out.cached_tokens == case["expected_cached_tokens"], name
        assert 0 < out.engine_ttft_ms <= out.extra["engine_e2e_ms"]
        assert out.engine_ttft_ms == pytest.approx(case["result"]["ttft_ms"])  # what the GPU run computed
        if len(out.token_ids) > 1:
            assert out.engine_decode_ms_per_token > 0
        if request["ignore_eos"]:
            assert out.finish_reason == "length" and len(out.token_ids) == request["max_new_tokens"]


def test_recorded_shared_prefix_is_reused_to_the_token():
    doc = load_fixture("meta_info.json")
    turns = doc["turns"]
    assert 0 < turns["shared_prefix_tokens"] < turns["turn1_tokens"]  # the chat template rewrites the tail
    turn2 = doc["cases"]["turn2"]["response"]["meta_info"]
    assert turn2["cached_tokens"] == turns["shared_prefix_tokens"]
    assert doc["cases"]["turn2_full"]["response"]["meta_info"]["cached_tokens"] == 0


def test_recorded_step0_candidates():
    case = load_fixture("meta_info.json")["cases"]["logprobs"]
    out = to_raw_output(case["response"], case["request"]["prompt_ids"], top_k=10)
    cands = out.top_candidates
    logprobs = [c.logprob for c in cands]
    assert len(cands) == 10 and all(math.isfinite(lp) and lp <= 0 for lp in logprobs)
    assert logprobs == sorted(logprobs, reverse=True)
    assert all(isinstance(c.text, str) and c.text for c in cands) and all(c.logit is None for c in cands)
    greedy = {c.token_id: c.logprob for c in cands}
    assert greedy.get(out.token_ids[0]) == pytest.approx(logprobs[0])  # greedy took a top-scoring token


def test_recorded_constrained_output_is_compact_valid_json():
    doc = load_fixture("meta_info.json")
    schema = json.loads(json.dumps(doc["cases"]["json_schema"]["request"]["json_schema"]))
    for name in ("json_schema", "json_schema_after_flush"):
        case = doc["cases"][name]
        out = to_raw_output(case["response"], case["request"]["prompt_ids"])
        assert out.finish_reason == "stop"
        jsonschema.validate(json.loads(out.text), schema)
        assert "\n" not in out.text and "  " not in out.text  # no free whitespace


def test_recorded_public_generate_stream_and_flush():
    doc = load_fixture("meta_info.json")
    public = doc["cases"]["public_generate"]["raw"]
    assert {"text", "output_ids", "meta_info"} <= set(public) and "prompt_token_ids" not in public
    needed = {"finish_reason", "prompt_tokens", "completion_tokens", "cached_tokens", "e2e_latency"}
    timing = {"request_received_ts", "prefill_finished_time", "request_finished_ts", "forward_entry_time"}
    assert needed | timing <= set(public["meta_info"])
    stream = doc["cases"]["stream"]["raw"]
    arrivals = stream["arrivals_ms_and_ids"]
    assert [n for _, n in arrivals] == list(range(1, len(arrivals) + 1))  # one chunk per token
    engine_ttft, _, _ = engine_timing(stream["last"]["meta_info"], len(arrivals))
    assert 0 < engine_ttft <= arrivals[0][0]  # the engine stamps its first token before we receive it
    assert "success=True" in doc["cases"]["flush_cache"]["raw"]


class StreamingEngine:
    """Stands in for ``sglang.Engine`` in the adapter's streamed request path: replays a response
    recorded on the H200 as the chunks SGLang 0.5.17 streams (one per token, all output ids so far),
    ``output_top_logprobs`` either cumulative or per chunk."""

    def __init__(self, response: dict, incremental_logprobs: bool = False) -> None:
        self.response, self.incremental = response, incremental_logprobs
        self.calls: list[dict] = []

    def flush_cache(self):
        return {"success": True, "message": ""}

    def generate(self, stream: bool = False, **fields):
        self.calls.append({**fields, "stream": stream})
        ids, meta = self.response["output_ids"], self.response["meta_info"]
        rows = meta.get("output_top_logprobs") or []
        for n in range(1, len(ids) + 1):
            top = rows[n - 1 : n] if self.incremental else rows[:n]
            yield {**self.response, "output_ids": ids[:n], "meta_info": {**meta, "output_top_logprobs": top}}


def streaming_backend(engine: StreamingEngine) -> SGLangBackend:
    backend = object.__new__(SGLangBackend)  # no sglang here: the adapter around a recorded engine
    backend.settings, backend.engine, backend.direct = settings(), engine, False
    backend.use_metrics, backend.flushes, backend.flush_refusals, backend.notes = True, 0, 0, []
    return backend


@pytest.mark.parametrize("incremental", [False, True])
def test_every_request_is_streamed_and_timed_at_the_caller_with_the_engine_figures_beside(incremental):
    case = load_fixture("meta_info.json")["cases"]["logprobs"]
    engine = StreamingEngine(case["response"], incremental_logprobs=incremental)
    backend = streaming_backend(engine)
    req = case["request"]
    result = backend.generate(Request(prompt_ids=req["prompt_ids"], max_new_tokens=4, top_logprobs=10))
    assert engine.calls[0]["stream"] is True and engine.calls[0]["return_logprob"] is True
    assert (
        result.timing_source == "in-process-stream" and result.ttft_ms > 0 and result.decode_ms_per_token >= 0
    )
    expected = to_raw_output(case["response"], req["prompt_ids"], top_k=10)
    assert result.engine_ttft_ms == expected.engine_ttft_ms and result.engine_ttft_ms > 0
    assert result.output.token_ids == expected.token_ids and len(result.output.token_ids) == 4
    assert [c.token_id for c in result.output.top_candidates] == [c.token_id for c in expected.top_candidates]


def test_recorded_end_to_end_run_on_the_h200():
    path = FIXTURES / "e2e_records.jsonl"
    if not path.exists():
        pytest.skip(f"{path} is missing")
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    measured = [r for r in rows if not r["skipped"]]
    assert [r["skipped"] for r in rows if r["skipped"]] == ["sglang does not support attentions"]
    assert all(r["error"] is None and r["timing_source"] == "engine-metrics" for r in measured)
    assert all(r["prompt_ids_match"] is True for r in measured)
    cached = [r for r in measured if r["workload"] == "conversation" and r["mode"] == "cached"]
    assert len(cached) == 10 and all(r["cached_tokens"] == (r["shared_prefix_tokens"] or 0) for r in cached)
    others = [r for r in measured if not (r["workload"] == "conversation" and r["mode"] == "cached")]
    assert others and all(r["cached_tokens"] == 0 for r in others)
    constrained = [r for r in measured if r["workload"] == "json" and r["mode"] == "constrained"]
    assert constrained and all(r["valid_json"] is True for r in constrained)
    env = json.loads((FIXTURES / "e2e_env.json").read_text())["backends"]["sglang"]["engine"]
    assert env["page_size"] == 1 and env["radix_cache"] is True and env["flush_refusals"] == 0


# --- without sglang: the skip path through the real CLI ---------------------------------------------
@pytest.mark.skipif(not SGLANG_MISSING, reason="sglang is installed here")
def test_registry_loads_the_adapter_and_construction_says_sglang_is_missing():
    assert backends.resolve("sglang") is SGLangBackend
    with pytest.raises(BackendUnavailable, match="sglang is not installed here"):
        SGLangBackend(settings())


@pytest.mark.slow
@pytest.mark.skipif(not SGLANG_MISSING, reason="sglang is installed here")
def test_cli_skips_sglang_per_workload_and_runs_hf(tmp_path):
    out = tmp_path / "run"
    compare("--backend", "sglang,hf", "--repeats", "1", "--json-calls", "1", "--workloads", "sweep,json",
            "--no-report", "--out", str(out))  # fmt: skip
    rows = records(out)
    skipped = [r for r in rows if r["backend"] == "sglang"]
    assert sorted(r["workload"] for r in skipped) == ["json", "sweep"]
    assert all(r["skipped"].startswith("sglang is not installed") for r in skipped)
    hf = [r for r in rows if r["backend"] == "hf"]
    assert {r["workload"] for r in hf} == {"json", "sweep"}
    assert all(r["skipped"] is None and r["error"] is None and r["ttft_ms"] > 0 for r in hf)
    env = json.loads((out / "env.json").read_text())["backends"]
    assert env["sglang"]["skipped"].startswith("sglang is not installed") and "engine" in env["hf"]


# --- the engine, on a GPU ----------------------------------------------------------------------------
def gpu_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


@pytest.mark.gpu
@pytest.mark.sglang
@pytest.mark.slow
@pytest.mark.skipif(SGLANG_MISSING or not gpu_available(), reason="needs sglang and a CUDA GPU")
def test_engine_on_gpu_reuses_the_shared_prefix_and_flushes(tmp_path):
    out = tmp_path / "run"
    compare("--backend", "sglang", "--model", "qwen3-8b-shape", "--random-weights", "--repeats", "1",
            "--json-calls", "1", "--workloads", "conversation,json", "--no-report",
            "--out", str(out))  # fmt: skip
    rows = [r for r in records(out) if not r["skipped"]]
    assert rows and all(r["error"] is None and r["timing_source"] == "in-process-stream" for r in rows)
    assert all(r["prompt_ids_match"] is True and r["ttft_ms"] > 0 and r["engine_ttft_ms"] > 0 for r in rows)
    for r in rows:
        if r["mode"] == "cached":
            assert r["cached_tokens"] == min(r["shared_prefix_tokens"] or 0, r["prompt_tokens"] - 1), r
        else:
            assert r["cached_tokens"] == 0, r
    assert all(r["valid_json"] for r in rows if r["mode"] == "constrained")


def test_step_logprobs_per_output_position_best_first():
    from llm_call_anatomy.backends.sglang.meta import step_logprobs

    meta = {
        "output_top_logprobs": [
            [(-0.1, 5, None), (-2.0, 7, None), (-3.0, 9, None)],
            [(-1.5, 3, "a"), (-0.2, 4, "b")],
        ]
    }
    assert step_logprobs(meta, 2) == [[[5, -0.1], [7, -2.0]], [[4, -0.2], [3, -1.5]]]
    assert step_logprobs(meta, 0) is None and step_logprobs({}, 2) is None
