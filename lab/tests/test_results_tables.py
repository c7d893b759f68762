"""The lab's result tables are generated: each matches ``python -m llm_call_anatomy.reports.readme_tables`` on
the committed runs."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from llm_call_anatomy.reports import readme_tables

ROOT = Path(__file__).parents[2]


@pytest.mark.parametrize(
    "readme",
    [
        "lab/h200-results.md",
        "lab/examples/h200-qwen3-8b-shape/README.md",
        "lab/results/long-context-h200-2026-12-03/README.md",
        "lab/results/anatomy-h100-2026-12-07/README.md",
    ],
)
def test_readme_table_is_the_scripts_output(monkeypatch, readme):
    monkeypatch.chdir(ROOT)  # the block's arguments are paths from the repository root
    match = readme_tables.BLOCK.search((ROOT / readme).read_text(encoding="utf-8"))
    assert match, f"{readme} has no <!-- readme-tables: ... --> block"
    args = readme_tables.parser().parse_args(shlex.split(match["args"]))
    expected = (
        f"<!-- readme-tables: {match['args']} -->\n{readme_tables.generate(args)}<!-- /readme-tables -->"
    )
    assert match.group(0) == expected, (
        f"{readme}'s table is stale: rerun "
        f"python -m llm_call_anatomy.reports.readme_tables ARGS --write {readme}"
    )


BRACKETS = "lab/results/brackets-h200-2026-12-03"
FIXED = ["h200-b39-closed-a", "h200-b39-closed-b", "h200-b39-closed-c", "h200-b39-open"]
THINK = [
    "h200-b39-think-on",
    "h200-b39-think-on-2",
    "h200-b39-think-off",
    "h200-b39-think-1024-on",
    "h200-b39-think-1024-off",
]


BRACKETS_6 = "lab/results/brackets-h200-2026-12-04"
THINK3 = ["h200-b39-think3-a", "h200-b39-think3-b", "h200-b39-think3-c"]
BRACKETS_6S = "lab/results/brackets-h200-2026-12-04b"  # session 6 again, users who think stationary
THINK3_S = ["h200-b39-think3-s-a", "h200-b39-think3-s-b", "h200-b39-think3-s-c"]
BRACKETS_9 = "lab/results/brackets-h100-2026-12-07"  # session 9 on an H100: the fixed loop's first think runs
THINK_F = ["h100-b39-think-f-a", "h100-b39-think-f-b"]
BRACKETS_9B = "lab/results/brackets-h100-2026-12-07b"  # session 9 again, H100, twice the levels: a bracket
THINK_F3 = ["h100-b39-think-f-a", "h100-b39-think-f-b", "h100-b39-think-f-c"]


@pytest.mark.parametrize(
    "base,runs",
    [
        (BRACKETS, FIXED),
        (BRACKETS, THINK),
        (BRACKETS_6, THINK3),
        (BRACKETS_6S, THINK3_S),
        (BRACKETS_9, THINK_F),
        (BRACKETS_9B, THINK_F3),
    ],
    ids=["fixed", "think", "think3", "think3-stationary", "think-fixed-h100", "think-fixed-h100-bracket"],
)
def test_the_brackets_sittings_tables_are_the_commands_output(monkeypatch, capsys, base, runs):
    """Each brackets README (lab/results/brackets-h200-*) holds what each of its commands prints, after the
    command (issue 39)."""
    from llm_call_anatomy.workloads.load.report import load_table

    monkeypatch.chdir(ROOT)
    assert load_table.main(["--merge-starts", "--capacity", *(f"{base}/{r}" for r in runs)]) == 0
    printed = capsys.readouterr().out
    readme = (ROOT / base / "README.md").read_text(encoding="utf-8")
    paths = [f"{base}/{r}" for r in runs]
    command = " \\\n      ".join(" ".join(paths[k : k + 2]) for k in range(0, len(paths), 2))
    assert command in readme and readme.index(printed) > readme.index(command), (
        f"{base}/README.md's tables are stale: rerun its commands"
    )


def test_the_readmes_capacity_blocks_are_the_commands_output(monkeypatch, capsys):
    """Each of README.md's capacity blocks (between ``<!-- load_table: ARGS -->`` and
    ``<!-- /load_table -->``) is what ``python -m llm_call_anatomy.workloads.load.report.load_table ARGS``
    prints: no capacity in the README is typed by hand."""
    import re

    from llm_call_anatomy.workloads.load.report import load_table

    monkeypatch.chdir(ROOT)
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = list(
        re.finditer(r"<!-- load_table: (?P<args>.*?) -->\n(?P<body>.*?)<!-- /load_table -->", text, re.S)
    )
    assert blocks, "README.md has no <!-- load_table: ... --> block"
    for block in blocks:
        assert load_table.main(shlex.split(block["args"])) == 0
        assert block["body"] == capsys.readouterr().out, (
            f"README.md's capacity block is stale: rerun load_table {block['args']}"
        )


TRACE_PROOFS = (
    "lab/results/trace-proof-cpu-2026-12-04/README.md",
    "lab/results/trace-proof-cpu-2026-12-04b/README.md",  # re-run after f26dae5 (the /metrics sample's cost)
    "lab/results/trace-proof-cpu-2026-12-07/README.md",  # a longer window, on a quiet machine
)


@pytest.mark.parametrize("readme", TRACE_PROOFS)
def test_the_trace_proofs_tables_are_built_from_its_saved_results(monkeypatch, readme):
    """Each ``<!-- trace_proof_table: FOLDER -->`` block of a trace proof's README (issue 41) is what
    ``python -m benchmarks.trace_proof_table FOLDER`` prints from the committed results."""
    from benchmarks import trace_proof_markdown, trace_proof_table

    monkeypatch.chdir(ROOT)  # the blocks' folders are paths from the repository root
    text = (ROOT / readme).read_text(encoding="utf-8")
    blocks = list(trace_proof_markdown.BLOCK.finditer(text))
    assert blocks, f"{readme} has no <!-- trace_proof_table: ... --> block"
    for m in blocks:
        table = trace_proof_markdown.markdown(trace_proof_table.collect(Path(m["folder"])))
        assert m.group(0) == trace_proof_markdown.block(m["folder"], table), (
            f"{readme}'s table for {m['folder']} is stale: rerun python -m benchmarks.trace_proof_table "
            f"{m['folder']} --write {readme}"
        )


def proof_agreements(readmes: tuple[str, ...]) -> dict[str, dict[str, dict]]:
    """Each sitting of the proofs' READMEs (its folder, from the repository root: run with the cwd there) ->
    its agreement lines by figure, from its saved results."""
    from benchmarks import trace_proof_markdown, trace_proof_table

    return {
        m["folder"]: {a["figure"]: a for a in trace_proof_table.collect(Path(m["folder"]))["agreement"]}
        for readme in readmes
        for m in trace_proof_markdown.BLOCK.finditer((ROOT / readme).read_text(encoding="utf-8"))
    }


def test_every_trace_proof_percentile_gap_is_within_its_requests_interval(monkeypatch):
    """The claim of trace-proof-cpu-2026-12-04b's README: in every sitting of both proofs, each percentile's
    gap between the harness and the benches has a requests-drawn-again interval that holds 0."""
    monkeypatch.chdir(ROOT)
    sittings = proof_agreements(TRACE_PROOFS)
    intervals = [
        (folder, figure, line["interval_requests_drawn_again"])
        for folder, lines in sittings.items()
        for figure, line in lines.items()
        if "interval_requests_drawn_again" in line
    ]
    assert len(intervals) == 4 * len(sittings) and len(sittings) >= 6
    assert [x for x in intervals if x[2] is None or not x[2][0] <= 0 <= x[2][1]] == []


def test_the_longer_windows_proof_says_what_its_table_shows(monkeypatch):
    """trace-proof-cpu-2026-12-07's list: counts exact; no latency figure of the harness above the benches'
    spread; its TTFT p90 interval narrower than every earlier sitting's; its client CPU the heavier."""
    from benchmarks import trace_proof_table

    monkeypatch.chdir(ROOT)
    (lines,) = proof_agreements(TRACE_PROOFS[-1:]).values()
    assert all(lines[key]["within_noise"] for key in trace_proof_table.EXACT + ("prefix_cache_hits",))
    latency = [k for k in lines if k.startswith(("ttft", "tpot", "added_ttft"))]
    assert len(latency) == 7
    higher = [k for k in latency if not lines[k]["within_noise"] and lines[k]["harness_minus_bench_mean"] > 0]
    assert higher == []
    cpu = lines["client_cpu_window_s"]
    assert cpu["within_noise"] is False and cpu["harness_minus_bench_mean"] > 0

    def ttft_p90_width(sitting: dict[str, dict]) -> float:
        lo, hi = sitting["ttft_p90_ms"]["interval_requests_drawn_again"]
        return hi - lo

    earlier = [ttft_p90_width(sitting) for sitting in proof_agreements(TRACE_PROOFS[:-1]).values()]
    assert len(earlier) == 5 and ttft_p90_width(lines) < min(earlier)


PRINTED = re.compile(
    r"<!-- reports_printed: (?P<args>.*?) -->\n```\n(?P<body>.*?)```\n<!-- /reports_printed -->", re.S
)


@pytest.mark.parametrize(
    "readme", [f"{BRACKETS_6S}/README.md", f"{BRACKETS_9}/README.md", f"{BRACKETS_9B}/README.md"]
)
def test_the_printed_answers_are_the_reports_output(monkeypatch, capsys, tmp_path, readme):
    """Each ``<!-- reports_printed: ARGS -->`` block (issue 40's sizing answer) holds what ``python -m
    llm_call_anatomy.reports ARGS`` prints after the page it writes: no GPU count or price in a lab README is
    typed by hand."""
    from llm_call_anatomy.reports.__main__ import main

    monkeypatch.chdir(ROOT)  # the block's arguments are paths from the repository root
    blocks = list(PRINTED.finditer((ROOT / readme).read_text(encoding="utf-8")))
    assert blocks, f"{readme} has no <!-- reports_printed: ... --> block"
    for m in blocks:
        assert main([*shlex.split(m["args"]), "-o", str(tmp_path / "report.html")]) == 0
        printed = capsys.readouterr().out.split("\n", 1)[1]  # after "report: PATH"
        assert m["body"] == printed, (
            f"{readme}'s printed block is stale: rerun python -m llm_call_anatomy.reports ARGS "
            "-o /tmp/r.html and paste what follows its first line"
        )
