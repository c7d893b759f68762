"""Issue 44's fault probe against the fault-injecting server, end to end (items 2, 4 and 11; item 1 is
``test_resume_search.py``): a setting the backend cannot apply is refused before a request is sent, a run
with failed requests cannot pass the regression gate (not even against itself), and its exports are
written whole (re-exported into the same folder, ``csv/`` holds that export's tables only; a full disk is
exit 1 naming the table)."""

from __future__ import annotations

import errno
import os

import pytest

from llm_call_anatomy.reports import export
from llm_call_anatomy.reports.__main__ import main as report
from llm_call_anatomy.reports.gate import FAILURES
from tests.conftest import compare
from tests.harness.faulty_server import Faults, faulty_server

pytestmark = [pytest.mark.openai, pytest.mark.slow]  # one compare.py run of two levels

LOAD = (
    "levels=1:2,rates=,requests=8,output_tokens=4,prompt_tokens=48,shared_prefix_tokens=0,warmup_requests=0"
)


def run(url: str, out, *extra: str):
    return compare(
        "--backend", "openai", "--base-url", url, "--model", "tiny", "--workloads", "load", "--load", LOAD,
        "--out", str(out), "--no-report", *extra, timeout=240, check=False,
    )  # fmt: skip


def test_the_fault_probe(tmp_path, capsys, monkeypatch):
    out = tmp_path / "run"
    with faulty_server(Faults(every_nth_429=4)) as server:
        refused = run(server.url, tmp_path / "nocache", "--no-prefix-caching")  # item 2
        assert refused.returncode == 2 and "--no-prefix-caching" in refused.stderr, refused.stderr[-2000:]
        tp = run(server.url, tmp_path / "tp", "--tp", "2")  # item 2's rule for every recorded setting
        assert tp.returncode == 2 and "--tp 2: --backend openai cannot apply it" in tp.stderr, tp.stderr
        assert server.completions == 0 and not (tmp_path / "nocache").exists()
        first = run(server.url, out)
        assert first.returncode == 1, first.stderr[-3000:]  # 429s: failed requests

    # item 4: a run with failed requests cannot pass the gate, not even against itself
    assert report(["--baseline", str(out), "--candidate", str(out)]) == 1
    said = capsys.readouterr().out
    assert FAILURES.upper() in said and said.rstrip().splitlines()[-1].startswith("FAIL"), said

    # item 11: csv/ holds the last export's tables only; a full disk is exit 1 naming the table
    page = tmp_path / "out" / "r.html"
    (page.parent / "csv").mkdir(parents=True)
    (page.parent / "csv" / "stale.csv").write_text("x\n")
    assert report([str(out), "--format", "csv", "-o", str(page)]) == 0
    tables = int(capsys.readouterr().out.rsplit("(", 1)[1].split()[0])
    files = sorted(p.name for p in (page.parent / "csv").iterdir())
    assert len(files) == tables and "stale.csv" not in files
    real = export.write_table

    def full(df, path):
        if path.name == "figures.csv":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(df, path)

    monkeypatch.setattr(export, "write_table", full)
    assert report([str(out), "--format", "csv", "-o", str(page)]) == 1
    err = capsys.readouterr().err
    assert "figures.csv" in err and "the disk is full" in err, err
    assert sorted(p.name for p in (page.parent / "csv").iterdir()) == files
