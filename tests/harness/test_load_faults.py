"""The load workload through a faulty server (issue 26, "Done means"): 429s, short answers, inflated usage
and a death in the middle of a level. The page's figures count only what was served, every level shows
its failures, and ``--resume`` against the server brought back reaches an uninterrupted run's key set
with no stale errors; a redone ``seconds``-bounded level keeps nothing of the failed attempt (items 1,
4-7)."""

from __future__ import annotations

import json
import subprocess

import pytest

from llm_call_anatomy.contract.plan import Plan
from llm_call_anatomy.contract.records import row_key
from llm_call_anatomy.harness.records import read_records
from llm_call_anatomy.reports.assemble import assemble
from llm_call_anatomy.reports.runs import read_runs
from tests.conftest import compare as run_compare
from tests.harness.faulty_server import Faults, faulty_server

pytestmark = [pytest.mark.openai, pytest.mark.slow]  # two or three runs of compare.py each
LOAD = (
    "levels=1:3,users=3,requests=6,max_turns=2,rates=,output_tokens=6,prompt_tokens=48,shared_prefix_tokens=0"
)


def compare(url: str, out, *extra: str, load: str = LOAD) -> subprocess.CompletedProcess:
    """The load workload against the server at ``url``; the finished process, whatever its exit status."""
    return run_compare(
        "--backend", "openai", "--base-url", url, "--model", "tiny", "--workloads", "load", "--load", load,
        "--out", str(out), *extra, timeout=240, check=False,
    )  # fmt: skip


def planned_keys(out) -> set[tuple]:
    """What an uninterrupted run records: every timed request and one record per level."""
    plan = Plan.from_json((out / "plan.json").read_text())
    keys = set()
    for group in plan.groups:
        if group.warmup:
            continue
        keys |= {("openai", *s.key()) for s in group.steps}
        keys.add(("openai", *group.steps[0].key()[:4], None, None, None))
    return keys


def test_faulty_server_then_resume(tmp_path):
    out = tmp_path / "run"
    faults = Faults(every_nth_429=5, short=7, inflated_usage=11, die_after=18)
    with faulty_server(faults) as server:
        first = compare(server.url, out)
        assert first.returncode == 1, first.stderr[-3000:]  # failed requests: exit 1, the report all the same
        assert "report: " in first.stdout
        rows = read_records(out)
        errors = [r["error"] for r in rows if r["error"] and r["rep"] is not None]
        assert any("429" in e for e in errors) and any("short answer under ignore_eos" in e for e in errors)
        assert any(
            "output tokens for max_tokens" in e for e in errors
        )  # inflated usage: an error, not a figure
        assert any("Connection" in e or "finish reason" in e for e in errors)  # the death

        planned = json.loads((out / "env.json").read_text())["planned_levels"]
        assert planned["load-fixed"] == [
            ["S=0", "C=1"],
            ["S=0", "C=3"],
        ]  # the report names levels never reached
        report = assemble(read_runs([out]))
        served = [r for r in rows if r["kind"] == "load" and r["rep"] is not None and not r["error"]]
        levels = [
            lv for s in report.sections if s.kind == "load" for lv in s.data["levels"].to_dict("records")
        ]
        assert sum(lv["requests"] for lv in levels) == len(served)
        assert sum(lv["errors"] for lv in levels) == len(errors)
        assert all(r["output_tokens"] == 6 for r in served)  # what was served is what was asked
        for lv in levels:  # tok/s: the served requests' tokens over the window, the inflated counts nowhere
            tokens = sum(
                r["output_tokens"]
                for r in served
                if (r["workload"], r["mode"], r["case"]) == (lv["workload"], lv["mode"], lv["case"])
            )
            assert lv["output_tps"] == pytest.approx(tokens / lv["window_s"])
        failing = [lv for lv in levels if lv["errors"]]
        assert failing and any(
            lv["requests"] == 0 for lv in levels
        )  # after the death: levels of failures only
        page = (out / "report.html").read_text()
        for lv in failing:
            assert f"{lv['requests']} ({lv['errors']} failed)" in page

        server.restart()  # the server is back, healthy, on the same port
        again = compare(server.url, out, "--resume", "--no-report")
        assert again.returncode == 0, again.stderr[-3000:]
    rows = read_records(out)
    assert [r["error"] for r in rows if r["error"]] == []  # no stale errors
    assert {row_key(r) for r in rows} == planned_keys(out)  # an uninterrupted run's key set


def test_a_redone_seconds_level_keeps_nothing_of_the_failed_attempt(tmp_path):
    out = tmp_path / "run"
    load = (
        "levels=1,users=4,max_turns=2,rates=,output_tokens=4,prompt_tokens=48,shared_prefix_tokens=0,"
        "seconds=1"
    )
    with faulty_server(Faults(every_nth_429=2)) as server:  # fast: the whole level inside its second
        compare(server.url, out, "--no-report", load=load)
        server.restart(Faults(token_gap_s=0.4))  # slow: one request a level reaches, then its second is over
        again = compare(server.url, out, "--no-report", "--resume", load=load)
        assert again.returncode == 0, again.stderr[-3000:]
    fixed = [r for r in read_records(out) if r["workload"] == "load-fixed" and r["rep"] is not None]
    assert [r["error"] for r in fixed] == [None] * len(fixed) and 0 < len(
        fixed
    ) < 6  # only the redo's requests
    level = next(r for r in read_records(out) if r["workload"] == "load-fixed" and r["rep"] is None)
    assert level["extra"]["level"]["requests_started"] == len(fixed)
