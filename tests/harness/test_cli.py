"""Bad input gets one clear line on stderr and exit code 2, before anything runs."""

from __future__ import annotations

import pytest

from tests.conftest import compare, records


def one_line_error(proc) -> str:
    assert proc.returncode == 2, proc.stderr
    lines = [line for line in proc.stderr.strip().splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("compare.py: error: ")
    return lines[0]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--backend", "tensorrt"], "unknown backend 'tensorrt'"),
        (["--workloads", "conversation,poetry"], "unknown workload 'poetry'"),
        (["--model", "./no/such/model"], "no such directory"),
        (["--repeats", "0"], "--repeats must be at least 1"),
        (["--python", "vllm=/no/such/python"], "no such interpreter"),
        (["--json-temperatures", "0,0"], "expected distinct numbers >= 0"),
        (["--json-temperatures", "-1"], "expected distinct numbers >= 0"),
        (["--json-temperatures", "warm"], "expected distinct numbers >= 0"),
        (["--client-procs", "0", "--workloads", "load"], "--client-procs 0: give 1 or more client processes"),
        (["--client-procs", "100000", "--workloads", "load"], "more client processes than the"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, expected, tmp_path):
    proc = compare(*args, "--out", str(tmp_path / "run"), check=False, timeout=120)
    assert expected in one_line_error(proc)
    assert not (tmp_path / "run" / "records.jsonl").exists()


def test_unwritable_out(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    proc = compare("--out", str(blocker / "run"), check=False, timeout=120)
    assert "not writable" in one_line_error(proc) or "not a directory" in proc.stderr


def test_existing_run_needs_resume(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / "records.jsonl").write_text("")
    proc = compare("--out", str(out), check=False, timeout=120)
    assert "--resume" in one_line_error(proc)


def test_help_explains_backends_and_workloads():
    proc = compare("--help", timeout=120)
    for word in (
        "hf-graphs",
        "vllm",
        "sglang",
        "openai",
        "conversation",
        "sweep",
        "json",
        "template",
        "--resume",
    ):
        assert word in proc.stdout


def test_json_overrides_reach_the_plan(tmp_path):
    out = tmp_path / "run"
    compare(
        "--backend",
        "hf",
        "--workloads",
        "json",
        "--repeats",
        "1",
        "--json-calls",
        "1",
        "--json-temperatures",
        "0,1.0",
        "--no-report",
        "--out",
        str(out),
        timeout=600,
    )
    rows = records(out)
    assert {r["temperature"] for r in rows if r.get("temperature") is not None} == {0.0, 1.0}
    assert len([r for r in rows if r.get("mode") == "free"]) == 2  # one call per temperature
