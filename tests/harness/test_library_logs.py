"""A library's log line while the progress bar is drawn is printed above the bar, not in the middle of its
line (issue 43): transformers' and vLLM's handlers hold the process's own stderr/stdout, made at import,
which the bar's proxies never saw."""

from __future__ import annotations

import io
import logging
import sys

from rich.console import Console

from llm_call_anatomy.contract.adapter import BackendSettings
from llm_call_anatomy.contract.plan import Plan
from llm_call_anatomy.harness import runner
from llm_call_anatomy.harness.library_logs import above_the_bar
from tests.harness.fakes import echo_backend_class, prepare_run, small_workload


def test_a_library_s_log_line_prints_above_the_bar(tmp_path, tiny_model_dir, monkeypatch):
    own_stderr = io.StringIO()  # the process's own stderr, as a library's handler got it at import
    monkeypatch.setattr(sys, "__stderr__", own_stderr)
    handler = logging.StreamHandler(own_stderr)
    library = logging.getLogger("a_library_43")
    library.addHandler(handler)
    monkeypatch.setattr(library, "propagate", False)
    terminal = io.StringIO()
    monkeypatch.setattr(runner, "console", Console(file=terminal, force_terminal=True, width=100))

    class Noisy(echo_backend_class()):
        def _generate(self, request, clock):
            library.warning("LIBRARY SAYS %d", len(request.prompt_ids))
            return super()._generate(request, clock)

    run_dir = tmp_path / "run"
    prepare_run(run_dir, small_workload(tmp_path), tiny_model_dir)
    plan = Plan.from_json((run_dir / "plan.json").read_text())
    backend = Noisy(BackendSettings(model_path=str(tiny_model_dir), model_label="tiny"))
    try:
        runner.Runner(backend, plan, run_dir, {"run_id": "run", "backend": "echo"}, resume=False).run()
    finally:
        library.removeHandler(handler)
    assert own_stderr.getvalue() == ""  # not written past the bar's back
    said = terminal.getvalue()
    assert said.count("LIBRARY SAYS") >= 5
    for line in said.splitlines():  # each on a line of its own: the bar's line cleared first, not its text
        if "LIBRARY SAYS" in line:
            assert line.split("\x1b[2K")[-1].startswith("LIBRARY SAYS"), repr(line)
    assert handler.stream is own_stderr  # given back once the bar is gone


def test_nothing_changes_where_no_bar_replaced_the_streams(monkeypatch):
    handler = logging.StreamHandler(sys.__stderr__)
    library = logging.getLogger("a_library_43b")
    library.addHandler(handler)
    try:
        monkeypatch.setattr(sys, "stderr", sys.__stderr__)  # no proxy: the output is no terminal
        with above_the_bar():
            assert handler.stream is sys.__stderr__
    finally:
        library.removeHandler(handler)
