"""``python -m llm_call_anatomy.reports.readme_tables``: the result tables of a README, generated from runs
(the lab's READMEs are checked against their runs in lab/tests/test_results_tables.py)."""

from __future__ import annotations

import pytest

from llm_call_anatomy.reports import readme_tables
from tests.conftest import lab_example


def test_write_replaces_only_the_block(tmp_path, capsys):
    h200 = lab_example("h200-qwen3-8b-shape")
    doc = tmp_path / "doc.md"
    doc.write_text("before\n<!-- readme-tables: x -->\nstale | table\n<!-- /readme-tables -->\nafter\n")
    argv = [str(h200 / "h200-sglang"), "--write", str(doc)]
    assert readme_tables.main(argv) == 0
    text = doc.read_text()
    assert text.startswith("before\n<!-- readme-tables: ") and text.endswith(
        "<!-- /readme-tables -->\nafter\n"
    )
    assert "stale" not in text and "| | sglang |" in text and "--write" not in text.splitlines()[1]
    assert readme_tables.main([str(h200 / "h200-sglang"), "--write", str(tmp_path / "none.md")]) == 2
    (tmp_path / "plain.md").write_text("no block here\n")
    assert readme_tables.main([str(h200 / "h200-sglang"), "--write", str(tmp_path / "plain.md")]) == 2
    assert "has no <!-- readme-tables" in capsys.readouterr().err


def test_bad_run_dir_is_a_one_line_error(tmp_path, capsys):
    assert readme_tables.main([str(tmp_path)]) == 2
    assert "no records.jsonl" in capsys.readouterr().err


@pytest.mark.parametrize("row", ["decode ms/token", "÷ floor", "per-call floor a", "engine start-up s"])
def test_rows_come_from_the_runs(row):
    h200 = lab_example("h200-qwen3-8b-shape")
    args = readme_tables.parser().parse_args([str(h200 / "h200-vllm"), "--copy-gbps", "4245"])
    assert any(line.startswith(f"| {row}") for line in readme_tables.generate(args).splitlines())
