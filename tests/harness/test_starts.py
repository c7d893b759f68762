"""Engine starts as a dimension (``--starts K``), the interleaved order, and where a run's commit comes from.

The CLI runs for real on HF (tiny model, CPU) with a small workload file: each engine start is its own
child process and writes its own records and its own entry in env.json.
"""

from __future__ import annotations

import json
import subprocess
import textwrap

import pytest

from llm_call_anatomy.harness import env as harness_env
from llm_call_anatomy.harness.env import COMMIT_FILE, MemoryWatch, commit_provenance, gpu_memory_used_bytes
from llm_call_anatomy.workloads.kinds import repeated_kinds
from llm_call_anatomy.workloads.plan import rotated
from tests.conftest import compare, records

LENGTHS = [16, 40, 24]
STUDY = f"""
workloads:
  - name: chat
    kind: conversation
    max_new_tokens: 2
    turns:
      - {{user: "Where is order 7?", assistant: It shipped.}}
      - {{user: "And order 8?", assistant: Not yet.}}
  - name: lengths
    kind: sweep
    lengths: {LENGTHS}
    decode_tokens: 3
    filler: The on-call engineer opened the dashboard at three in the morning.
  - name: answers
    kind: template
    system: Answer with the short answer only.
    max_new_tokens: 2
    questions:
      - {{question: "Which HTTP status code means Not Found?", answer: "404"}}
    formats:
      - name: chat_template
      - {{name: plain, text: "{{system}} Q: {{question}} A:"}}
"""


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("starts")
    study = tmp / "study.yaml"
    study.write_text(textwrap.dedent(STUDY))
    out = tmp / "run"
    args = ("--workload-file", str(study), "--backend", "hf", "--starts", "2", "--repeats", "2",
            "--no-report", "--out", str(out))  # fmt: skip
    compare(*args)
    return out, args


def test_every_start_is_a_process_of_its_own_and_later_starts_repeat_the_latency_workloads(run):
    out, _ = run
    rows = [r for r in records(out) if not r["skipped"]]
    assert {r["engine_start"] for r in rows} == {0, 1}
    assert {r["workload"] for r in rows if r["engine_start"] == 0} == {"chat", "lengths", "answers"}
    assert {r["kind"] for r in rows if r["engine_start"] == 1} == set(repeated_kinds())
    assert all(r["error"] is None and r["ttft_ms"] > 0 and r["timing_source"] == "wall-clock" for r in rows)
    assert all(r["engine_ttft_ms"] is None for r in rows)  # HF has no clock of its own
    env = json.loads((out / "env.json").read_text())
    starts = env["backends"]["hf"]["starts"]
    assert [s["engine_start"] for s in starts] == [0, 1]
    for s in starts:
        assert s["startup_s"] > 0 and s["wall_s"] >= s["startup_s"]
        assert s["kv_cache_tokens"] is None and "DynamicCache" in s["kv_cache_tokens_source"]
        assert s["peak_gpu_memory_bytes"] is None and s["peak_gpu_memory_source"]  # a CPU: not 0
        assert (
            s["gpu_host"]["hostname"] and s["gpu_host"]["declared"] is None
        )  # what else ran on the GPU host
    tok = env["tokenizer"]  # the run's tokenizer and the seed's template prompt in its tokens
    assert tok["size"] > 0 and tok["seed_template_prompt"]["tokens"] > 10
    assert set(starts[1]["workload_wall_s"]) == {"chat", "lengths"}
    assert env["backends"]["hf"]["startup_s"] == starts[0]["startup_s"]
    assert env["starts"] == 2 and set(env["timing_definitions"]) >= {"ttft_ms", "engine_ttft_ms"}
    assert env["order"] and env["git_commit_source"] == "git" and env["git_commit"]


def test_lengths_and_modes_rotate_between_repeats_and_starts(run):
    out, _ = run
    rows = [r for r in records(out) if not r["skipped"]]  # file order = run order
    for start in (0, 1):
        for rep in (0, 1):
            sweep = [
                int(r["case"][2:])
                for r in rows
                if r["workload"] == "lengths" and (r["engine_start"], r["rep"]) == (start, rep)
            ]
            assert sweep == rotated(LENGTHS, rep + start)
            modes = list(
                dict.fromkeys(
                    r["mode"]
                    for r in rows
                    if r["workload"] == "chat" and (r["engine_start"], r["rep"]) == (start, rep)
                )
            )
            assert modes == rotated(["full", "cached"], rep + start)
    formats = [r["mode"] for r in rows if r["workload"] == "answers" and r["mode"] != "attention"]
    assert formats == ["chat_template", "plain"]  # one question: the first rotation


def test_resume_starts_no_engine_whose_requests_are_all_recorded(run):
    out, args = run
    before = len(records(out))
    proc = compare(*args, "--resume")
    assert proc.stdout.count("every request already recorded") == 2
    assert len(records(out)) == before


def test_starts_must_be_positive(tmp_path):
    proc = compare("--starts", "0", "--out", str(tmp_path / "x"), check=False)
    assert proc.returncode == 2 and "--starts must be at least 1" in proc.stderr


def test_commit_from_the_variable_else_git_else_the_file_else_the_build(tmp_path, monkeypatch):
    monkeypatch.delenv("LCA_GIT_COMMIT", raising=False)
    monkeypatch.setattr(harness_env, "BUILD_STAMP", tmp_path / "harness" / COMMIT_FILE)
    assert commit_provenance(tmp_path) == (None, None)  # no .git, nothing passed in, not built
    harness_env.BUILD_STAMP.parent.mkdir()
    harness_env.BUILD_STAMP.write_text("b0117\n")  # the commit a wheel was built from (setup.py)
    assert commit_provenance(tmp_path) == ("b0117", "build")
    (tmp_path / COMMIT_FILE).write_text("abc123\n")
    assert commit_provenance(tmp_path) == ("abc123", COMMIT_FILE)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q",
                    "--allow-empty", "-m", "x"], check=True)  # fmt: skip
    commit, source = commit_provenance(tmp_path)
    assert source == "git" and len(commit.split("-")[0]) == 40
    monkeypatch.setenv("LCA_GIT_COMMIT", "def456")  # passed in beats a (possibly stale) .git
    assert commit_provenance(tmp_path) == ("def456", "LCA_GIT_COMMIT")


def test_memory_is_read_on_the_visible_gpu(monkeypatch):
    seen = []

    def fake_run(argv, **kw):
        seen.append(argv)
        return subprocess.CompletedProcess(argv, 0, stdout="2048\n", stderr="")

    monkeypatch.setattr("llm_call_anatomy.harness.env.subprocess.run", fake_run)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1,0")
    assert gpu_memory_used_bytes() == 2048 * 2**20
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    gpu_memory_used_bytes()
    assert [a[-1] for a in seen] == ["--id=1", "--id=0"]


def test_peak_memory_is_none_with_a_reason_not_zero(monkeypatch):
    readings = iter([1000, 1000, 1000])
    monkeypatch.setattr("llm_call_anatomy.harness.env.gpu_memory_used_bytes", lambda: next(readings))
    watch = MemoryWatch()
    watch.sample()
    watch.sample()
    assert watch.facts()["peak_gpu_memory_bytes"] is None  # nothing rose: not 0
    readings = iter([1000, 5000, 3000])
    watch = MemoryWatch()
    watch.sample()
    watch.sample()
    assert watch.facts()["peak_gpu_memory_bytes"] == 4000
