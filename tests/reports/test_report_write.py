"""The report is written whole or not at all (issue 26, item 10): a full disk while writing it leaves an
older page as it was, says so in one line, and compare.py's report step reports the failure."""

from __future__ import annotations

import errno
import os

import pytest

from llm_call_anatomy.reports import build
from llm_call_anatomy.reports.runs import ReportError
from tests.reports.records import record, write_run


def full_disk(*_args):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def small_run(tmp_path):
    return write_run(
        tmp_path / "run", [record(workload="w", kind="template", mode="m", case="c", ttft_ms=5.0)]
    )


def test_a_full_disk_leaves_the_older_page_whole(tmp_path, monkeypatch):
    run = small_run(tmp_path)
    page = build([run], run / "report.html")
    good = page.read_bytes()
    monkeypatch.setattr(os, "fsync", full_disk)  # where a full disk shows: the data reaching the disk
    with pytest.raises(ReportError, match="No space left on device"):
        build([run], run / "report.html")
    assert page.read_bytes() == good
    assert [p.name for p in run.iterdir() if p.name.startswith(".report")] == []  # no temporary file left


def test_compare_reports_a_report_it_could_not_write(tmp_path, monkeypatch, capsys):
    from llm_call_anatomy.harness.backend_runs import build_report

    run = small_run(tmp_path)
    monkeypatch.setattr(os, "fsync", full_disk)
    assert build_report(run) is False
    assert "report not built: cannot write" in capsys.readouterr().err
