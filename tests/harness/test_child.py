"""The child's post-study hook (``LCA_CHILD_HOOK=module:function``): called with the backend and the
plan, its seconds returned; none set: nothing runs."""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest

from llm_call_anatomy.harness.child import run_child_hook

calls: list[tuple] = []


def slow_hook(backend, plan) -> None:
    calls.append((backend, plan))
    time.sleep(0.05)


def test_hook_is_called_with_backend_and_plan_and_timed(monkeypatch):
    monkeypatch.setenv("LCA_CHILD_HOOK", f"{__name__}:slow_hook")
    backend, plan = SimpleNamespace(name="fake"), object()
    calls.clear()
    seconds = run_child_hook(backend, plan)
    assert calls == [(backend, plan)] and seconds >= 0.05


def test_no_hook_runs_nothing(monkeypatch):
    monkeypatch.delenv("LCA_CHILD_HOOK", raising=False)
    assert run_child_hook(SimpleNamespace(name="fake"), object()) is None


def test_a_hook_without_function_is_named_in_the_error(monkeypatch):
    monkeypatch.setenv("LCA_CHILD_HOOK", "benchmarks.overhead")
    with pytest.raises(ValueError, match="module:function"):
        run_child_hook(SimpleNamespace(name="fake"), object())
