"""A crash mid-run keeps every record written; --resume completes the run without redoing cases."""

from __future__ import annotations

import json
import os
import signal

from llm_call_anatomy.harness.records import read_records
from tests.conftest import compare, records
from tests.harness.background_runs import child_pids, start_run

ARGS = ("--backend", "hf", "--workloads", "sweep,template", "--repeats", "2", "--no-report")


def test_kill_the_child_then_resume(tmp_path):
    out = tmp_path / "run"
    parent = start_run(ARGS, out, 4)
    path = out / "records.jsonl"
    pids = child_pids(out)
    assert pids, "the child process was not found"
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    _, err = parent.communicate(timeout=120)
    assert "exited with code" in err
    assert parent.returncode == 1  # a crashed child is a failed run (#15.5)

    before = path.read_text().splitlines()
    assert 4 <= len(before) < 25  # 10 sweep + 15 template + 1 probe would be complete
    for line in before:
        json.loads(line)  # every line written is whole

    compare(*ARGS, "--out", str(out), "--resume")
    rows = read_records(out)
    assert len(rows) == 10 + 15 + 1
    assert all(not r["error"] and not r["skipped"] for r in rows)
    # what was done before the crash was not measured again
    raw = records(out)
    first_key = (raw[0]["workload"], raw[0]["mode"], raw[0]["case"], raw[0]["rep"])
    assert sum((r["workload"], r["mode"], r["case"], r["rep"]) == first_key for r in raw) == 1


def test_resume_refuses_a_different_plan(tmp_path):
    out = tmp_path / "run"
    compare("--backend", "hf", "--workloads", "template", "--repeats", "1", "--no-report", "--out", str(out))
    proc = compare(
        "--backend",
        "hf",
        "--workloads",
        "sweep",
        "--repeats",
        "1",
        "--no-report",
        "--out",
        str(out),
        "--resume",
        check=False,
    )
    assert proc.returncode == 2 and "differs" in proc.stderr


def test_resume_does_not_rerun_a_load_level_that_stopped_at_its_seconds(tmp_path):
    """A level capped by ``seconds`` leaves some planned requests unstarted; it is still done, and --resume
    must not run it again beside its records (seen on the H200: a resumed hf-cb run repeated its levels).

    The cap is made certain, not a race against the machine's speed: each user thinks 2 s between its two
    turns and the level stops starting requests after 1 s (the shortest window a load takes), so no second
    turn can start however fast the model answers (on a fast CPU all 8 requests once finished inside a
    plain 0.3 s cap)."""
    out = tmp_path / "run"
    args = (
        "--backend",
        "hf",
        "--workloads",
        "load",
        "--load",
        "levels=1,users=4,max_turns=2,output_tokens=4,prompt_tokens=64,shared_prefix_tokens=0,seconds=1,"
        "think_time_s=2",
        "--out",
        str(out),
        "--no-report",
    )
    compare(*args)
    first = records(out)
    levels = [r for r in first if r["rep"] is None]
    assert levels and any(
        r["extra"]["level"]["requests_started"] < r["extra"]["level"]["requests_planned"] for r in levels
    )  # the cap did stop a level early
    compare(*args, "--resume")
    assert records(out) == first  # nothing ran again, nothing was appended


def test_a_resume_with_other_settings_is_refused_before_the_tokenizer_and_the_plan(
    tmp_path, capsys, monkeypatch
):
    """issue 43: the settings are checked before the tokenizer loads and the plan renders (seconds)."""
    from llm_call_anatomy.harness import cli

    run = tmp_path / "run"
    run.mkdir()
    (run / "records.jsonl").write_text("")
    (run / "run.json").write_text(json.dumps({"settings": {"dtype": "bfloat16"}}))

    def no_plan(*args, **kwargs):
        raise AssertionError("the plan was rendered before the settings were checked")

    monkeypatch.setattr(cli, "plan_prompts", no_plan)
    code = cli.main(["--backend", "hf", "--model", "tiny", "--dtype", "float32", "--device", "cpu",
                     "--workloads", "template", "--out", str(run), "--resume"])  # fmt: skip
    assert code == 2
    assert "dtype was 'bfloat16', now 'float32'" in capsys.readouterr().err
