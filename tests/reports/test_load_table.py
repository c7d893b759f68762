"""The load table for READMEs (workloads/load/report/load_table.py) from hand-made load records with known
figures."""

from __future__ import annotations

from llm_call_anatomy.workloads.load.report import load_table
from tests.reports.test_report_many_users import load_run


def test_one_row_per_level_one_column_per_backend_with_the_pages_figures(tmp_path, capsys):
    run = load_run(tmp_path)
    assert load_table.main([str(run), "--slo", "ttft_ms=35,tpot_ms=20"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "| workload · variant · level | hf | vllm |"
    rows = {line.split(" | ")[0].lstrip("| "): line.split(" | ")[1:] for line in lines[2:4]}
    assert list(rows) == ["lf · S=0 · C=1", "lf · S=0 · C=4"]
    window = 0.4 + 0.100 + 0.050  # vLLM at C=1: last submit + its TTFT + its last token
    # 20 tokens over the window; TTFT p50 30, p99 97.6 ms; ITL p50 10 ms; 3 of 5 requests within the SLO
    assert rows["lf · S=0 · C=1"][1] == f"{20 / window:,.0f} · 30/98 · 10.0 · {3 / window:.2f} (5) |"


def test_runs_without_load_records_are_one_line_and_exit_2(tmp_path, capsys):
    from tests.reports.records import record, write_run

    run = write_run(tmp_path / "run", [record(backend="hf", workload="sweep", kind="sweep", ttft_ms=1.0)])
    assert load_table.main([str(run)]) == 2
    assert "no load records" in capsys.readouterr().err


def test_the_capacity_table_holds_every_load_workloads_rows_and_filters_by_target(tmp_path, capsys):
    """Two load workloads are two load sections: the capacity table (--capacity-only, as README.md quotes it)
    holds both, and --target keeps one target's rows."""
    from tests.reports.records import write_run
    from tests.reports.test_report_capacity import KNEE, level

    rows = [r for c, ms in KNEE.items() for r in level("vllm", c, ms)]
    rows += [{**r, "workload": "lf2"} for r in rows]
    run = write_run(tmp_path / "r", rows)
    assert load_table.main([str(run), "--capacity-only", "--target", "chat"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("| backend | variant | loop | target | capacity |")
    body = [line.split(" | ") for line in lines[2:]]
    assert [(b[1], b[3]) for b in body] == [("lf · S=0", "chat"), ("lf2 · S=0", "chat")]
