"""What a run says at its end (#43): a run that measured nothing (every backend skipped, or every request
failed) exits 1 with a last line that says so."""

from __future__ import annotations

import importlib.util

import pytest

from harness.run_summary import nothing_measured
from tests.conftest import compare


def request(backend="hf", case="C=2", c=2, submit=0.0, finish=1.0, ttft=100.0, tpot=10.0, tokens=8, **kw):
    return {
        "backend": backend,
        "engine_start": 0,
        "workload": "load-fixed",
        "mode": "S=0",
        "case": case,
        "rep": 0,
        "load_concurrency": c,
        "submit_s": submit,
        "finish_s": finish,
        "ttft_ms": ttft,
        "decode_ms_per_token": tpot,
        "output_tokens": tokens,
        "error": None,
        "skipped": None,
        **kw,
    }


def level_record(backend="hf", case="C=2", c=2, **facts):
    return {"backend": backend, "workload": "load-fixed", "mode": "S=0", "case": case, "rep": None,
            "load_concurrency": c, "extra": {"level": {"think_time_s": 0.0, **facts}}}  # fmt: skip


LEVEL = [
    request(submit=0.0, finish=1.0, ttft=100.0, tpot=10.0),
    request(submit=0.0, finish=1.5, ttft=200.0, tpot=12.0),
    request(submit=1.0, finish=2.0, ttft=300.0, tpot=14.0),
    request(submit=1.5, finish=1.6, error="HTTP 500", ttft=None, tpot=None, tokens=None),
    level_record(),
]


def test_nothing_measured_says_why_in_one_line():
    skipped = {"backend": "openai", "workload": "json", "skipped": "openai is not installed here (httpx)"}
    assert nothing_measured([skipped], ["openai"]) == (
        "nothing was measured: openai was skipped: openai is not installed here (httpx)"
    )
    two = [skipped, {**skipped, "backend": "vllm", "skipped": "vllm cannot be imported here"}]
    assert nothing_measured(two, ["openai", "vllm"]) == (
        "nothing was measured: every backend was skipped (openai, vllm: each reason is above)"
    )
    failed = [r for r in LEVEL if r.get("rep") is not None]
    failed = [{**r, "error": "HTTP 500\nbody"} for r in failed] + [
        LEVEL[-1]
    ]  # the level record is no request
    said = nothing_measured([skipped, *failed], ["openai", "hf"])
    assert said == "nothing was measured: openai was skipped; hf: every request failed (first: HTTP 500)"
    assert "\n" not in said
    assert nothing_measured([skipped, *LEVEL], ["openai", "hf"]) is None  # hf measured something
    assert nothing_measured(LEVEL, ["hf"]) is None


@pytest.mark.skipif(importlib.util.find_spec("sglang") is not None, reason="sglang is installed here")
def test_a_run_whose_every_backend_was_skipped_exits_1_and_says_so_last(tmp_path):
    proc = compare("--backend", "sglang", "--model", "tiny", "--workloads", "template", "--repeats", "1",
                   "--out", str(tmp_path / "run"), "--no-report", check=False, timeout=300)  # fmt: skip
    assert proc.returncode == 1, proc.stderr[-3000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert last == (
        "compare.py: nothing was measured: sglang was skipped: sglang is not installed here (sglang) (exit 1)"
    )
