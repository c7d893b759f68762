"""Adding a sixth workload kind is one folder (``tests/example_kind/brevity``), and no registry line.

The ``brevity`` room is found by its folder once its parent folder is on the ``workloads`` package's path
(``contract.registry.discover_rooms``), and a workload file of that kind goes through the real pipeline: the
reader validates it against the registered spec, the planner plans it, the child replays the plan
on a backend (an instant echo backend) with the kind's scoring, and the report gives it a section
with the kind's own blocks. No module outside ``tests/example_kind`` names the kind.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_call_anatomy import backends, workloads
from llm_call_anatomy.harness import child
from llm_call_anatomy.harness.records import read_records
from llm_call_anatomy.reports import build
from llm_call_anatomy.reports import kinds as report_kinds
from llm_call_anatomy.workloads import kinds as measuring_kinds
from llm_call_anatomy.workloads.reader import read_workload_file
from tests.harness import fakes

BREVITY = """\
workloads:
  - name: short
    kind: brevity
    prompts: ["Say yes.", "Say no."]
    max_new_tokens: 3
"""


ROOMS = Path(__file__).parent / "example_kind"  # a folder of kind rooms, as a plugin would ship one


@pytest.fixture
def brevity(monkeypatch):
    before = list(workloads.__path__)
    workloads.__path__[:] = [*before, str(ROOMS)]  # the plugin's folder, and no registry line
    assert "brevity" in measuring_kinds.rediscover() and "brevity" in report_kinds.rediscover()
    monkeypatch.setattr(fakes, "EchoBackend", fakes.echo_backend_class(), raising=False)
    monkeypatch.setitem(backends.REGISTRY, "echo", "tests.harness.fakes:EchoBackend")
    yield
    # the test's own patches of the registries are undone first: undone after the rediscovery, they would
    # put the plugin's entry back for every later test
    monkeypatch.undo()
    workloads.__path__[:] = before
    assert "brevity" not in measuring_kinds.rediscover() and "brevity" not in report_kinds.rediscover()
    assert "brevity" not in measuring_kinds.REGISTRY  # no later test sees the plugin


def test_the_file_format_knows_a_registered_kind_and_only_then(tmp_path, brevity, monkeypatch):
    path = fakes.small_workload(tmp_path, BREVITY)
    (spec,) = read_workload_file(path)
    assert spec.kind == "brevity" and spec.prompts == ["Say yes.", "Say no."]
    assert set(measuring_kinds.names()) == set(report_kinds.names())  # both halves found
    assert measuring_kinds.REGISTRY["brevity"] == "llm_call_anatomy.workloads.brevity.kind:KIND"
    monkeypatch.delitem(measuring_kinds.REGISTRY, "brevity")
    with pytest.raises(ValueError, match="unknown kind 'brevity'"):
        read_workload_file(path)


def test_plan_records_report(tmp_path, tiny_model_dir, brevity):
    run = tmp_path / "run"
    fakes.prepare_run(run, fakes.small_workload(tmp_path, BREVITY), tiny_model_dir, repeats=2)
    assert child.main([str(run), "echo"]) == 0
    rows = read_records(run)
    assert len(rows) == 2 * 2 and {r["kind"] for r in rows} == {"brevity"}
    assert all(
        r["clean"] is False and r["output_tokens"] == 3 for r in rows
    )  # echo never stops on its own: scored
    (run / "env.json").write_text('{"run_id": "run"}')
    html = build([run], tmp_path / "report.html").read_text(encoding="utf-8")
    assert "Stopped on its own" in html and "0/4" in html  # the kind's own block, from its own analysis


def test_the_runner_takes_the_group_runner_from_the_kind(tmp_path, tiny_model_dir, brevity, monkeypatch):
    monkeypatch.setitem(
        measuring_kinds.REGISTRY, "brevity", "llm_call_anatomy.workloads.brevity.kind:AS_LEVELS"
    )
    run = tmp_path / "run"
    fakes.prepare_run(run, fakes.small_workload(tmp_path, BREVITY), tiny_model_dir)
    assert child.main([str(run), "echo"]) == 0
    rows = read_records(
        run
    )  # the concurrent runner needs the load capability, which echo lacks: skipped, not run
    assert rows and {r["skipped"] for r in rows} == {"echo does not support load"}
    # a backend that says what would give it the capability: the reason ends with it (hf's grammar, #43)
    monkeypatch.setattr(fakes.EchoBackend, "why_not", lambda self, c: f"without {c}lib: pip install x[{c}]")
    again = tmp_path / "again"
    fakes.prepare_run(again, fakes.small_workload(tmp_path, BREVITY), tiny_model_dir)
    assert child.main([str(again), "echo"]) == 0
    assert {r["skipped"] for r in read_records(again)} == {
        "echo does not support load without loadlib: pip install x[load]"
    }
