"""The runs' SLO targets read once (``workloads.load.report.targets``): a run whose env.json ``slo_targets``
do not parse is passed over for the next run's and named on the page with its error, by the goodput line
and by a caveat, while the report still builds; good runs read as before."""

from __future__ import annotations

from llm_call_anatomy.reports import build
from llm_call_anatomy.reports.assemble import assemble
from llm_call_anatomy.reports.runs import read_runs
from llm_call_anatomy.workloads.load.report import targets as slo_targets
from llm_call_anatomy.workloads.load.report.capacity import targets_of
from tests.reports.records import write_run
from tests.reports.test_report_capacity import KNEE, level

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


# --- a merged report: each run's own targets (issue 44 item 6) ----------------------------------------------
LAX = ["chat:ttft_p90_ms=500"]  # KNEE holds it to C=4
STRICT = ["chat:ttft_p90_ms=120"]  # the same name, a stricter limit: KNEE holds it at C=1 only


def _capacities(runs) -> dict[str, tuple]:
    sec = next(s for s in assemble(read_runs(runs)).sections if s.kind == "load")
    caps = sec.data["cap"]["capacity"]
    return {r["backend"]: (r["value"], r["target_label"]) for r in caps.to_dict("records")}


def test_a_merged_report_judges_each_run_against_its_own_targets_whatever_the_order(tmp_path):
    lax = _load_run(tmp_path, "r0", "vllm", {"slo_targets": LAX})
    strict = _load_run(tmp_path, "d4a", "sglang", {"slo_targets": STRICT})
    expected = {
        "vllm": (4, "chat (TTFT p90 ≤ 500 ms)"),
        "sglang": (1, "chat (TTFT p90 ≤ 120 ms)"),
    }
    assert _capacities([lax, strict]) == expected
    assert _capacities([strict, lax]) == expected  # the order of the run directories changes nothing


def test_the_page_says_which_targets_each_column_was_judged_against_when_they_differ(tmp_path):
    runs = [
        _load_run(tmp_path, "r0", "vllm", {"slo_targets": LAX}),
        _load_run(tmp_path, "d4a", "sglang", {"slo_targets": STRICT}),
    ]
    report = assemble(read_runs(runs))
    sec = next(s for s in report.sections if s.kind == "load")
    assert sec.data["cap"]["targets_of"] == {
        "vllm": slo_targets.read({"r0": {"slo_targets": LAX}}).first,
        "sglang": slo_targets.read({"d4a": {"slo_targets": STRICT}}).first,
    }
    # the two chat targets are two summary rows, never one comparison
    jobs = [j for j in report.jobs if j.job.startswith("Many users: chat")]
    assert sorted(j.figure for j in jobs) == [
        "highest concurrency within chat (TTFT p90 ≤ 120 ms)",
        "highest concurrency within chat (TTFT p90 ≤ 500 ms)",
    ]
    assert [len(j.values) for j in jobs] == [1, 1]
    page = build(runs, tmp_path / "report.html").read_text()
    assert "Targets differ between the runs: each column is judged against its own run&#39;s targets" in page
    assert "vllm (run r0) against chat (TTFT p90 ≤ 500 ms)" in page
    assert "sglang (run d4a) against chat (TTFT p90 ≤ 120 ms)" in page


def test_runs_with_the_same_targets_read_as_one_list(tmp_path):
    runs = [
        _load_run(tmp_path, "r0", "vllm", {"slo_targets": LAX}),
        _load_run(tmp_path, "d4a", "sglang", {"slo_targets": LAX}),
    ]
    page = build(runs, tmp_path / "report.html").read_text()
    assert "Targets: chat (TTFT p90 ≤ 500 ms)." in page and "Targets differ" not in page


def test_a_column_merging_runs_with_other_targets_says_whose_it_used(tmp_path):
    runs = [
        _load_run(tmp_path, "r0", "vllm", {"slo_targets": LAX}),
        _load_run(tmp_path, "r1", "vllm", {"slo_targets": STRICT}),
    ]
    report = assemble(read_runs(runs, merge_starts=True))
    [caveat] = [c for c in report.caveats if c.topic == "targets"]
    assert (
        "vllm merges runs with other targets (r0, r1): its capacity is judged against run r0's" in caveat.text
    )
    sec = next(s for s in report.sections if s.kind == "load")
    assert set(sec.data["cap"]["capacity"]["target_label"]) == {"chat (TTFT p90 ≤ 500 ms)"}
