"""The capacity search over the time scale (issue 41): after the planned scales the runner adds the scales the
search chooses (the load kind's open-loop search, ``contract.capacity``), each the trace's requests at their
offsets ÷ k; the report states the bracket [last pass, first miss] the traffic holds and the GPUs the trace
needs at 1x over it.

The stand-in engine's first token comes 10 ms x (requests in flight) after its submit, and 200 ms more once
more than three are in flight: at 1x (a request every 100 ms) a TTFT p90 of 100 ms holds with a wide margin,
at 32x (every 3 ms) it is missed by as much; the crossing lies between, where the search finds it."""

from __future__ import annotations

import re

import pytest

from llm_call_anatomy.contract import capacity as cap
from llm_call_anatomy.contract.adapter import Request
from llm_call_anatomy.contract.level_facts import LevelFacts
from llm_call_anatomy.contract.level_stats import level_stats
from llm_call_anatomy.contract.slo import parse_target
from llm_call_anatomy.harness.load_search import measured_levels
from llm_call_anatomy.harness.records import read_records
from llm_call_anatomy.reports import build
from llm_call_anatomy.workloads.catalog import build_plan
from llm_call_anatomy.workloads.reader import read_workload_file
from llm_call_anatomy.workloads.trace.report import gpus_text
from llm_call_anatomy.workloads.trace.report.analysis import gpus_at_1x
from tests.harness.search_replay import replay_open_search
from tests.workloads.trace.stand_in import StandIn, run_trace

ROWS = [[100 * i, 24, 3, [i]] for i in range(30)]
TARGET = "knee:ttft_p90_ms=100"
SPEC = f"""
workloads:
  - name: tr
    kind: trace
    rows: {ROWS}
    block_size: 16
    time_scales: [1, 32]
    warmup_requests: 0
    search_levels: 3
    search_targets: ["{TARGET}"]
"""


class Knee(StandIn):
    name = "knee"

    def delay_s(self, request: Request) -> float:
        return 0.010 * self.in_flight + (0.200 if self.in_flight > 3 else 0.0)


@pytest.fixture(scope="module")
def run_dir(tiny_model_dir, tmp_path_factory):
    folder = tmp_path_factory.mktemp("trace-search")
    return run_trace(SPEC, folder, tiny_model_dir, Knee(), {"slo_targets": [TARGET]})


def judged_levels(run_dir) -> list[tuple[dict, float, LevelFacts, str]]:
    """Each time scale's level record in the order written, with its rate, its facts and its decision at
    ``TARGET`` on the rows the search reads (``measured_levels``: a level run again, its latest attempt)."""
    levels = [r for r in read_records(run_dir) if r["kind"] == "trace" and r.get("rep") is None]
    first = levels[0]
    measured = measured_levels(run_dir, "knee", 0, first["workload"], first["mode"], "open", "trace")
    target = parse_target(TARGET)
    out = []
    for level in levels:
        rows, facts = measured[rate := level["load_rate_rps"]]
        out.append((level, rate, facts, cap.judge(target, level_stats(rows, None), facts).decision))
    return out


def test_the_search_adds_time_scales_each_the_traces_requests_at_their_offsets_over_k(run_dir):
    levels = [r for r in read_records(run_dir) if r["kind"] == "trace" and r.get("rep") is None]
    added = [r for r in levels if r["extra"]["level"].get("searched_for")]
    assert 1 <= len(added) <= 3 and all(r["extra"]["level"]["searched_for"] == "knee" for r in added)
    base = 30 / 2.9  # the window's requests per second at 1x
    for level in added:
        k = level["extra"]["level"]["trace"]["time_scale"]
        assert level["case"] == f"x{k:.4g}"
        assert level["load_rate_rps"] == pytest.approx(base * k)
        rows = sorted(
            (r for r in read_records(run_dir) if r.get("rep") is not None and r["case"] == level["case"]),
            key=lambda r: r["rep"],
        )
        assert len(rows) == 30
        assert [r["planned_submit_s"] for r in rows] == pytest.approx(
            [0.1 * i / k for i in range(30)], abs=1e-5
        )


def test_each_added_scale_is_the_one_the_searchs_rule_picks(run_dir):
    """Replayed in the order the levels were written, each added scale's rate is what the open-loop search
    picks from the levels judged before it, whatever the machine made of each (a loaded one may not offer
    1x on time: the search then goes below it, as it must); 32x, far past the knee, never passes."""
    levels = judged_levels(run_dir)
    seen = replay_open_search(parse_target(TARGET), [(rate, facts, d) for _, rate, facts, d in levels])
    assert seen[max(seen)] != cap.PASS and [r["case"] for r, *_ in levels[:2]] == ["x1", "x32"]


def test_the_page_states_the_bracket_the_traffic_holds_and_the_gpus_at_1x(run_dir, tmp_path):
    """The page's bracket is the judged scales' [last pass, first miss] (on a quiet machine 1x passes; a
    loaded one may not offer 1x on time: the bracket then lies below it); its GPUs cell, the count over it."""
    html = build([run_dir], tmp_path / "report.html").read_text(encoding="utf-8")
    assert "GPUs for the trace at 1×" in html and "holds (× the trace" in html
    (lo, hi, gpus) = re.findall(r"<td>([0-9.]+)× – ([0-9.]+)×</td>.*?<td>([^<]*)</td></tr>", html, re.S)[0]
    levels = judged_levels(run_dir)
    passed, missed, _ = cap.bracket({r["extra"]["level"]["trace"]["time_scale"]: d for r, _, _, d in levels})
    assert (f"{passed:.3g}", f"{missed:.3g}") == (lo, hi) and passed < missed <= 32
    # the bracket is no wider than the search's ratio, or its budget of three added scales ended
    assert missed / passed <= 1.25 or len(levels) == 2 + 3
    assert gpus == gpus_text(*gpus_at_1x(passed, missed))  # the GPUs cell, last of the row


@pytest.mark.parametrize(
    ("lo", "hi", "gpus"),
    [
        (2, 2.5, (1, 1)),
        (0.2, 0.3, (4, 5)),
        (0.25, 0.3, (4, 4)),
        (0.25, None, (None, 4)),
        (None, 0.5, (3, None)),
    ],
)
def test_gpus_at_1x_is_the_ceiling_of_one_over_the_bracket(lo, hi, gpus):
    assert gpus_at_1x(lo, hi) == gpus


def test_a_scale_run_again_for_longer_sends_the_window_and_the_stretch_after_it(tmp_path, renderer):
    from llm_call_anatomy.workloads.kinds import kind

    path = tmp_path / "t.yaml"
    path.write_text(SPEC + "    duration_s: 1\n")  # the window [0, 1 s): 10 requests; [0, 2 s): 20
    plan = build_plan(read_workload_file(path), renderer, 1)
    (last,) = [g for g in plan.groups if (g.load or {}).get("search")]
    info = last.load["search"]
    pool = {g.load["pool"]: g.steps for g in plan.groups if g.block == info["pool"]}
    assert info["base_rate"] == pytest.approx(10.0) and info["ceiling"] == pytest.approx(10_000.0)
    search = kind("trace").search_groups
    (once,) = search(info, pool.get("warmup", []), pool["timed"], "tr/replay", None, 40.0, "knee")
    assert once.steps[0].case == "x4" and len(once.steps) == 10
    assert once.load["arrivals_s"] == pytest.approx([0.1 * i / 4 for i in range(10)])
    assert once.load["facts"]["trace"]["time_scale"] == pytest.approx(4.0)
    (longer,) = search(info, pool.get("warmup", []), pool["timed"], "tr/replay", None, 40.0, "knee", 2)
    assert len(longer.steps) == 20 and longer.load["duration_s"] == pytest.approx(0.5)
    assert longer.load["rate_rps"] == 40.0 and longer.load["extended"] == 2  # the same level, for longer
    assert [s.prompt for s in longer.steps[:10]] == [s.prompt for s in once.steps]
