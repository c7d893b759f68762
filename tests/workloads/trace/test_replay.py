"""A trace replayed end to end on a fake engine: each request submitted at its scaled timestamp (the load
kind's open loop), every request recorded with its planned submit, the level's record holding the trace's
shape, and the report's Trace section built from the records."""

from __future__ import annotations

import pytest

from llm_call_anatomy.contract.level_facts import LevelFacts
from llm_call_anatomy.harness.records import read_records
from llm_call_anatomy.reports import build
from tests.workloads.trace.stand_in import StandIn, run_trace

# eight requests over 1.6 s of trace time, the last four sharing a prefix; replayed at 1x and 4x
ROWS = [[200 * i, 40, 4, [1, 2] if i >= 4 else [10 + i]] for i in range(8)]
SPEC = f"""
workloads:
  - name: tr
    kind: trace
    rows: {ROWS}
    block_size: 16
    time_scales: [1, 4]
    warmup_requests: 1
"""


class Paced(StandIn):
    """Answers every request after 5 ms, a token every 2 ms."""

    name = "paced"


@pytest.fixture(scope="module")
def run_dir(tiny_model_dir, tmp_path_factory):
    return run_trace(SPEC, tmp_path_factory.mktemp("trace"), tiny_model_dir, Paced())


def test_each_request_is_submitted_at_its_scaled_timestamp(run_dir):
    rows = [r for r in read_records(run_dir) if r["kind"] == "trace" and r.get("rep") is not None]
    for k, case in ((1, "x1"), (4, "x4")):
        level = sorted((r for r in rows if r["case"] == case), key=lambda r: r["rep"])
        assert len(level) == 8
        assert [r["planned_submit_s"] for r in level] == pytest.approx(
            [0.2 * i / k for i in range(8)], abs=1e-6
        )
        lags = [r["submit_s"] - r["planned_submit_s"] for r in level]
        # never early; late by a few ms typically (a busy 2-core VM has shown a 68 ms straggler)
        assert all(lag >= -1e-3 for lag in lags) and sorted(lags)[len(lags) // 2] < 0.01, lags
        assert max(lags) < 0.5, lags
        assert all(r["output_tokens"] == 4 and r["error"] is None for r in level)
    x4 = [r for r in rows if r["case"] == "x4"]
    assert [r["load_rate_rps"] for r in x4] == pytest.approx([8 / (1.4 / 4)] * 8)  # requests / scaled window


def test_the_level_record_keeps_the_traces_shape(run_dir):
    (level,) = [
        r
        for r in read_records(run_dir)
        if r["kind"] == "trace" and r.get("rep") is None and r["case"] == "x4"
    ]
    shape = level["extra"]["level"]["trace"]
    assert shape["sent"] == 8 and shape["dropped"] == 0 and shape["time_scale"] == 4
    facts = LevelFacts.from_record(level)  # the record's type names every key the level wrote
    assert facts.trace == shape and facts.other == {} and facts.to_dict() == level["extra"]["level"]
    assert shape["seen_before_share"] == pytest.approx(6 / 12)  # blocks 1, 2 of the last four: 3 x 2 again


def test_the_report_shows_the_trace_section(run_dir, tmp_path):
    html = build([run_dir], tmp_path / "report.html").read_text(encoding="utf-8")
    assert "The trace" in html and "How much of this traffic each backend holds" in html
    assert "Per time scale" in html and "4×" in html and "50.0 %" in html
    assert "chat (TTFT p90 ≤ 500 ms" in html and "bound method" not in html  # each target by its label


def test_the_load_loop_takes_the_plans_arrival_times_over_a_process():
    from llm_call_anatomy.backends.load_loop import LoadSettings, arrival_times

    s = LoadSettings.of(
        {"rate_rps": 2.0, "concurrency": None, "arrivals_s": [0.0, 0.5, 3.0], "duration_s": 1}
    )
    assert s.arrivals_s == (0.0, 0.5, 3.0)
    assert arrival_times(2, s) == [0.0, 0.5]  # one a session, at most n
    assert arrival_times(5, s) == [0.0, 0.5, 3.0]  # every one the plan gives: the plan's window is its own
    assert LoadSettings.of({"rate_rps": 2.0}).arrivals_s is None  # else drawn from the process
