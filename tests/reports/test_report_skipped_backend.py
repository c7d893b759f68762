"""A backend skipped whole (not installed here, needs a GPU) beside one that ran a load workload (issue 43):
the Backends table gives its skip reason, not "not run (planned load levels with no records: the run
stopped before them)", and the summary names it in the variant's main row with its reason, never in rows
of its own titled "other requests: sglang" (it ran no requests)."""

from __future__ import annotations

import json

from llm_call_anatomy.reports.assemble import assemble
from llm_call_anatomy.reports.runs import read_runs
from tests.reports.records import record
from tests.reports.test_report_capacity_not_run import cut_run

WHY = "sglang is not installed here (sglang): pip install 'llm-call-anatomy[sglang]'"


def skipped_run(tmp_path):
    run = cut_run(tmp_path, ran=(1, 8, 32, 128))  # vllm ran every planned level
    skip = record(
        backend="sglang", workload="lf", mode=None, case=None, rep=None, temperature=None, skipped=WHY
    )
    with (run / "records.jsonl").open("a", encoding="utf-8") as f:
        f.write(json.dumps(skip) + "\n")
    return assemble(read_runs([run]))


def test_a_backend_skipped_whole_is_not_said_to_have_stopped_before_its_levels(tmp_path):
    report = skipped_run(tmp_path)
    status = {s.backend: s for s in report.status}
    assert status["sglang"].state == "skipped"
    assert status["sglang"].missing == [], status["sglang"].missing
    assert status["vllm"].missing == []


def test_a_skipped_backend_gets_no_summary_rows_of_other_requests(tmp_path):
    report = skipped_run(tmp_path)
    titles = [j.job for j in report.jobs if j.job.startswith("Many users")]
    assert not any("other requests" in t for t in titles), titles
    chat = next(j for j in report.jobs if j.job == "Many users: chat (lf · S=0)")
    values = dict(chat.values)
    assert values["sglang"] == f"skipped: {WHY}", values
    assert "vllm" in values
