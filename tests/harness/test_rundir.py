"""Run-directory safety: whole files, whole lines, a torn tail cut, one writer, a full disk (#15.2, .6,
.9)."""

from __future__ import annotations

import errno
import json
import os

import pytest

from llm_call_anatomy.contract.files import atomic_write_text
from llm_call_anatomy.contract.records import Record
from llm_call_anatomy.harness import records as records_module
from llm_call_anatomy.harness import rundir
from llm_call_anatomy.harness.records import RecordWriter, read_records


def rec(case: str) -> Record:
    return Record(run_id="r", backend="hf", workload="sweep", mode="greedy", case=case, rep=0, ttft_ms=1.0)


# --- 15.2 ---------------------------------------------------------------------------------------
def test_a_torn_tail_is_cut_before_appending(tmp_path, capsys):
    with RecordWriter(tmp_path) as w:
        w.write(rec("N=16"))
    with (tmp_path / "records.jsonl").open("a") as f:
        f.write('{"run_id": "r", "backend": "hf", "workl')  # a crash mid-line
    with RecordWriter(tmp_path) as w:  # the resumed run appends
        w.write(rec("N=32"))
    lines = (tmp_path / "records.jsonl").read_text().splitlines()
    assert [json.loads(x)["case"] for x in lines] == ["N=16", "N=32"]
    assert "torn" in capsys.readouterr().err


def test_cut_torn_tail_keeps_whole_files(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_bytes(b"")
    assert rundir.cut_torn_tail(path) == 0
    path.write_bytes(b"a\nb\n")
    assert rundir.cut_torn_tail(path) == 0 and path.read_bytes() == b"a\nb\n"
    path.write_bytes(b"no newline at all")
    assert rundir.cut_torn_tail(path) == 17 and path.read_bytes() == b""
    assert rundir.cut_torn_tail(tmp_path / "missing") == 0


# --- 15.9 ---------------------------------------------------------------------------------------
def test_a_record_is_written_whole_or_not_at_all(tmp_path, monkeypatch):
    with RecordWriter(tmp_path) as w:
        w.write(rec("N=16"))
        before = (tmp_path / "records.jsonl").read_bytes()
        real_write = os.write

        def half_then_full(fd, data):
            real_write(fd, data[: len(data) // 2])
            raise OSError(errno.ENOSPC, "No space left on device")

        monkeypatch.setattr(records_module.os, "write", half_then_full)
        with pytest.raises(OSError) as info:
            w.write(rec("N=32"))
        assert rundir.is_disk_full(info.value)
        monkeypatch.undo()
        assert (tmp_path / "records.jsonl").read_bytes() == before  # no torn line left behind
        w.write(rec("N=64"))
    assert [r["case"] for r in read_records(tmp_path)] == ["N=16", "N=64"]


def test_atomic_write_leaves_the_old_file_on_failure(tmp_path, monkeypatch):
    path = tmp_path / "plan.json"
    atomic_write_text(path, '{"old": true}')

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(rundir.os, "fsync", full)
    with pytest.raises(OSError):
        atomic_write_text(path, '{"new": true, "big": "' + "x" * 100_000 + '"}')
    monkeypatch.undo()
    assert json.loads(path.read_text()) == {"old": True}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plan.json"]  # no temporary file left
    atomic_write_text(path, '{"new": true}')
    assert json.loads(path.read_text()) == {"new": True}


def test_env_files_are_written_atomically(tmp_path, monkeypatch):
    from llm_call_anatomy.harness import env

    calls = []
    monkeypatch.setattr(env, "atomic_write_text", lambda p, t: calls.append(p.name) or p.write_text(t))
    env.write_json(tmp_path / "run.json", {"a": 1})
    assert calls == ["run.json"]


# --- 15.6 ---------------------------------------------------------------------------------------
def test_the_lock_refuses_a_second_holder(tmp_path):
    fd = rundir.lock(tmp_path)
    with pytest.raises(rundir.RunDirBusy, match=f"pid {os.getpid()}"):
        rundir.lock(tmp_path)
    os.close(fd)
    os.close(rundir.lock(tmp_path))  # free again once the holder is gone


def test_the_lock_file_goes_after_a_clean_finish_and_stays_after_a_stop(tmp_path):
    """issue 43: a finished run leaves no .lock; a run stopped short keeps it (the next --resume takes it)."""
    run = tmp_path / "run"
    with rundir.claim(run):
        (run / "records.jsonl").write_text("")
    assert not (run / rundir.LOCK).exists()
    with pytest.raises(KeyboardInterrupt), rundir.claim(run):
        raise KeyboardInterrupt
    assert (run / rundir.LOCK).exists()


def test_a_lock_file_removed_by_its_finished_holder_is_not_locked(tmp_path):
    """A process that opened the lock file before its holder removed it locks the file now there, not the
    removed one (else two writers would each hold a lock)."""
    first = rundir.lock(tmp_path)
    opened = os.open(tmp_path / rundir.LOCK, os.O_RDWR)
    (tmp_path / rundir.LOCK).unlink()  # the holder finished
    os.close(first)
    assert not rundir._still_there(tmp_path / rundir.LOCK, opened)
    os.close(opened)
    fd = rundir.lock(tmp_path)
    assert rundir._still_there(tmp_path / rundir.LOCK, fd)
    with pytest.raises(rundir.RunDirBusy):
        rundir.lock(tmp_path)
    os.close(fd)
