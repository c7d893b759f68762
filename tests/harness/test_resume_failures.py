"""A resume whose backend cannot start leaves the run as it was (issue 26, item 8): no ``skipped``
records beside the measured ones, env/<backend>.json (the engine's configuration) kept, and exit 1 —
the resume did not finish. In-process with a fake backend."""

from __future__ import annotations

import json

import pytest

from llm_call_anatomy import backends
from llm_call_anatomy.harness import child
from tests.harness.fakes import prepare_run, small_workload


@pytest.fixture
def echo(monkeypatch):
    import tests.harness.fakes as fakes

    monkeypatch.setattr(fakes, "EchoBackend", fakes.echo_backend_class(), raising=False)
    monkeypatch.setitem(backends.REGISTRY, "echo", "tests.harness.fakes:EchoBackend")
    return fakes


def broken(fakes, error: type[Exception]):
    class Broken(fakes.EchoBackend):
        def start(self):
            raise error("the engine would not come up")

    return Broken


@pytest.mark.parametrize("error", [RuntimeError, backends.BackendUnavailable])
def test_a_resume_that_cannot_start_damages_nothing(tmp_path, tiny_model_dir, echo, monkeypatch, error):
    run = tmp_path / "run"
    prepare_run(run, small_workload(tmp_path), tiny_model_dir)
    assert child.main([str(run), "echo"]) == 0
    before = (run / "records.jsonl").read_bytes()
    env_before = json.loads((run / "env" / "echo.json").read_text())
    assert "engine" in env_before
    doc = json.loads((run / "run.json").read_text())
    (run / "run.json").write_text(json.dumps({**doc, "resume": True}))
    monkeypatch.setattr(echo, "EchoBackend", broken(echo, error))
    assert child.main([str(run), "echo"]) == 1  # the resume did not finish
    assert (run / "records.jsonl").read_bytes() == before  # no skipped records beside the measured ones
    assert json.loads((run / "env" / "echo.json").read_text()) == env_before  # the engine configuration kept


def test_an_old_run_json_options_dict_reaches_the_adapter_typed(tmp_path, tiny_model_dir, echo, monkeypatch):
    """An older run.json held one flat ``options`` dict for every backend: the child reads this backend's
    keys as its options type (the others left out), so such a run still resumes."""
    from dataclasses import dataclass

    from llm_call_anatomy.contract.adapter import BackendOptions

    @dataclass(frozen=True)
    class EchoOptions(BackendOptions):
        depth: int = 1

    seen = []

    class WithOptions(echo.EchoBackend):
        options_type = EchoOptions

        def start(self):
            seen.append(self.options)

    monkeypatch.setattr(echo, "EchoBackend", WithOptions)
    run = tmp_path / "run"
    prepare_run(run, small_workload(tmp_path), tiny_model_dir)
    doc = json.loads((run / "run.json").read_text())
    doc["settings"]["options"] = {"depth": 3, "timing": "stream"}
    (run / "run.json").write_text(json.dumps(doc))
    assert child.main([str(run), "echo"]) == 0
    assert seen == [EchoOptions(depth=3)]


@pytest.mark.openai
def test_a_resume_refuses_another_model_behind_the_same_url(tmp_path, tiny_model_dir):
    """Item 12: the served model, server kind and version belong to the resume check (they are known once the
    backend started: the child compares them with env/<backend>.json and leaves the run as it was)."""
    from tests.harness.faulty_server import Faults, faulty_server

    run = tmp_path / "run"
    prepare_run(run, small_workload(tmp_path), tiny_model_dir)
    doc = json.loads((run / "run.json").read_text())
    with faulty_server(Faults(every_nth_429=4)) as server:  # a failed request: the resume has work to do
        doc["settings"] = {**doc["settings"], "base_url": server.url, "request_timeout_s": 30}
        (run / "run.json").write_text(json.dumps(doc))
        assert child.main([str(run), "openai"]) == 1
        assert json.loads((run / "env" / "openai.json").read_text())["identity"]["served_model"] == "tiny"
        before = (run / "records.jsonl").read_bytes()
        (run / "run.json").write_text(json.dumps({**doc, "resume": True}))
        server.restart(Faults(model_id="other-model"))
        assert child.main([str(run), "openai"]) == 1
        assert (run / "records.jsonl").read_bytes() == before
        server.restart(Faults(model_id="tiny"))
        assert child.main([str(run), "openai"]) == 0  # the same model again: the resume finishes
    assert (run / "records.jsonl").read_bytes() != before
