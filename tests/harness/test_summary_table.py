"""The run ends with the page's Summary in the terminal (issue 43): a job a block, its verdict beside it, a
line a backend with its value, every line within the terminal's width; the rows are the report's own."""

from __future__ import annotations

from llm_call_anatomy.harness.summary_table import TITLE, summary_table
from tests.conftest import compare

ROWS = [
    {"job": "Many short calls (sweep)", "backend": "vllm", "value": "4.59 ms ±15% (2 starts ±3%, n=10)",
     "verdict": "by 57% over hf (noise ±15%)", "caution": None},
    {"job": "Many short calls (sweep)", "backend": "hf", "value": "7.2 ms ±9% (2 starts ±2%, n=10)",
     "verdict": "by 57% over hf (noise ±15%)", "caution": None},
    {"job": "JSON output, mode 'free' (json)", "backend": "hf-cb", "value": "0% (0 of 4)",
     "verdict": "one backend", "caution": "weights are random: not a quality figure"},
]  # fmt: skip


def test_a_job_a_block_best_first_with_its_verdict():
    assert summary_table(ROWS, width=200) == [
        TITLE,
        "Many short calls (sweep): by 57% over hf (noise ±15%)",
        "  vllm   4.59 ms ±15% (2 starts ±3%, n=10)",
        "  hf     7.2 ms ±9% (2 starts ±2%, n=10)",
        "JSON output, mode 'free' (json): one backend [weights are random: not a quality figure]",
        "  hf-cb  0% (0 of 4)",
    ]
    assert summary_table([]) == []


def test_every_line_fits_the_terminal():
    lines = summary_table(ROWS, width=60)
    assert all(len(line) <= 60 for line in lines) and lines[4].endswith("…")
    assert lines[2] == "  vllm   4.59 ms ±15% (2 starts ±3%, n=10)"  # a value is whole where it fits


def test_a_run_ends_with_its_summary(tmp_path):
    proc = compare("--backend", "hf", "--model", "tiny", "--workloads", "sweep", "--repeats", "2",
                   "--out", str(tmp_path / "run"), timeout=600)  # fmt: skip
    out = proc.stdout.splitlines()
    at = out.index(TITLE)
    assert out[at - 1].startswith("report: ")
    assert out[at + 1].startswith("Many short calls (sweep): one backend") and out[at + 2].startswith("  hf ")
    assert all(len(line) <= 80 for line in out[at:])  # piped: 80 columns
