"""The one lazy registry (``contract.registry``) and the three tables built on it: backends, measuring kinds,
report kinds."""

from __future__ import annotations

import sys

import pytest

from llm_call_anatomy import backends
from llm_call_anatomy.contract.registry import Registry
from llm_call_anatomy.reports import kinds as report_kinds
from llm_call_anatomy.workloads import kinds as measuring_kinds
from llm_call_anatomy.workloads.catalog import BUILTIN, builtin_file
from llm_call_anatomy.workloads.kinds import names as kind_names


def test_listing_names_imports_nothing(monkeypatch):
    monkeypatch.delitem(sys.modules, "json.tool", raising=False)
    r = Registry("thing", {"tool": "json.tool:main"})
    assert r.names() == ("tool",) and "tool" in r and list(r) == ["tool"]
    assert "json.tool" not in sys.modules
    assert callable(r.get("tool")) and "json.tool" in sys.modules


def test_unknown_names_and_bad_entries_fail_loudly():
    r = Registry("widget", {"a": "json:dumps", "b": "json", "c": "json:dumps"}, check_name=True)
    with pytest.raises(KeyError, match="unknown widget 'z' .registered: a, b, c"):
        r.get("z")
    assert r.find("z") is None
    with pytest.raises(ValueError, match="not 'module:attribute'"):
        r.get("b")
    with pytest.raises(
        RuntimeError, match="registers widget None, not 'c'"
    ):  # check_name: the object names itself
        r.get("c")
    with pytest.raises(ModuleNotFoundError):
        Registry("w", {"x": "no_such_module_here:X"}).get("x")


def test_an_entry_added_or_repointed_is_seen_by_the_next_get(monkeypatch):
    r = Registry("thing", {"enc": "json:dumps"})
    assert r.get("enc").__name__ == "dumps"
    monkeypatch.setitem(r.entries, "enc", "json:loads")
    assert r.get("enc").__name__ == "loads"  # cached per target, not per name
    monkeypatch.setitem(r.entries, "new", "json:JSONDecoder")
    assert r.names() == ("enc", "new") and r.get("new").__name__ == "JSONDecoder"


def test_the_measuring_and_report_registries_list_the_same_kinds():
    assert set(measuring_kinds.names()) == set(report_kinds.names())  # one room, two halves
    for name in measuring_kinds.names():  # each entry imports and names its own kind
        assert measuring_kinds.kind(name).name == report_kinds.report_kind(name).name == name


def test_the_builtin_list_is_the_registered_kinds_with_a_file():
    assert set(BUILTIN) == {n for n in kind_names() if builtin_file(n).is_file()}  # no built-in file left out
    assert set(BUILTIN) <= set(measuring_kinds.names())  # each named after a registered kind
    assert [n for n in measuring_kinds.names() if n in BUILTIN] == list(BUILTIN)  # in registration order


def test_backends_resolve_through_the_registry(monkeypatch):
    assert backends.BACKENDS.entries is backends.REGISTRY and not hasattr(
        backends, "load"
    )  # one name for the lookup: resolve
    monkeypatch.setitem(backends.REGISTRY, "base", "llm_call_anatomy.backends.base:Backend")
    assert backends.resolve("base") is backends.Backend
    monkeypatch.setitem(backends.REGISTRY, "gone", "no_such_engine_here:Backend")
    with pytest.raises(backends.BackendUnavailable, match="gone is not installed here .no_such_engine_here"):
        backends.resolve("gone")
    with pytest.raises(KeyError, match="unknown backend 'nope'"):
        backends.resolve("nope")


def test_a_backend_missing_a_dependency_names_its_extra(monkeypatch):
    """The skip message ends with the ``pip install`` of the extra of the backend's package folder (#43):
    hf-server's is openai (backends/openai/hf_server.py); a module of the project's own missing, or an
    ImportError that is no missing module, is not fixed by the extra and names none."""
    errors = {
        "hf-server": ModuleNotFoundError("No module named 'httpx'", name="httpx"),
        "vllm-server@fp8": ModuleNotFoundError("No module named 'aiohttp.web'", name="aiohttp.web"),
        "hf": ImportError("cannot import name 'DynamicCache' from 'transformers'", name="transformers"),
        "openai": ModuleNotFoundError("x", name="llm_call_anatomy.backends.openai.gone"),
    }

    def fail(name):
        raise errors[name if name in errors else f"{name}@fp8"]

    monkeypatch.setattr(backends.BACKENDS, "get", fail)
    said = {}
    for name in errors:
        with pytest.raises(backends.BackendUnavailable) as caught:
            backends.resolve(name)
        said[name] = str(caught.value)
    assert said == {
        "hf-server": "hf-server is not installed here (httpx): pip install 'llm-call-anatomy[openai]'",
        "vllm-server@fp8": (
            "vllm-server is not installed here (aiohttp.web): pip install 'llm-call-anatomy[openai]'"
        ),
        "hf": "hf is not installed here (transformers)",
        "openai": "openai is not installed here (llm_call_anatomy.backends.openai.gone)",
    }
    assert {n: backends.extra_of(n) for n in ("hf-cb", "vllm", "sglang", "openai", "hf-server")} == {
        "hf-cb": "hf",
        "vllm": "vllm",
        "sglang": "sglang",
        "openai": "openai",
        "hf-server": "openai",
    }
