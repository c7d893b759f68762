"""The Load section counts failed requests (issue 26, items 1-2): a failed request is an SLO miss,
tok/s counts what was served, every level shows its failures, an all-failed level stays on the page
and is never a peak; engine facts that cannot be true (a negative counter, a KV peak above 100 %)
are not printed as figures, and a backend that reports no preemptions gets no "KV cache ran out"."""

from __future__ import annotations

import pandas as pd
import pytest

from llm_call_anatomy.reports.assemble import assemble
from llm_call_anatomy.reports.runs import read_runs
from tests.reports.records import record, write_run
from tests.reports.test_report_many_users import level_records


def failing(
    rows: list[dict], failed: set[int], error: str = "APIStatusError: 429 Too Many Requests"
) -> list[dict]:
    """The level's requests ``failed`` (by rep) made failures: no tokens, an error, still submitted and
    finished."""
    out = []
    for r in rows:
        if r["rep"] in failed:
            r = {
                **r,
                "error": error,
                "ttft_ms": None,
                "decode_ms_per_token": None,
                "output_tokens": None,
                "output_token_ids": None,
                "first_token_s": None,
                "token_times_s": [],
                "cached_tokens": None,
            }
        out.append(r)
    return out


def section_levels(tmp_path, rows, slo=None):
    report = assemble(read_runs([write_run(tmp_path / "run", rows, {"slo": slo} if slo else None)]))
    section = next(s for s in report.sections if s.kind == "load")
    return report, section, section.data["levels"].set_index(["backend", "case"])


def test_failed_requests_count_against_the_slo_and_every_level_shows_them(tmp_path):
    rows = level_records("vllm", 1, 0.1, "batched by the engine")  # every TTFT within the SLO
    rows += failing(level_records("vllm", 4, 0.1, "batched by the engine"), {1, 3})  # 2 of 5 answered 429
    rows += failing(
        level_records("vllm", 8, 0.1, "batched by the engine"), {0, 1, 2, 3, 4}
    )  # the server died
    report, section, levels = section_levels(tmp_path, rows, slo={"ttft_ms": 2000.0, "tpot_ms": 200.0})
    c1, c4, c8 = (levels.loc[("vllm", c)] for c in ("C=1", "C=4", "C=8"))
    assert (c1["requests"], c1["errors"], c1["slo_share"]) == (5, 0, 1.0)
    assert (c4["requests"], c4["errors"]) == (3, 2)
    assert c4["slo_met"] == 3 and c4["slo_share"] == pytest.approx(3 / 5)  # a failed request is a miss
    assert c4["output_tps"] == pytest.approx(3 * 4 / c4["window_s"])  # tokens served, over the level's window
    assert (c8["requests"], c8["errors"], c8["slo_met"], c8["output_tps"]) == (
        0,
        5,
        0,
        0.0,
    )  # still on the page
    jobs = {j.job: j for j in report.jobs}
    assert (
        "at C=1" in jobs["Many users (lf · S=0)"].values[0][1]
    )  # the peak is a level that served every request
    # a failed request is a miss wherever it falls (two of C=4's first wave): the capacity is C=1
    assert dict(jobs["Many users: custom (lf · S=0)"].values)["vllm"].startswith(
        "C=1–4 (met at 1, missed at 4"
    )  # the run's --slo pair


def test_peak_of_levels_that_all_had_failures_says_so(tmp_path):
    rows = failing(level_records("vllm", 1, 0.1, "batched by the engine"), {0})
    report, _, _ = section_levels(tmp_path, rows)
    peak = {j.job: j for j in report.jobs}["Many users (lf · S=0)"].values[0][1]
    assert "1 failed" in peak


def test_the_level_table_names_failures(tmp_path):
    from llm_call_anatomy.workloads.load.report.tables import level_table

    rows = failing(level_records("vllm", 4, 0.1, "batched by the engine"), {0, 1, 2, 3, 4})
    _, section, _ = section_levels(tmp_path, rows)
    table = level_table(section.data["levels"], "vllm")
    assert table.rows[0][2] == "0 (5 failed)"


def test_no_preemption_caveat_for_a_backend_that_reports_none(tmp_path):
    rows = level_records("vllm", 1, 1.0, "batched by the engine") + level_records(
        "hf", 1, 1.0, "one at a time, queued (FIFO)"
    )
    report, _, levels = section_levels(tmp_path, rows)
    texts = [c.text for c in report.caveats]
    assert any(t.startswith("vllm preempted 2 requests") for t in texts)
    assert not any("hf preempted" in t for t in texts)  # hf's level reports no preemptions (NaN), not some


def test_impossible_engine_facts_are_not_figures(tmp_path):
    rows = level_records("vllm", 1, 1.0, "batched by the engine")
    rows[-1] = record(
        **{
            **rows[-1],
            "extra": {
                "level": {
                    "served_as": "batched by the engine",
                    "preemptions": -7.0,
                    "kv_cache_usage_peak": 1.6,
                }
            },
        }
    )
    report, _, levels = section_levels(tmp_path, rows)
    v = levels.loc[("vllm", "C=1")]
    assert pd.isna(v["preemptions"]) and pd.isna(v["kv_cache_usage_peak"])  # not reported, not a figure
    texts = " ".join(c.text for c in report.caveats)
    assert "preempted" not in texts and "ran out" not in texts
    assert (
        "preemptions -7 (a counter that went down" in texts and "KV-cache usage peak 160% (outside" in texts
    )


def test_counts_leave_out_the_level_records_and_missing_levels_are_named(tmp_path):
    from llm_call_anatomy.reports.analysis.status import workload_notes
    from llm_call_anatomy.reports.views.common import status_table

    rows = level_records("vllm", 1, 0.1, "batched by the engine")
    dead = failing(
        level_records("vllm", 4, 0.1, "batched by the engine"), {0, 1, 2, 3, 4}, "APIConnectionError: gone"
    )
    dead[-1] = {**dead[-1], "error": "every request of the level failed: APIConnectionError: gone"}
    planned = {"lf": [["S=0", "C=1"], ["S=0", "C=4"], ["S=0", "C=8"]]}  # the run was killed before C=8
    report = assemble(read_runs([write_run(tmp_path / "run", rows + dead, {"planned_levels": planned})]))
    assert workload_notes(report.ds.records, "lf") == [
        "vllm: 5 of 10 requests failed: APIConnectionError: gone"
    ]
    st = report.status[0]
    assert (st.measured, st.errors, st.state, st.missing) == (5, 5, "partly", ["lf · S=0 C=8"])
    table = status_table(report)
    assert "lf · S=0 C=8" in str(table.rows[0][4])
