"""The assembled report on a hand-made GPU run: roofline, launch overhead, block rounding, caveats, summary."""

from __future__ import annotations

import pytest

from reports.assemble import assemble, block_size
from reports.load import load
from tests.reports.records import conversation_records, record, sweep_records, write_run

PARAMS = 8_190_735_360


def gpu_env(names: list[str], random_weights: bool = False) -> dict:
    engines = {"vllm": {"block_size": 16}, "hf": {}, "hf-graphs": {}}
    return {
        "dtype": "bfloat16",
        "model": {"label": "Qwen/Qwen3-8B", "params": PARAMS, "dtype_bytes": 2, "random_weights": random_weights},
        "backends": {n: {"process": {"gpu": "NVIDIA H200"}, "engine": engines.get(n, {})} for n in names},
    }


@pytest.fixture
def report(tmp_path):
    rows = conversation_records()
    rows += sweep_records("hf", 30.0, 0.05, 20.0) + sweep_records("hf-graphs", 25.0, 0.05, 8.0) + sweep_records("vllm", 5.0, 0.01, 5.0)
    rows.append(record(backend="hf-graphs", workload="conversation", kind="conversation", mode="cached", case=None,
                       skipped="hf-graphs does not support prefix cache"))
    rows += [record(backend="sglang", workload=w, skipped="sglang is not installed here") for w in ("conversation", "sweep")]
    rows.append(record(backend="vllm", workload="sweep", kind="sweep", mode="greedy", case="N=64", rep=5, prompt_tokens=64,
                       ttft_ms=9.0, extra={"server_ttft_ms": 7.5}))
    run = write_run(tmp_path / "h200", rows, gpu_env(["hf", "hf-graphs", "vllm", "sglang"], random_weights=True))
    return assemble(load([run]))


def texts(report) -> str:
    return "\n".join(c.text for c in report.caveats)


def test_sections_backends_and_status(report):
    assert [s.name for s in report.sections] == ["conversation", "sweep"]
    assert report.ds.backends == ["hf", "vllm", "hf-graphs", "sglang"]
    states = {s.backend: s.state for s in report.status}
    assert states == {"hf": "ran", "vllm": "ran", "hf-graphs": "partly", "sglang": "skipped"}
    conv = report.sections[0]
    assert conv.backends == ["hf", "vllm"]
    assert any("sglang: the whole workload skipped" in n for n in conv.notes)


def test_roofline_and_launch_overhead_caveats(report):
    t = texts(report)
    floor = PARAMS * 2 / 4800e9 * 1e3  # 3.41 ms on an H200
    assert f"{20 / floor:.1f}× the roofline" in t
    explained = (20.0 - 8.0) / (20.0 - floor)  # 72%
    assert f"launch overhead explains {100 * explained:.0f}% of HF eager's gap" in t
    assert "for comparison: vllm 5 ms (1.5× floor)" in t


def test_block_rounding_random_weights_and_server_caveats(report):
    t = texts(report)
    assert "vllm reused 22 fewer tokens than shared on 2 turns: block granularity (block 16" in t  # (90-80) + (220-208)
    assert t.startswith("Weights are random")
    assert "vllm: the client saw TTFT 1.50 ms" in t
    assert "vllm: cached and full chose a different first token on 1 of 9 calls (turn 3)" in t
    assert "hf: below N≈600 tokens every prefill costs about the same" in t  # a / b = 30 / 0.05


def test_summary_jobs(report):
    jobs = {j.job: j for j in report.jobs}
    decode = jobs["Generating tokens (sweep)"]
    assert decode.best == "vllm" and [b for b, _ in decode.values] == ["vllm", "hf-graphs", "hf"]
    chat = jobs["Multi-turn chat (conversation)"]
    assert chat.best == "hf"  # cached sums: hf 36 ms, vllm 66 ms


def test_block_size_keys():
    assert block_size({"block_size": 16}) == 16
    assert block_size({"page_size": 1}) == 1
    assert block_size({}) is None and block_size({"block_size": None}) is None


def test_cpu_run_says_roofline_not_applicable(tmp_path):
    run = write_run(tmp_path / "cpu", sweep_records("hf", 30.0, 0.05, 20.0),
                    {"dtype": "float32", "model": {"params": 100}, "backends": {"hf": {"process": {"gpu": None}}}})
    report = assemble(load([run]))
    assert "No roofline for hf (CPU run: the GPU roofline is not applicable)." in texts(report)
    assert report.sections[0].data["vs_roof"].empty


def test_sweep_charts_draw_the_roofline(report):
    from reports import charts

    sweep = report.sections[1]
    for phase in ("prefill", "decode"):
        spec = charts.sweep_phase(sweep.data["lengths"], report.roofs, phase, report.ds.backends)
        values = next(iter(spec["datasets"].values()))
        series = {v["series"] for v in values}
        assert series == {"hf", "hf-graphs", "vllm", "roofline H200 SXM"}
        assert spec["layer"][0]["encoding"]["y"]["scale"]["type"] == "log"
        assert spec["layer"][0]["encoding"]["x"]["scale"]["type"] == "log"
    decode_floor = [v["ms"] for v in values if v["kind"] == "roofline"]
    assert decode_floor == [pytest.approx(PARAMS * 2 / 4800e9 * 1e3)] * 3  # one point per N, a flat line


def test_page_renders_server_timings_and_gpu_roofline(report):
    from reports.page import render

    html = render(report)
    assert "Client vs server TTFT" in html and "H200 SXM: 4,800 GB/s, 989 TFLOP/s (datasheet)" in html
    assert "decode ÷ floor" in html
