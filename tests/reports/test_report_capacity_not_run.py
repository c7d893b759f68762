"""A planned load level the run never reached (a run cut by its deadline, resumable with --resume) reads
as not run in the capacity cells, the summary rows and the caching ratios, never as met (issue 22): the
h200-capacity page read "≥ C=32 (every level tested met it)" for sglang with caching off, whose planned
C=128 never ran, and "peak tok/s at C=8" for hf-cb, whose planned C=32 never ran. The levels the capacity
search adds are not in the plan: a run that has every planned level reads as before."""

from __future__ import annotations

from llm_call_anatomy.reports.assemble import assemble
from llm_call_anatomy.reports.runs import read_runs
from tests.reports.records import write_run
from tests.reports.test_report_capacity import level

PLAN = (1, 8, 32, 128)
EASY = {1: 100.0, 8: 150.0, 32: 300.0, 128: 450.0}  # every level meets chat (TTFT p90 <= 500 ms) and agent


def planned(*cases: str) -> dict:
    return {"planned_levels": {"lf": [["S=0", c] for c in cases]}}


def cut_run(tmp_path, name="cut", backend="vllm", ran=(1, 8, 32), plan=PLAN, env=None, ms=EASY):
    """A run that planned ``plan`` (closed-loop concurrencies) and has records of ``ran`` only."""
    rows = [r for c in ran for r in level(backend, c, ms[c])]
    return write_run(tmp_path / name, rows, {**planned(*(f"C={c}" for c in plan)), **(env or {})})


def capacity_cells(runs) -> tuple:
    from llm_call_anatomy.workloads.load.report.capacity_tables import capacity_table

    report = assemble(read_runs(runs))
    sec = next(s for s in report.sections if s.kind == "load")
    cells = {}
    for row in capacity_table(sec.data["cap"]["capacity"]).rows:  # S=0's closed loop: (backend, target)
        loop = "closed" if row[3] == "concurrency" else "open"
        main = loop == "closed" and row[0] == "lf · S=0"
        cells[(row[1], row[4]) if main else (row[1], row[4], loop)] = row[5]
    return report, sec, cells


def test_a_floor_whose_next_planned_level_never_ran_says_not_run_not_met(tmp_path):
    report, sec, cells = capacity_cells([cut_run(tmp_path)])
    for target in ("chat", "agent"):
        want = "no miss up to C=32 (C=128 not run: the run stopped before it)"
        assert cells[("vllm", target)] == want, cells
    assert not any("every level" in text for text in cells.values()), cells
    rows = sec.data["cap"]["capacity"].set_index("target")
    assert list(rows.loc["agent", "not_run"]) == [128.0]
    summary = {j.job: dict(j.values) for j in report.jobs if j.job.startswith("Many users: agent")}
    assert summary["Many users: agent (lf · S=0)"]["vllm"].startswith(
        "no miss up to C=32 (C=128 not run: the run stopped before it) · met: tpot p90 20 ms"
    )
    # the status table still names the level
    assert report.status[0].missing == ["lf · S=0 C=128"]


def test_a_peak_among_the_levels_run_names_the_planned_level_that_did_not(tmp_path):
    _, _, cells = capacity_cells([cut_run(tmp_path)])
    assert cells[("vllm", "batch")] == "peak tok/s at C=32 of the levels run (C=128 not run)", cells


def test_two_planned_levels_not_run_are_both_named(tmp_path):
    _, _, cells = capacity_cells([cut_run(tmp_path, ran=(1, 8))])
    want = "no miss up to C=8 (C=32, C=128 not run: the run stopped before them)"
    assert cells[("vllm", "agent")] == want, cells


def test_a_bracket_names_a_level_not_run_only_between_its_ends(tmp_path):
    knee = {1: 100.0, 4: 300.0, 8: 900.0, 16: 1200.0, 32: 1500.0}  # chat: met to C=4, missed from C=8
    _, _, cells = capacity_cells([cut_run(tmp_path, "mid", ran=(1, 4, 16), plan=(1, 4, 8, 16), ms=knee)])
    assert cells[("vllm", "chat")] == "C=4–16 (met at 4, missed at 16, 4.00× apart; C=8 not run)", cells
    # C=32 not run above the first miss (C=8) changes nothing: the capacity is bracketed below it
    _, _, cells = capacity_cells([cut_run(tmp_path, "top", ran=(1, 4, 8), plan=(1, 4, 8, 32), ms=knee)])
    assert cells[("vllm", "chat")] == "C=4–8 (met at 4, missed at 8, 2.00× apart)", cells


def test_a_run_with_every_planned_level_reads_as_before(tmp_path):
    _, sec, whole = capacity_cells([cut_run(tmp_path, "whole", ran=PLAN)])
    _, _, old = capacity_cells([cut_run(tmp_path, "old", ran=PLAN, plan=())])  # no plan in env.json
    assert whole == old
    assert whole[("vllm", "agent")] == "≥ C=128 (every level tested met it)"
    assert all(list(x) == [] for x in sec.data["cap"]["capacity"]["not_run"])


def test_a_planned_level_of_the_other_loop_is_not_this_loops(tmp_path):
    """rate=8 was planned and not run either: an open-loop level, no bound on the closed loop's capacity (the
    open loop, never reached, has rows of its own that say so)."""
    rows = [r for c in (1, 8) for r in level("vllm", c, EASY[c])]
    run = write_run(tmp_path / "r", rows, planned("C=1", "C=8", "rate=8", "C=32"))
    _, sec, cells = capacity_cells([run])
    caps = sec.data["cap"]["capacity"]
    assert {loop: list(x) for loop, x in zip(caps["loop"], caps["not_run"], strict=True)} == {
        "closed": [32.0],
        "open": [8.0],
    }
    assert cells[("vllm", "agent")] == "no miss up to C=8 (C=32 not run: the run stopped before it)", cells
    assert cells[("vllm", "agent", "open")] == "not run (the run stopped before 8 req/s)", cells


def test_an_open_loop_level_not_run_reads_in_its_rate():
    from llm_call_anatomy.workloads.load.report.capacity_cells import capacity_text

    row = {"loop": "open", "rate_unit": "req/s", "value": 8.0, "bound": "unbracketed", "next_up": None}
    row |= {"non_monotone": False, "unjudged": [], "not_run": [32.0]}
    assert capacity_text(row) == "no miss up to 8 req/s (32 req/s not run: the run stopped before it)"
    row |= {"bound": "peak"}
    assert capacity_text(row) == "peak tok/s at 8 req/s of the levels run (32 req/s not run)"


def test_caching_on_against_a_cut_off_run_does_not_say_every_level_met_it(tmp_path):
    from llm_call_anatomy.workloads.load.report.caching_tables import caching_table

    on = cut_run(tmp_path, "on", ran=(1, 8, 32), plan=(1, 8, 32))
    off = cut_run(tmp_path, "off", env={"prefix_caching": False})
    report = assemble(read_runs([on, off]))
    sec = next(s for s in report.sections if s.kind == "load")
    cells = {row[2]: row[5] for row in caching_table(sec.data["cap"]["caching"]).rows if "·" in row[2]}
    want = "– (≥ C=32 on, no miss up to C=32 off: every level met it on; C=128 not run off)"
    assert cells["closed · agent"] == want, cells


def test_a_variant_the_run_never_reached_reads_not_run_in_the_table_and_the_summary(tmp_path):
    """hf-cb with caching off planned S=960 and was cut before it: no record of it. Its capacity rows say not
    run (the summary's main row names it with the backends that ran it) and no caching ratio pairs it."""
    from llm_call_anatomy.workloads.load.report.caching_tables import caching_table

    def rows(backend, mode):
        return [r for c in (1, 8) for r in level(backend, c, EASY[c], mode=mode)]

    plan = {"planned_levels": {"lf": [[m, c] for m in ("S=0", "S=960") for c in ("C=1", "C=8")]}}
    on = write_run(tmp_path / "on", rows("hf-cb", "S=0") + rows("hf-cb", "S=960"), plan)
    off = write_run(tmp_path / "off", rows("hf-cb", "S=0"), {**plan, "prefix_caching": False})
    report, sec, cells = capacity_cells([on, off])
    assert cells[("hf-cb (off)", "agent")] == "≥ C=8 (every level tested met it)", cells  # its S=0
    caps = sec.data["cap"]["capacity"].set_index(["backend", "mode", "target"])
    for target in ("chat", "agent", "batch"):
        row = caps.loc[("hf-cb (off)", "S=960", target)]
        assert (row["bound"], list(row["not_run"])) == ("not run", [1.0, 8.0])
    from llm_call_anatomy.workloads.load.report.capacity_cells import capacity_text

    assert capacity_text(caps.loc[("hf-cb (off)", "S=960", "agent")].to_dict() | {"backend": "x"}) == (
        "not run (the run stopped before C=1, C=8)"
    )
    job = next(j for j in report.jobs if j.job == "Many users: agent (lf · S=960)")
    assert dict(job.values) == {
        "hf-cb (on)": "≥ C=8 (every level tested met it) · met: tpot p90 20 ms [20–20] · 1 engine start",
        "hf-cb (off)": "not run (the run stopped before C=1, C=8)",
    }
    assert job.verdict == "one backend: nothing to choose"
    ratios = {row[1] + " " + row[2] for row in caching_table(sec.data["cap"]["caching"]).rows}
    assert "lf · S=0 closed · agent" in ratios and "lf · S=960 closed · agent" not in ratios, ratios


def test_a_ratio_bounded_by_a_floor_cut_short_names_the_levels_not_run():
    """hf-cb on the H200: with caching on, ≥ C=8 only because the run stopped before C=32; off, C=8 (< 32):
    the ratio is at least 1.00, and the cell says why it is no more than a bound."""
    from llm_call_anatomy.workloads.load.report.capacity_cells import capacity_ratio_text

    row = {"loop": "closed", "capacity_ratio": 1.0, "capacity_bound": "at least"}
    assert capacity_ratio_text(row | {"capacity_not_run": ([32.0], [])}) == "≥ 1.00 (C=32 not run on)"
    assert capacity_ratio_text(row | {"capacity_not_run": ([], [])}) == "≥ 1.00"
    row |= {"capacity_bound": "at most", "capacity_not_run": ([], [128.0])}
    assert capacity_ratio_text(row) == "≤ 1.00 (C=128 not run off)"


def test_no_level_met_and_a_lower_planned_level_not_run_is_named():
    """C=8 missed and the planned C=1 never ran (a run resumed out of order): 'none' is not all it says."""
    from llm_call_anatomy.workloads.load.report.capacity_cells import capacity_text

    row = {"loop": "closed", "value": None, "bound": "none", "next_up": 8.0, "non_monotone": False}
    assert capacity_text(row | {"not_run": [1.0, 32.0]}) == "none (missed at C=8; C=1 not run)"
    assert capacity_text(row | {"not_run": [32.0]}) == "none (missed at C=8)"


def test_a_backend_skipped_whole_reads_skipped_with_its_reason_not_not_run(tmp_path):
    """A backend that was not installed ran no level: its capacity cells give its skip reason, never "not run
    (the run stopped before C=1...)", which would send the user to --resume (issue 43)."""
    from tests.reports.records import record

    vllm = cut_run(tmp_path, "vllm", ran=PLAN)
    why = "sglang is not installed here (pip install 'llm-call-anatomy[sglang]')"
    skip = record(backend="sglang", workload="lf", kind="load", skipped=why)
    sglang = write_run(tmp_path / "sglang", [skip], planned(*(f"C={c}" for c in PLAN)))
    _, _, cells = capacity_cells([vllm, sglang])
    assert cells[("sglang", "chat")] == f"skipped: {why}"
    assert cells[("vllm", "chat")].startswith("≥ C=128")
