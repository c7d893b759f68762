"""Energy on the Load section (issue 40): J per 1,000 output tokens over the steady window from the level's
energy series, the idle floor and the share above it, on the page and in the capacity export under the
page's names; an older run (no series) keeps its whole-level figure under its own name, never the steady
window's; and whole-level and steady-window output tok/s never share a label."""

from __future__ import annotations

import csv
import re

import pytest
from markupsafe import escape

from llm_call_anatomy.reports import build
from llm_call_anatomy.reports.export import write
from llm_call_anatomy.workloads.load.report import labels as names
from tests.reports.test_report_capacity import run, section
from tests.reports.test_report_export import page_tables

WATTS, IDLE_W = 400.0, 100.0
# a GPU drawing 400 W from a second before each level's origin to well past its end: J since the first pair
SERIES = [[-1.0, 0.0], [100.0, 101 * WATTS]]
NEW = {"gpu_energy_j": 48.0, "gpu_energy_series": SERIES, "gpu_idle_w": IDLE_W, "gpu_idle_s": 1.0}
OLD = {"gpu_energy_j": 48.0, "gpu_power_w_mean": 400.0}  # a run from before the series was kept


def said(text: str, page: str) -> bool:
    return str(escape(text)) in page


def headers(page: str) -> list[str]:
    return [h for cols, _ in page_tables(page) for h in cols]


def test_j_per_1k_output_tokens_over_the_steady_window_and_the_idle_floor(tmp_path):
    """At a constant 400 W the window's energy is 400 W × its length, so J per 1,000 output tokens (steady
    window) = 400 ÷ steady output tok/s × 1000, by hand; the floor 100 W is a quarter of it: 75 % above."""
    report, sec = section([run(tmp_path, "r", facts=NEW)])
    steady = sec.data["cap"]["steady"].set_index("case")
    for case in ("C=2", "C=4", "C=8"):
        r = steady.loc[case]
        assert r["energy_j_per_1k_steady"] == pytest.approx(WATTS / r["output_tps"] * 1000)
        assert r["idle_w"] == IDLE_W and r["above_idle_share"] == pytest.approx(0.75)
        assert r["energy_j_per_1k_level"] is None  # the whole level's figure is not the steady one
    chat = sec.data["cap"]["capacity"].set_index("target").loc["chat"]
    assert chat["energy_j_per_1k_steady"] == pytest.approx(steady.loc["C=4", "energy_j_per_1k_steady"])
    assert chat["idle_w"] == IDLE_W and chat["above_idle_share"] == pytest.approx(0.75)

    page = build([tmp_path / "r"], tmp_path / "report.html").read_text()
    seen = headers(page)
    assert {names.STEADY_J, names.IDLE_W, names.ABOVE_IDLE} <= set(seen) and names.LEVEL_J not in page
    assert said(names.STEADY_J_TEXT, page) and said(names.IDLE_TEXT, page)  # the definitions, on the page

    # the capacity export: the page's capacity table, the energy columns under the page's names and cells
    write(report, tmp_path / "out", ("csv",))
    (path,) = (tmp_path / "out" / "csv").glob("*.capacity.csv")
    rows = list(csv.DictReader(path.open(encoding="utf-8")))
    (cap,) = [c for c in page_tables(page) if names.STEADY_J in c[0] and "target" in c[0]]
    shown = [dict(zip(cap[0], row, strict=True)) for row in cap[1]]
    assert [r[names.STEADY_J] for r in rows] == [r[names.STEADY_J] for r in shown]
    assert [r[names.ABOVE_IDLE] for r in rows] == [r[names.ABOVE_IDLE] for r in shown] and rows
    assert {r[names.IDLE_W] for r in rows} == {"100"}


def test_an_older_run_keeps_its_whole_level_figure_under_its_own_name(tmp_path):
    """No series in the records: the whole level's energy ÷ served output tokens, labelled as the whole
    level's; the steady window's name is nowhere on the page."""
    _, sec = section([run(tmp_path, "r", facts=OLD)])
    c4 = sec.data["cap"]["steady"].set_index("case").loc["C=4"]
    assert c4["energy_j_per_1k_level"] == pytest.approx(48.0 / (24 * 4) * 1000)  # 24 requests x 4 tokens
    assert c4["energy_j_per_1k_steady"] is None
    page = build([tmp_path / "r"], tmp_path / "report.html").read_text()
    assert names.LEVEL_J in headers(page) and said(names.LEVEL_J_TEXT, page)
    assert names.STEADY_J not in page and names.IDLE_W not in headers(page)


def test_whole_level_and_steady_window_tok_s_never_share_a_label(tmp_path):
    """A run with both figures (the level tables, the steady-state and capacity tables): every output tok/s
    header names which one it is, the two names appear, and no header stands for both."""
    page = build([run(tmp_path, "r", facts=NEW)], tmp_path / "report.html").read_text()
    tables = page_tables(page)
    tps = {h for cols, _ in tables for h in cols if "output tok/s" in h or h in ("tok/s", "out tok/s")}
    assert any(names.LEVEL_TPS in h for h in tps) and any(names.STEADY_TPS in h for h in tps)
    for h in tps:
        assert (names.LEVEL_TPS in h) != (names.STEADY_TPS in h), h
    level = {h for cols, _ in tables if names.LEVEL_TPS in cols for h in cols}
    steady = {h for cols, _ in tables if any(names.STEADY_TPS in c for c in cols) for h in cols}
    assert not {h for h in level & steady if "tok/s" in h and h != "tok/s a user"}
    for text in (names.LEVEL_TPS_TEXT, names.STEADY_TPS_TEXT):
        assert page.count(str(escape(text))) == 1, text  # each defined once


def test_the_terminal_summary_names_which_tok_s_it_prints(tmp_path):
    from llm_call_anatomy.harness import run_summary
    from llm_call_anatomy.harness.summary_table import summary_table
    from llm_call_anatomy.reports.assemble import assemble
    from llm_call_anatomy.reports.export import summary_rows
    from llm_call_anatomy.reports.runs import read_runs

    report = assemble(read_runs([run(tmp_path, "r", facts=NEW)]))
    lines = summary_table(summary_rows(report).to_dict("records"), width=200)
    figures = [x for x in lines if re.search(r"\d tok/s|\d output tok/s", x)]  # a tok/s figure, not a level
    assert figures and all(names.LEVEL_TPS in x or names.STEADY_TPS in x for x in figures), figures
    assert run_summary.LEVEL_TPS == names.LEVEL_TPS  # the run's own closing table: the page's name
