"""The benchmark scripts' arithmetic and tables (the measuring itself runs on the GPU)."""

from __future__ import annotations

import json

from benchmarks import overhead, study_time
from tests.conftest import compare


def test_overhead_target_is_2_percent_or_0_2_ms():
    assert overhead.within_target(100.0, 98.5)  # 1.5 ms above, 2 % of 98.5 = 1.97
    assert not overhead.within_target(100.0, 97.0)
    assert overhead.within_target(5.15, 5.0)  # 0.15 ms: under the 0.2 ms floor
    assert not overhead.within_target(5.3, 5.0)


def test_overhead_table_uses_medians():
    rows = [{"backend": "x", "N": 256, "reps": 3,
             "adapter": [(10.0, 1.0, 100.0), (11.0, 1.1, 110.0), (30.0, 9.0, 300.0)],
             "raw": [(10.0, 1.0, 99.0), (10.5, 1.0, 100.0), (10.2, 1.0, 101.0)]}]
    (s,) = overhead.summarise(rows)
    assert s["ttft_ms"] == (11.0, 10.2) and s["decode_ms_per_token"] == (1.1, 1.0)
    assert "| x | 256 | 11.00 / 10.20 |" in overhead.table(rows)


def test_overhead_benchmark_runs_inside_the_hf_study(tmp_path, monkeypatch):
    monkeypatch.setenv("LCA_OVERHEAD_DIR", str(tmp_path / "oh"))
    out = tmp_path / "run"
    compare("--backend", "hf", "--workloads", "sweep", "--repeats", "1", "--no-report", "--out", str(out))
    rows = json.loads((tmp_path / "oh" / "overhead-hf.json").read_text())
    assert [r["N"] for r in rows] == [256, 1024]
    assert all(len(r["adapter"]) == len(r["raw"]) == r["reps"] for r in rows)
    table = study_time.table(study_time.rows([out]))
    assert "| hf | run |" in table and "sweep s" in table
