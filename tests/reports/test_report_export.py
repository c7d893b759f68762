"""The exports (``--format json,csv``): their figures are the page's, read back from the HTML; the CSV
files hold the JSON's rows; an unknown format is one line naming the known ones and writes nothing."""

from __future__ import annotations

import csv
import json
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest

from llm_call_anatomy.reports import fmt
from llm_call_anatomy.reports.__main__ import main
from tests.reports.records import FIXTURES, RUNS
from tests.reports.test_report_many_users import load_run


class Tables(HTMLParser):
    """Every ``<table>`` of a page as (header, rows), each cell's text with ``<br>`` as a newline."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: list[tuple[list[str], list[list[str]]]] = []
        self.row: list[str] | None = None
        self.cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append(([], []))
        elif tag == "tr":
            self.row = []
        elif tag in ("td", "th"):
            self.cell = []
        elif tag == "br" and self.cell is not None:
            self.cell.append("\n")

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self.cell is not None and self.row is not None:
            self.row.append("".join(self.cell).strip())
            self.cell = None
        elif tag == "tr" and self.row is not None and self.tables:
            header, rows = self.tables[-1]
            header.extend(self.row) if not header else rows.append(self.row)
            self.row = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell.append(data)


def page_tables(html: str) -> list[tuple[list[str], list[list[str]]]]:
    parser = Tables()
    parser.feed(html)
    return parser.tables


def table_with(tables, first_column: str, *columns: str) -> list[dict[str, str]]:
    """Every row of the page's tables that start with ``first_column`` and have ``columns``, as dicts."""
    out = []
    for header, rows in tables:
        if header and header[0] == first_column and all(c in header for c in columns):
            out += [dict(zip(header, r, strict=False)) for r in rows]
    return out


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> Path:
    """The recorded runs and a load run, reported on with every format."""
    tmp = tmp_path_factory.mktemp("export")
    runs = [Path(shutil.copytree(FIXTURES / name, tmp / name)) for name in RUNS]
    load = tmp / "load"
    load.mkdir()
    runs.append(load_run(load))
    assert main([*map(str, runs), "-o", str(tmp / "out" / "report.html"), "--format", "html,json,csv"]) == 0
    return tmp / "out"


def test_summary_rows_are_the_pages_with_their_numbers(exported):
    summary = json.loads((exported / "summary.json").read_text())
    html = (exported / "report.html").read_text()
    page_jobs = {r["job"]: r for r in table_with(page_tables(html), "job", "figure compared")}
    jobs = list(dict.fromkeys(r["job"] for r in summary["summary"]))
    assert (
        set(jobs) == set(page_jobs) and len(jobs) >= 8
    )  # every row of the page, latency, quality, load and facts
    latency = 0
    for job in jobs:
        rows = [r for r in summary["summary"] if r["job"] == job]
        cell = page_jobs[job][next(c for c in page_jobs[job] if c.startswith("every backend"))]
        assert cell.split("\n")[: len(rows)] == [f"{r['backend']} {r['value']}" for r in rows], (
            job
        )  # best first, as shown
        assert page_jobs[job]["figure compared"] == rows[0]["figure"]
        for r in rows:
            if r["median"] is not None:  # the number behind the text is the one the page printed
                latency += 1
                assert r["value"].startswith(f"{fmt.n(r['median'])} {r['unit']}"), r
                if r["spread_within_start"] is not None:
                    assert f"±{fmt.rel(r['spread_within_start'])}" in r["value"]
    assert latency >= 6


def test_load_levels_are_the_pages_level_tables(exported):
    summary = json.loads((exported / "summary.json").read_text())
    load = next(w for w in summary["workloads"] if w["kind"] == "load")
    levels = load["tables"]["levels"]
    page = {
        (r["variant"], r["load"], r["output tok/s"]): r
        for r in table_with(page_tables((exported / "report.html").read_text()), "variant", "output tok/s")
    }
    assert len(levels) == 4 and len(page) == 4  # two backends x two levels
    for lv in levels:
        key = (f"{lv['workload']} · {lv['mode']}", lv["case"], fmt.n(lv["output_tps"]))
        assert key in page, key
        shown = page[key]
        assert shown["TTFT p50 / p90 / p99 ms"] == " / ".join(fmt.n(lv[f"ttft_p{q}"]) for q in (50, 90, 99))
        assert shown["goodput req/s"] == fmt.n(lv["goodput_rps"], 2) and shown["requests/s"] == fmt.n(
            lv["rps"], 2
        )
    gated = [f for f in summary["figures"] if f["group"].startswith("Load · ")]
    assert {f["value"] for f in gated if f["figure"] == "output tokens/s"} == {
        lv["output_tps"] for lv in levels
    }


def test_json_rates_and_backends_match_the_page(exported):
    summary = json.loads((exported / "summary.json").read_text())
    tables = page_tables((exported / "report.html").read_text())
    status = {r["backend"]: r for r in table_with(tables, "backend", "requests measured")}
    assert {r["backend"]: r["measured"] for r in summary["status"]} == {
        b: int(r["requests measured"]) for b, r in status.items()
    }
    rates = next(w for w in summary["workloads"] if w["kind"] == "json")["tables"]["rates"]
    shown = {(r["mode"], r["T"], r["valid"]) for r in table_with(tables, "mode", "valid", "correct")}
    assert len(rates) >= 6 and len(shown) == len(
        {(r["mode"], r["temperature"], r["valid"], r["n"]) for r in rates}
    )
    for r in rates:
        assert (
            r["mode"],
            fmt.n(r["temperature"], 1),
            f"{r['valid']}/{r['n']} ({fmt.pct(r['pass_rate'])})",
        ) in shown, r


def test_csv_files_hold_the_json_rows(exported):
    summary = json.loads((exported / "summary.json").read_text())
    with (exported / "csv" / "summary.csv").open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert [(r["job"], r["backend"], r["value"]) for r in rows] == [
        (r["job"], r["backend"], r["value"]) for r in summary["summary"]
    ]
    medians = [float(r["median"]) if r["median"] else None for r in rows]
    assert medians == [
        r["median"] for r in summary["summary"]
    ]  # full precision, empty = not a latency figure
    load = next(w for w in summary["workloads"] if w["kind"] == "load")
    with (exported / "csv" / f"{load['name']}.levels.csv").open(newline="", encoding="utf-8") as f:
        levels = list(csv.DictReader(f))
    assert [float(r["output_tps"]) for r in levels] == [lv["output_tps"] for lv in load["tables"]["levels"]]
    for w in summary["workloads"]:  # every section table has its file
        for key in w["tables"]:
            assert (exported / "csv" / f"{w['name']}.{key}.csv").is_file(), (w["name"], key)


def test_default_is_the_page_alone_and_json_alone_writes_no_page(tmp_path, capsys):
    run = Path(shutil.copytree(FIXTURES / RUNS[1], tmp_path / "run"))
    assert main([str(run)]) == 0
    assert (
        (run / "report.html").is_file() and not (run / "summary.json").exists() and not (run / "csv").exists()
    )
    (run / "report.html").unlink()
    assert main([str(run), "--format", "json"]) == 0
    assert (run / "summary.json").is_file() and not (run / "report.html").exists()
    assert f"json: {run / 'summary.json'}" in capsys.readouterr().out


@pytest.mark.parametrize("formats", ["xml", "json,pdf", ","])
def test_an_unknown_format_is_one_line_naming_the_known_ones(tmp_path, capsys, formats):
    run = Path(shutil.copytree(FIXTURES / RUNS[1], tmp_path / "run"))
    assert main([str(run), "--format", formats]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert (
        len(err) == 1
        and "known formats are html, json, csv" in err[0]
        and err[0].startswith("python compare.py report: error:")
    )
    assert not (run / "report.html").exists() and not (run / "summary.json").exists()
