"""The study from another directory (#20): relative --out and --workload-file are the caller's, not the
checkout's; the child process (started elsewhere) gets absolute paths; the report is written."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import ROOT, records

ONE_QUESTION = """\
workloads:
  - name: mine
    kind: template
    max_new_tokens: 4
    system: Answer with the short answer only.
    questions:
      - {question: "How many bits are in a byte?", answer: "8"}
    formats:
      - name: chat_template
"""


def test_compare_from_another_directory_writes_under_the_callers_directory(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "studies").mkdir(parents=True)
    (elsewhere / "studies" / "mine.yaml").write_text(ONE_QUESTION)
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "compare.py"),
            "--backend",
            "hf",
            "--model",
            "tiny",
            "--repeats",
            "1",
            "--workload-file",
            "studies/mine.yaml",
            "--out",
            "reltest",
        ],
        cwd=elsewhere,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = elsewhere / "reltest"
    rows = [r for r in records(out) if r["workload"] == "mine"]
    assert rows and not any(r.get("error") or r.get("skipped") for r in rows)
    assert (out / "report.html").is_file()
    assert not (ROOT / "reltest").exists()
    args = json.loads((out / "env.json").read_text())["args"]
    assert args["out"] == str(out) and args["workload_file"] == [str(elsewhere / "studies" / "mine.yaml")]
