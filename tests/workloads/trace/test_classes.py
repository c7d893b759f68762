"""Mixed traffic in a trace (issue 41): a class per request (chat, agent), each judged against its own target
on its own requests, and the level held when every class meets its own; a class's verdict keeps the whole
level's flags.

The stand-in engine answers a short prompt (the chat requests) in 10 ms and a long one (the agent requests) in
250 ms: over all requests the chat target (TTFT p90 <= 100 ms) is missed, while each class meets its own
(chat's 100 ms, agent's 2 s)."""

from __future__ import annotations

import json

import pytest

from llm_call_anatomy.contract.adapter import Request
from llm_call_anatomy.harness.records import read_records
from llm_call_anatomy.reports import build
from llm_call_anatomy.workloads.reader import read_workload_file
from tests.workloads.trace.stand_in import StandIn, run_trace

ROWS = [[100 * i, 200 if i % 2 else 24, 3, [], i + 1, "agent" if i % 2 else "chat"] for i in range(20)]
TARGETS = ["chat:ttft_p90_ms=100", "agent:ttft_p90_ms=2000"]
SPEC = f"""
workloads:
  - name: mixed
    kind: trace
    rows: {json.dumps(ROWS)}
    block_size: 16
    time_scales: [1]
    warmup_requests: 0
    search_levels: 2
    search_targets: {json.dumps(TARGETS)}
"""


class ByLength(StandIn):
    name = "bylength"

    def delay_s(self, request: Request) -> float:
        return 0.25 if len(request.prompt_ids) > 100 else 0.01


@pytest.fixture(scope="module")
def run_dir(tiny_model_dir, tmp_path_factory):
    folder = tmp_path_factory.mktemp("trace-classes")
    return run_trace(SPEC, folder, tiny_model_dir, ByLength(), {"slo_targets": TARGETS})


def _levels(run_dir) -> dict[str, dict]:
    return {r["case"]: r for r in read_records(run_dir) if r["kind"] == "trace" and r.get("rep") is None}


def test_each_request_keeps_its_class(run_dir):
    trace = _levels(run_dir)["x1"]["extra"]["level"]["trace"]
    assert trace["classes"] == [r[5] for r in ROWS]
    assert trace["class_counts"] == {"chat": 10, "agent": 10}


def test_each_class_is_judged_against_its_own_target(run_dir):
    import pandas as pd

    from llm_call_anatomy.contract.slo import parse_targets
    from llm_call_anatomy.contract.traffic_classes import ALL
    from llm_call_anatomy.workloads.trace.report.analysis import analyse

    rows = pd.DataFrame(read_records(run_dir))
    d = analyse(rows.assign(skipped=rows.get("skipped")), parse_targets(TARGETS))
    (level,) = [r for r in d["levels"].to_dict("records") if r["case"] == "x1"]
    assert level["verdict:chat"] == "miss"  # all requests at the chat target: the agent's answers miss it
    # each class meets its own; a busy machine's submit lag (> 5 ms at p99) flags the whole level, and every
    # class with it: the flags are the level's
    lagged = level["lag_p99_ms"] > 5
    expect = "not offered" if lagged else "pass"
    assert (level["class:chat"], level["class:agent"], level[f"class:{ALL}"]) == (expect,) * 3
    caps = {r["target"]: r for r in d["capacity"].to_dict("records")}
    assert lagged or caps[ALL]["holds"] >= 1
    assert pd.isna(caps["chat (TTFT p90 ≤ 100 ms)"]["holds"])  # the whole traffic at chat's target: none


def test_the_search_brackets_each_class_at_its_own_target(run_dir):
    """The search for chat's target judges the chat requests alone: at 1x they pass (all requests would
    miss, the agent's answers being slower than chat's limit), so the search goes up, not down."""
    levels = _levels(run_dir)
    added = {c: r["extra"]["level"] for c, r in levels.items() if r["extra"]["level"].get("searched_for")}
    assert added and all(f["searched_for"] in ("chat", "agent") for f in added.values())
    x1 = [r for r in read_records(run_dir) if r.get("rep") is not None and r["case"] == "x1"]
    if max(r["submit_s"] - r["planned_submit_s"] for r in x1) <= 0.005:  # 1x offered as planned
        assert all(f["trace"]["time_scale"] > 1 for f in added.values()), added.keys()


def test_the_page_names_each_class_and_its_target(run_dir, tmp_path):
    html = build([run_dir], tmp_path / "report.html").read_text(encoding="utf-8")
    assert "chat (10 requests) at chat (TTFT p90 ≤ 100 ms)" in html
    assert "chat requests: chat (TTFT p90 ≤ 100 ms)" in html and "every class at its own target" in html


def test_a_class_without_a_target_of_its_name_is_not_judged(tmp_path):
    from llm_call_anatomy.contract.slo import parse_targets
    from llm_call_anatomy.contract.traffic_classes import targets_of_classes

    got = targets_of_classes({"classes": ["chat", "batchy", None]}, parse_targets(TARGETS))
    assert got["chat"].name == "chat" and got["batchy"] is None
    chosen = targets_of_classes(
        {"classes": ["batchy"], "class_targets": {"batchy": "agent"}}, parse_targets(TARGETS)
    )
    assert chosen["batchy"].name == "agent"


def test_a_class_is_judged_with_the_whole_levels_flags():
    """A class's requests are a thinned part of the level's arrivals: judged alone, its achieved rate is a
    quarter of the level's offered one ("not offered"); with the whole level's flags it passes."""
    from llm_call_anatomy.contract.capacity import judge
    from llm_call_anatomy.contract.level_stats import level_stats
    from llm_call_anatomy.contract.slo import parse_target

    def row(i: int) -> dict:
        t = i / 10
        return {
            "submit_s": t,
            "planned_submit_s": t,
            "first_token_s": t + 0.01,
            "finish_s": t + 0.03,
            "token_times_s": [t + 0.01, t + 0.02, t + 0.03],
            "ttft_ms": 10.0,
            "decode_ms_per_token": 10.0,
            "e2e_ms": 30.0,
            "prompt_tokens": 16,
            "load_rate_rps": 10.0,
            "error": None,
        }

    rows = [row(i) for i in range(80)]
    part = rows[::4]  # one class: every fourth request
    target = parse_target("chat:ttft_p90_ms=100")
    alone = judge(target, level_stats(part, None), {"arrival": "trace"})
    assert alone.decision == "not offered"
    within = judge(target, level_stats(part, None), {"arrival": "trace"}, level=level_stats(rows, None))
    assert within.decision == "pass" and not within.flags.get("not_offered")


def test_a_csv_or_jsonl_trace_names_each_requests_class(tmp_path):
    from llm_call_anatomy.workloads.trace.reader import read

    (tmp_path / "t.csv").write_text("timestamp,input_length,output_length,class\n0,10,2,chat\n5,20,3,agent\n")
    rows, bad = read(tmp_path / "t.csv")
    assert not bad and [r.traffic_class for r in rows] == ["chat", "agent"]
    assert rows[1].to_list()[5] == "agent"  # the spec's inline row keeps it
    (tmp_path / "t.jsonl").write_text(
        '{"timestamp": 0, "input_length": 5, "output_length": 1, "class": [1]}\n'
    )
    assert "class must be a name" in read(tmp_path / "t.jsonl")[1][0][1]


def test_trace_overrides_turn_the_search_on(tmp_path):
    from llm_call_anatomy.workloads import overrides

    (spec,) = read_workload_file(_write_spec(tmp_path))
    (searched,) = overrides.apply([spec], {"--trace": "search_levels=3,search_ratio=1.5"})
    assert (searched.search_levels, searched.search_ratio) == (3, 1.5)
    with pytest.raises(ValueError, match="search_max_scale"):
        overrides.apply([spec], {"--trace": "time_scales=1:8,search_max_scale=4"})


def _write_spec(folder):
    path = folder / "t.yaml"
    path.write_text(SPEC)
    return path
