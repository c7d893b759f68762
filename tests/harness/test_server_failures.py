"""A server that fails every request: the run goes on, the report says why, the exit status says so (#15.1,
.4, .5, .12)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from llm_call_anatomy.harness.records import read_records
from tests.conftest import compare
from tests.harness.fakes import failing_server, small_workload

KEY = "sk-live-0123456789abcdefSECRET"
pytestmark = pytest.mark.openai


def run_against_failing_server(tmp_path, *extra: str) -> tuple[subprocess.CompletedProcess, object]:
    out = tmp_path / "run"
    env = {**os.environ, "LCA_FAKE_KEY": KEY}
    with failing_server() as url:
        proc = compare(
            "--backend", "openai", "--base-url", url, "--api-key-env", "LCA_FAKE_KEY",
            "--workload-file", str(small_workload(tmp_path)), "--repeats", "1", "--out", str(out), *extra,
            timeout=300, check=False, env=env,
        )  # fmt: skip
    return proc, out


@pytest.fixture(scope="module")
def failed_run(tmp_path_factory):
    return run_against_failing_server(tmp_path_factory.mktemp("failing"))


def test_every_request_failed_still_gives_a_report(failed_run):  # 15.1
    proc, out = failed_run
    assert "report: " in proc.stdout and "KeyError" not in proc.stderr, proc.stderr[-3000:]
    page = (out / "report.html").read_text()
    rows = read_records(out)
    assert rows and all(r["error"] for r in rows)
    assert "failed" in page and "InternalServerError" in page  # the section says what failed and why


def test_markup_in_a_server_error_does_not_stop_the_run(failed_run):  # 15.4
    proc, out = failed_run
    assert "MarkupError" not in proc.stderr
    assert {r["workload"] for r in read_records(out)} == {"chat", "lengths"}  # both workloads ran
    assert "[/bold] engine crashed" in proc.stderr  # printed as the server wrote it


def test_a_backend_that_errored_exits_non_zero(failed_run):  # 15.5
    proc, _ = failed_run
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert "report: " in proc.stdout  # the report is written all the same
    # every request failed: nothing was measured, and the last line says so (#43)
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("compare.py: nothing was measured: openai: every request failed (first: ")
    assert last.endswith("(exit 1)")


def test_a_key_the_server_echoes_is_redacted_everywhere(failed_run):  # 15.12
    proc, out = failed_run
    assert KEY not in proc.stdout + proc.stderr
    for path in out.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path
    assert any("[redacted]" in (r["error"] or "") for r in read_records(out))


# --- a launched server that dies in the middle of a load level ------------------------------------
DYING_LOAD = """\
workloads:
  - name: load-fixed
    kind: load
    shape: fixed
    prompt_tokens: 16
    shared_prefix_tokens: [0]
    output_tokens: 4
    levels: [1, 3, 2]
    requests: 6
    warmup_requests: 1
"""


@pytest.mark.parametrize("chunked", [False, True], ids=["http1.0-body", "http1.1-chunked"])
def test_a_server_that_dies_mid_load_keeps_the_records_so_far_and_names_its_log(
    tmp_path, tiny_model_dir, monkeypatch, chunked
):
    """Level C=1 (1 warm-up + 6 requests) is served in full; level C=3 (1 + 6) loses the server during
    its fourth request (completion 12), with others in flight; level C=2 finds it gone. The records
    so far stay, every later request is an error naming the exit code and the server's log, whether
    its stream was cut in the middle or it found the server gone, and the child exits 1."""
    from llm_call_anatomy import backends
    from llm_call_anatomy.backends.openai import servers
    from llm_call_anatomy.harness import child
    from tests.harness import dying_server
    from tests.harness.fakes import prepare_run

    monkeypatch.setitem(backends.REGISTRY, "dying-server", "tests.harness.dying_server:DyingServerBackend")
    monkeypatch.setattr(servers, "exit_on_sigterm", lambda: None)  # pytest's own SIGTERM stays as it is
    monkeypatch.setattr(dying_server.DyingServerBackend, "chunked", chunked)
    run = tmp_path / "run"
    prepare_run(run, small_workload(tmp_path, DYING_LOAD), tiny_model_dir)
    assert child.main([str(run), "dying-server"]) == 1  # requests failed
    rows = [r for r in read_records(run) if r["rep"] is not None]
    levels = {r["case"]: r["extra"]["level"] for r in read_records(run) if r["rep"] is None}
    level_errors = {r["case"]: r["error"] for r in read_records(run) if r["rep"] is None}
    by_level = {c: [r for r in rows if r["case"] == c] for c in ("C=1", "C=3", "C=2")}
    assert [len(v) for v in by_level.values()] == [
        6,
        6,
        6,
    ]  # every request of C=2 started, and failed at once
    assert all(not r["error"] and r["output_tokens"] == 4 for r in by_level["C=1"])
    kept = [r for r in by_level["C=3"] if not r["error"]]
    assert 1 <= len(kept) < 6 and all(r["output_tokens"] == 4 for r in kept)
    assert all(r["error"] for r in by_level["C=2"])
    failed = [r for r in rows if r["error"]]
    named = f"the server exited with code {dying_server.EXIT_CODE}; see logs/dying-server.log"
    assert failed and all(named in r["error"] for r in failed), [r["error"] for r in failed]
    assert (
        level_errors["C=3"] is None and named in level_errors["C=2"]
    )  # a level with no request served says so
    assert levels["C=3"]["requests_started"] == 6
    log = (run / "logs" / "dying-server.log").read_text()
    assert re.search(
        r"dying in the middle of completion 1[234]\n", log
    )  # 12, or one beside it that got there first


NOISY_DEATH = """\
import sys, threading
from tests.harness import dying_server

def traceback_noise():  # socketserver's handle_error, as for every connection the client resets
    print("-" * 40, file=sys.stderr)
    print("ConnectionResetError: [Errno 104] Connection reset by peer", file=sys.stderr)

def noisy_thread():
    traceback_noise()
    writing.wait()  # each has written once; they go on while the server dies
    while True:
        traceback_noise()

writing = threading.Barrier(9)
for _ in range(8):
    threading.Thread(target=noisy_thread, daemon=True).start()
writing.wait()
dying_server.die(12)
"""


def test_the_dying_line_stays_whole_while_other_threads_write_tracebacks_to_the_log(tmp_path):
    """The dying server's last line, which the test above looks for in its log, comes out whole while
    other handler threads print tracebacks to the same file, in the suite's unbuffered mode
    (``PYTHONUNBUFFERED=1``: ``print`` writes a line's text and its newline in two calls). Ten deaths:
    a line written with ``print`` was split in about a third of them (one failure in the full suite)."""
    from tests.harness import dying_server

    env = {**os.environ, "PYTHONPATH": str(dying_server.ROOT), "PYTHONUNBUFFERED": "1"}
    for death in range(10):
        log = tmp_path / f"server-{death}.log"
        with log.open("ab") as out:  # as ServerProcess opens it: appending, stdout and stderr both
            proc = subprocess.run(
                [sys.executable, "-c", NOISY_DEATH], stdout=out, stderr=subprocess.STDOUT, env=env, timeout=60
            )
        assert proc.returncode == dying_server.EXIT_CODE
        text = log.read_text()
        assert text.count("Connection reset by peer") >= 8  # the other threads wrote to it
        assert "dying in the middle of completion 12\n" in text, text[-2000:]
