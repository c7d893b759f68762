"""The report on failure paths: every request failed, bad lines in records.jsonl, an unwritable -o (#15.1,
#15.10)."""

from __future__ import annotations

import json

import pytest

from llm_call_anatomy.reports import build
from llm_call_anatomy.reports.__main__ import main
from tests.reports.records import record, write_run


def failed(workload: str, kind: str, **kw) -> dict:
    return record(
        workload=workload,
        kind=kind,
        mode=kw.pop("mode", "greedy"),
        case="N=16",
        error="InternalServerError: Error code: 500",
        backend="openai",
        **kw,
    )


@pytest.mark.parametrize("how", ["errors", "skipped at start", "errors without kind"])
def test_a_run_where_everything_failed_is_reported(tmp_path, how):  # 15.1
    if how == "errors":
        rows = [failed("lengths", "sweep"), failed("chat", "conversation", turn=0)]
    elif how == "skipped at start":
        rows = [
            record(
                backend="openai",
                workload=w,
                kind=None,
                mode=None,
                case=None,
                rep=None,
                temperature=None,
                skipped="failed to start: RuntimeError: cannot list the models",
            )
            for w in ("chat", "lengths")
        ]
    else:
        rows = [failed("lengths", None)]
    run = write_run(tmp_path / "run", rows)
    page = build([run], tmp_path / "report.html").read_text()
    assert "openai" in page
    assert "InternalServerError" in page or "failed to start" in page


def bad_run(tmp_path):
    good = json.dumps(
        record(
            workload="lengths",
            kind="sweep",
            mode="greedy",
            case="N=16",
            prompt_tokens=16,
            ttft_ms=3.0,
            decode_ms_per_token=1.0,
            output_tokens=4,
        )
    )
    lines = [
        good.encode(),
        b'{"run_id": "hand", "backend": "hf", "workl',  # cut short
        b"[1, 2, 3]",  # not an object
        json.dumps(
            record(workload="lengths", kind="sweep", case="N=32", ttft_ms="fast")
        ).encode(),  # wrong type
        b'{"run_id": "hand", "backend": "hf", "output_text": "\xff\xfe"}',  # invalid UTF-8
        b"",  # blank lines are not mistakes
        json.dumps({"run_id": "hand"}).encode(),  # no backend
    ]
    run = write_run(tmp_path / "run", [])
    (run / "records.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    return run


def test_bad_lines_are_counted_and_named(tmp_path, capsys):  # 15.10
    run = bad_run(tmp_path)
    assert main([str(run), "-o", str(tmp_path / "r.html")]) == 0
    err = capsys.readouterr().err
    assert "5 bad lines" in err and "2, 3, 4, 5, 7" in err
    page = (tmp_path / "r.html").read_text()
    assert "5 bad lines" in page and "2, 3, 4, 5, 7" in page


def test_an_unwritable_output_is_one_line(tmp_path, capsys):  # 15.10
    run = bad_run(tmp_path)
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert main([str(run), "-o", str(blocker / "r.html")]) == 2
    err = [
        line for line in capsys.readouterr().err.splitlines() if line.startswith("python compare.py report")
    ]
    assert len(err) == 1 and "cannot write" in err[0]
    assert main([str(run), "-o", str(tmp_path)]) == 2  # a folder
