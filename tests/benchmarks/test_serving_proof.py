"""The serving proof's table (benchmarks/serving_proof.py): a real compare.py run with ``--backend openai``
against the paced fake engine server (benchmarks/fake_engine.py) for the project's side, and ``vllm bench
serve`` result files written as that tool writes them for the reference's; the ratios must be the project's
figures, computed here from the records by hand, over the reference's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.fake_engine import start
from benchmarks.serving_proof import main, table
from tests.conftest import compare, records

pytestmark = pytest.mark.openai
WORKLOAD = """workloads:
  - name: proof-fixed
    kind: load
    shape: fixed
    prompt_tokens: 64
    shared_prefix_tokens: [0]
    output_tokens: 6
    levels: [2, 4]
    requests: 8
"""


def bench_result(c: int, tok_s: float, ttft: float) -> dict:
    """The keys `vllm bench serve --save-result` writes that the table reads (and a few it does not)."""
    return {
        "date": "20261201-000000",
        "backend": "vllm",
        "max_concurrency": c,
        "completed": 4 * c,
        "duration": 1.0,
        "total_output_tokens": 256,
        "output_throughput": tok_s,
        "mean_ttft_ms": ttft * 1.1,
        "median_ttft_ms": ttft,
        "median_tpot_ms": 7.0,
        "median_itl_ms": 7.0,
        "request_throughput": 4.0,
    }


def test_the_table_compares_the_project_run_with_the_reference(tmp_path: Path) -> None:
    proc, url = start(0.004)
    try:
        (tmp_path / "proof.yaml").write_text(WORKLOAD)
        compare(
            "--backend",
            "openai",
            "--base-url",
            url + "/v1",
            "--workload-file",
            str(tmp_path / "proof.yaml"),
            "--out",
            str(tmp_path / "run"),
            "--no-report",
            "--client-procs",
            "2",
            timeout=300,
        )
    finally:
        proc.terminate()
        proc.join(5)
    ref = tmp_path / "reference"
    ref.mkdir()
    for c, tps, ttft in ((2, 400.0, 10.0), (4, 800.0, 12.0)):
        (ref / f"vllm-c{c}.json").write_text(json.dumps(bench_result(c, tps, ttft)))
    (ref / "warmup.json").write_text(json.dumps({**bench_result(2, 1.0, 1.0), "max_concurrency": None}))
    metrics = '# TYPE vllm:prefix_cache_{0}_total counter\nvllm:prefix_cache_{0}_total{{engine="0"}} {1}\n'
    ttft = (
        "# TYPE vllm:time_to_first_token_seconds histogram\n"
        'vllm:time_to_first_token_seconds_bucket{{engine="0",le="0.01"}} {0}\n'
        'vllm:time_to_first_token_seconds_bucket{{engine="0",le="0.02"}} {1}\n'
        'vllm:time_to_first_token_seconds_bucket{{engine="0",le="+Inf"}} {1}\n'
        'vllm:time_to_first_token_seconds_count{{engine="0"}} {1}\n'
        'vllm:time_to_first_token_seconds_sum{{engine="0"}} {2}\n'
    )
    (ref / "vllm-c2.metrics-before").write_text(
        metrics.format("queries", 1000.0) + metrics.format("hits", 500.0) + ttft.format(4, 10, 0.1)
    )
    (ref / "vllm-c2.metrics-after").write_text(  # 8 more requests, 0.072 s more: a mean of 9 ms
        metrics.format("queries", 1400.0) + metrics.format("hits", 600.0) + ttft.format(8, 18, 0.172)
    )
    result = table({"vllm": ref}, {"vllm": tmp_path / "run"})
    rows = {r["concurrency"]: r for r in result["rows"]}
    assert sorted(rows) == [2, 4]
    rs = records(tmp_path / "run")
    for c, tps, ttft in ((2, 400.0, 10.0), (4, 800.0, 12.0)):
        mine = [
            r
            for r in rs
            if r.get("load_concurrency") == c and r.get("rep") is not None and r.get("submit_s") is not None
        ]
        assert len(mine) == 8 and all(r["error"] is None for r in mine)
        window = max(r["finish_s"] for r in mine) - min(r["submit_s"] for r in mine)
        by_hand = sum(r["output_tokens"] for r in mine) / window
        row = rows[c]
        assert row["project_tok_s"] == pytest.approx(by_hand) and row["reference_tok_s"] == tps
        assert row["tok_s_ratio"] == pytest.approx(by_hand / tps, abs=1e-4)
        ttfts = sorted(r["ttft_ms"] for r in mine)
        assert row["project_ttft_p50_ms"] == pytest.approx((ttfts[3] + ttfts[4]) / 2)  # the median of 8
        assert row["ttft_p50_ratio"] == pytest.approx(row["project_ttft_p50_ms"] / ttft, abs=1e-4)
        assert row["project"]["client_procs"] == 2 and len(row["project"]["client_cpu_share"]) == 2
        assert all(len(r["chunk_times_s"]) == 6 for r in mine)
        # what the client added to the fake server's own TTFT (its /metrics histogram over the level)
        client_mean = sum(ttfts) / len(ttfts)
        server_mean = row["project"]["server_ttft_mean_ms"]
        assert server_mean is not None and 0 < server_mean < client_mean
        assert row["project_added_ttft_ms"] == pytest.approx(client_mean - server_mean, abs=0.051)
    # the reference's: its mean TTFT (1.1 x 10 ms) less the server's over its run (0.072 s / 8 requests)
    assert rows[2]["reference_server_ttft_mean_ms"] == pytest.approx(9.0)
    assert rows[2]["reference_added_ttft_ms"] == pytest.approx(2.0)
    assert rows[4]["reference_added_ttft_ms"] is None  # its run had no scrapes
    # the reference's prefix-cache hits between the scrapes around its run: (600 - 500) / (1400 - 1000)
    assert rows[2]["reference_cache_hit_share"] == 0.25 and rows[4]["reference_cache_hit_share"] is None
    out = tmp_path / "proof.json"
    assert (
        main(
            [
                "table",
                "--reference",
                f"vllm={ref}",
                "--project",
                f"vllm={tmp_path / 'run'}",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    assert json.loads(out.read_text())["rows"][0]["server"] == "vllm"


def test_the_server_line_is_the_harness_own(capsys, tiny_model_dir) -> None:
    import shlex

    from llm_call_anatomy.backends.openai.servers import VLLMServerBackend
    from llm_call_anatomy.contract.adapter import BackendSettings

    assert (
        main(
            [
                "command",
                "vllm",
                "--port",
                "8123",
                "--python",
                "/opt/py",
                "--model",
                "tiny",
                "--device",
                "cpu",
                "--random-weights",
            ]
        )
        == 0
    )
    words = shlex.split(capsys.readouterr().out.strip())
    settings = BackendSettings(
        model_path=str(tiny_model_dir),
        model_label="tiny",
        dtype="float32",
        device="cpu",
        random_weights=True,
        max_model_len=3072,
    )
    backend = VLLMServerBackend(settings)
    argv = backend.server_argv(8123)  # what --backend vllm-server starts
    start = words.index("/opt/py")
    assert (
        words[start + 1 :] == argv[1:]
    )  # the same flags, scheduler settings and --load-format dummy included
    assert words[:start] == [f"{k}={v}" for k, v in backend.server_env().items()]
    assert "--max-num-batched-tokens" in argv and "--load-format" in argv
