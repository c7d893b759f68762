"""No silence over a few seconds (issue 43): a heartbeat line while an engine starts, a warm-up or a long
group runs, with what is left where an earlier engine start says how long it took; and no noise through the
progress bar (a line never broken inside a value, no library's FutureWarnings)."""

from __future__ import annotations

import io
import json
import time

from rich.console import Console
from rich.progress import Progress

from llm_call_anatomy.harness.child import StartFacts, starting
from llm_call_anatomy.harness.heartbeat import Heartbeat, beat_line
from llm_call_anatomy.harness.runner import Runner


def test_a_beat_says_the_elapsed_time_and_what_is_left():
    assert beat_line("vllm: starting the engine", 10.2) == "vllm: starting the engine ... 10 s"
    assert beat_line("x", 10.0, expected_s=40.0) == "x ... 10 s (about 30 s left, as the last one took)"
    assert beat_line("x", 50.0, expected_s=40.0) == "x ... 50 s (the last one took 40 s)"
    assert beat_line("x", 300.0) == "x ... 5.0 min"


def test_long_work_beats_and_short_work_is_quiet():
    said: list[str] = []
    with Heartbeat("hf: warm-up json/free", say=said.append, every_s=0.05) as beat:
        time.sleep(0.32)
    assert beat.beats >= 3 and len(said) == beat.beats
    assert all(line.startswith("hf: warm-up json/free ... ") for line in said)
    count = len(said)
    time.sleep(0.15)
    assert len(said) == count  # stopped with its block
    with Heartbeat("quick", say=said.append, every_s=0.5):
        pass
    assert len(said) == count


def test_the_engine_start_names_a_launched_server_s_log_once_it_exists(tmp_path):
    what = starting(tmp_path, "vllm-server")
    assert what() == "vllm-server: starting the engine"
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "vllm-server.log").write_text("")
    assert what() == f"vllm-server: starting the engine (log: {tmp_path / 'logs' / 'vllm-server.log'})"


def test_an_earlier_engine_start_sets_the_expected_time(tmp_path):
    path = tmp_path / "hf.json"
    assert StartFacts(path, 0).earlier_startup_s() is None
    path.write_text(json.dumps({"starts": [{"engine_start": 0, "startup_s": 30.0},
                                           {"engine_start": 1, "startup_s": 50.0}]}))  # fmt: skip
    assert StartFacts(path, 2).earlier_startup_s() == 40.0
    assert StartFacts(path, 1).earlier_startup_s() == 30.0  # its own earlier try is not counted


def test_groups_beat_where_the_console_is_no_terminal():
    piped = Progress(console=Console(file=io.StringIO(), force_terminal=False))
    assert isinstance(Runner.heartbeat("hf: load/C=8", piped), Heartbeat)
    terminal = Progress(console=Console(file=io.StringIO(), force_terminal=True))
    assert not isinstance(Runner.heartbeat("hf: load/C=8", terminal), Heartbeat)  # the live bar ticks


def test_the_child_s_lines_are_never_broken_inside_a_value():
    from llm_call_anatomy.harness.steps import console

    assert console.soft_wrap  # a case's line piped to a log stays one line, whatever its length


def test_future_warnings_do_not_print_through_the_progress_bar(monkeypatch):
    import sys
    import warnings

    from llm_call_anatomy.harness.child import quiet_future_warnings

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        monkeypatch.setattr(sys, "warnoptions", [])
        quiet_future_warnings()
        warnings.warn("`foo` is deprecated", FutureWarning, stacklevel=1)
        warnings.warn("a real problem", UserWarning, stacklevel=1)
    assert [str(w.message) for w in seen] == ["a real problem"]
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        monkeypatch.setattr(sys, "warnoptions", ["default"])  # the user's -W / PYTHONWARNINGS stands
        quiet_future_warnings()
        warnings.warn("`foo` is deprecated", FutureWarning, stacklevel=1)
    assert len(seen) == 1
