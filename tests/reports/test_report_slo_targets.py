"""The runs' SLO targets read once (``workloads.load.report.targets``): a run whose env.json ``slo_targets``
do not parse is passed over for the next run's and named on the page with its error, by the goodput line
and by a caveat, while the report still builds; good runs read as before."""

from __future__ import annotations

from reports import build
from reports.assemble import assemble
from reports.runs import read_runs
from tests.reports.records import write_run
from tests.reports.test_report_capacity import KNEE, level
from workloads.load.report import targets as slo_targets
from workloads.load.report.capacity import targets_of

BROKEN = ["chat:ttft_p90_ms=fast"]  # what a hand-edited env.json might hold
OWN = ["snappy:ttft_p90_ms=400,tpot_p90_ms=40"]


def test_a_run_whose_targets_do_not_parse_is_named_with_its_error_and_passed_over():
    runs = slo_targets.read(
        {
            "old": {"slo_targets": BROKEN},
            "odd": {"slo_targets": "chat:"},
            "none": {},
            "good": {"slo_targets": OWN},
        }
    )
    assert [run_id for run_id, _ in runs.parsed] == ["good"] and runs.first[0].name == "snappy"
    assert [run_id for run_id, _ in runs.broken] == ["old", "odd"]
    assert (
        "run old's env.json slo_targets do not parse" in runs.note and "'fast' is not a number" in runs.note
    )
    assert "run odd's" in runs.note and "expected a list of target texts" in runs.note
    assert "\n" not in runs.note
    good = slo_targets.read({"good": {"slo_targets": OWN}, "none": {"slo_targets": None}})
    assert good.note is None and good.broken == []


def test_capacity_counts_against_the_next_runs_targets_not_the_defaults():
    envs = {"old": {"slo_targets": BROKEN}, "good": {"slo_targets": OWN}}
    assert [t.name for t in targets_of(envs)] == ["snappy"]
    assert [t.name for t in targets_of({"old": {"slo_targets": BROKEN}})] == ["chat", "agent", "batch"]


def _load_run(tmp_path, name, backend, env):
    rows = [r for c, ms in KNEE.items() for r in level(backend, c, ms)]
    return write_run(tmp_path / name, rows, env)


def test_the_page_names_the_run_whose_targets_do_not_parse(tmp_path):
    runs = [
        _load_run(tmp_path, "old", "vllm", {"slo_targets": BROKEN}),
        _load_run(tmp_path, "good", "sglang", {"slo_targets": OWN}),
    ]
    report = assemble(read_runs(runs))
    sec = next(s for s in report.sections if s.kind == "load")
    assert sec.data["slo"] == {"ttft_ms": 400.0, "tpot_ms": 40.0}  # the good run's target, not the old pair
    source = sec.data["slo_source"]
    assert "snappy" in source and "run old's env.json slo_targets do not parse" in source and "fast" in source
    [caveat] = [c for c in report.caveats if c.topic == "targets"]
    assert "run old's" in caveat.text and "'fast' is not a number" in caveat.text
    page = build(runs, tmp_path / "report.html").read_text()
    assert (
        page.count("run old&#39;s env.json slo_targets do not parse") >= 2
    )  # the goodput line and the caveat


def test_good_runs_have_no_targets_caveat(tmp_path):
    report = assemble(read_runs([_load_run(tmp_path, "good", "vllm", {"slo_targets": OWN})]))
    sec = next(s for s in report.sections if s.kind == "load")
    assert (
        sec.data["slo_source"]
        == "the run's first latency target, snappy (TTFT p90 ≤ 400 ms, TPOT p90 ≤ 40 ms), per request"
    )
    assert not [c for c in report.caveats if c.topic == "targets"]
