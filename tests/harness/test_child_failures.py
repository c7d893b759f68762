"""The child process on failure paths, in-process with a fake backend: markup in names, a full disk (#15.4,
#15.9)."""

from __future__ import annotations

import errno

import pytest

from llm_call_anatomy import backends
from llm_call_anatomy.harness import child
from llm_call_anatomy.harness import records as records_module
from llm_call_anatomy.harness.records import read_records
from tests.harness.fakes import SMALL, prepare_run, small_workload


@pytest.fixture
def echo(monkeypatch):
    import tests.harness.fakes as fakes

    monkeypatch.setattr(fakes, "EchoBackend", fakes.echo_backend_class(), raising=False)
    monkeypatch.setitem(backends.REGISTRY, "echo", "tests.harness.fakes:EchoBackend")


def test_markup_in_a_workload_name_does_not_stop_the_run(tmp_path, tiny_model_dir, echo):  # 15.4
    text = SMALL.replace("name: chat", 'name: "chat [/bold]"').replace(
        "name: lengths", 'name: "[red]lengths"'
    )
    prepare_run(tmp_path / "run", small_workload(tmp_path, text), tiny_model_dir)
    assert child.main([str(tmp_path / "run"), "echo"]) == 0
    rows = read_records(tmp_path / "run")
    assert {r["workload"] for r in rows} == {"chat [/bold]", "[red]lengths"}
    assert len(rows) == 2 * 3 + 2 and not any(r["error"] for r in rows)


def test_a_full_disk_is_one_line_and_no_torn_record(
    tmp_path, tiny_model_dir, echo, monkeypatch, capsys
):  # 15.9
    prepare_run(tmp_path / "run", small_workload(tmp_path), tiny_model_dir)
    real_write, calls = records_module.os.write, []

    def fills_up(fd, data):
        calls.append(1)
        if len(calls) > 3:
            real_write(fd, data[:10])
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(records_module.os, "write", fills_up)
    code = child.main([str(tmp_path / "run"), "echo"])
    err = capsys.readouterr().err
    assert code == 1
    assert "Traceback" not in err and "disk is full" in err and "--resume" in err
    lines = (tmp_path / "run" / "records.jsonl").read_bytes()
    assert lines.endswith(b"\n") and len(lines.splitlines()) == 3
