"""A damaged level record (a value of the wrong type in ``extra.level``: contract.level_facts) stops the
report with one line that names the run, the level and the key, and exit code 2, as bad input does; never a
traceback from deep in an analysis."""

from __future__ import annotations

import json
import subprocess
import sys

from llm_call_anatomy.reports.__main__ import main
from tests.conftest import ROOT
from tests.reports.records import write_run
from tests.reports.test_report_many_users import level_records

SAID = (
    "error: run damaged, level vllm lf/S=0 C=4: a damaged level record: "
    "extra.level.kv_cache_usage_peak is str 'high', not float"
)


def damaged_run(tmp_path):
    rows = level_records("vllm", 1, 0.1, "batched by the engine") + level_records(
        "vllm", 4, 0.1, "batched by the engine"
    )
    level = next(r for r in rows if r["rep"] is None and r["load_concurrency"] == 4)
    level["extra"]["level"]["kv_cache_usage_peak"] = "high"  # a hand edit, a foreign writer
    return write_run(tmp_path / "damaged", rows)


def test_a_damaged_level_record_is_one_line_and_exit_2(tmp_path, capsys):
    run = damaged_run(tmp_path)
    assert main([str(run)], prog="report") == 2
    out = capsys.readouterr()
    assert out.err == f"report: {SAID}\n" and out.out == ""
    assert not (run / "report.html").exists()


def test_the_module_says_it_without_a_traceback(tmp_path):
    run = damaged_run(tmp_path)
    proc = subprocess.run(
        [sys.executable, "-m", "llm_call_anatomy.reports", str(run)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines() == [f"python compare.py report: {SAID}"]
    assert "Traceback" not in proc.stderr
    assert json.loads((run / "records.jsonl").read_text().splitlines()[-1])["rep"] is None  # left as it was
