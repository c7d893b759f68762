"""The exports under hostile names and a full disk (issue 44, items 7 and 11, and "also seen"): a cell that
starts with = + - @ tab or CR is prefixed with ``'`` (OWASP's rule against CSV formula injection), a CSV file
name never starts with ``-``, ``csv/`` holds exactly the tables of the last export (written in a temporary
folder, then renamed), and a full disk while writing a table exits 1 naming that table and leaves the
earlier ``csv/`` whole."""

from __future__ import annotations

import csv
import errno
import json
import os

import pytest

from llm_call_anatomy.reports import export
from llm_call_anatomy.reports.__main__ import main
from tests.reports.test_report_many_users import load_run

HOSTILE = '=HYPERLINK("http://x","y")'


def renamed(run, name: str):
    path = run / "records.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    path.write_text("".join(json.dumps({**r, "workload": name}) + "\n" for r in rows))
    return run


def csv_cells(folder):
    for path in sorted(folder.glob("*.csv")):
        with path.open(newline="", encoding="utf-8") as f:
            for row in csv.reader(f):
                yield path.name, row


@pytest.mark.parametrize("name", [HOSTILE, "+1", "-x", "@SUM(A1)", "\tx", "\rx"])
def test_no_cell_starts_a_formula(tmp_path, capsys, name):
    run = renamed(load_run(tmp_path), name)
    assert main([str(run), "--format", "csv", "-o", str(tmp_path / "out" / "r.html")]) == 0
    capsys.readouterr()
    folder = tmp_path / "out" / "csv"
    seen = 0
    for file, row in csv_cells(folder):
        for cell in row:
            assert not cell.startswith(("=", "+", "-", "@", "\t", "\r")), (file, cell)
            seen += cell == "'" + name
    assert (
        seen or name != name.strip()
    )  # the name is there, neutralised (the report strips a leading tab, CR)
    assert not any(p.name.startswith("-") for p in folder.iterdir())


def test_a_csv_file_name_never_starts_with_a_dash():
    assert export.csv_name("-rf.levels") == "rf.levels.csv" and export.csv_name("---") == "table.csv"


def test_numbers_are_left_as_they_are():
    assert export._cell(-3.5) == -3.5 and export._cell("3 - 1") == "3 - 1" and export._cell("-") == "'-"
    assert (
        export._cell("\tx") == "'\tx" and export._cell("\rx") == "'\rx" and export._cell(["=1"]) == '["=1"]'
    )


def test_csv_holds_only_the_last_exports_tables(tmp_path, capsys):
    out = tmp_path / "out" / "r.html"
    first = load_run(tmp_path / "a")
    assert main([str(first), "--format", "csv", "-o", str(out)]) == 0
    (out.parent / "csv" / "stale.csv").write_text("x\n")
    second = renamed(load_run(tmp_path / "b"), "other")
    assert main([str(second), "--format", "csv", "-o", str(out)]) == 0
    said = capsys.readouterr().out.strip().splitlines()[-1]
    files = sorted(p.name for p in (out.parent / "csv").iterdir())
    assert said.endswith(f"({len(files)} tables)") and "stale.csv" not in files, (said, files)
    assert not any(name.startswith("lf") for name in files)  # nothing of the first run's workload
    assert [p.name for p in out.parent.iterdir()] == ["csv"]  # no temporary folder left


def test_a_full_disk_exits_1_naming_the_table_and_keeps_the_older_export(tmp_path, capsys, monkeypatch):
    out = tmp_path / "out" / "r.html"
    run = load_run(tmp_path)
    assert main([str(run), "--format", "csv", "-o", str(out)]) == 0
    capsys.readouterr()
    before = {p.name: p.read_bytes() for p in (out.parent / "csv").iterdir()}
    real = export.write_table

    def full_at_caveats(df, path):
        if path.name == "caveats.csv":
            path.write_bytes(b"")
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(df, path)

    monkeypatch.setattr(export, "write_table", full_at_caveats)
    code = main([str(run), "--format", "csv", "-o", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(err) == 1, err
    assert "caveats.csv" in err[0] and "r.html" not in err[0] and "the disk is full" in err[0], err
    assert {p.name: p.read_bytes() for p in (out.parent / "csv").iterdir()} == before
    assert [p.name for p in out.parent.iterdir()] == ["csv"]
