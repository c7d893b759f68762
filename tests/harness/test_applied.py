"""Settings a backend cannot apply (issue 44 item 2, harness/applied.py): refused in one line with exit 2
before anything runs (``--tp``, ``--dtype``, ``--attn``, ``--engine-defaults`` and ``--no-prefix-caching``
for ``--backend openai``, a server the harness does not start; ``--tp`` for HF; ``--no-prefix-caching`` for
backends with no cache it switches), or, for the settings the harness itself uses (``--max-model-len``,
``--random-weights``), recorded in env.json's ``settings_not_applied`` as asked and not applied."""

from __future__ import annotations

import pytest

import llm_call_anatomy.harness.cli
from llm_call_anatomy import backends
from llm_call_anatomy.harness import applied
from llm_call_anatomy.harness.cli import main
from llm_call_anatomy.harness.cli_parser import parser
from tests.harness.test_setting_checks import refused

URL = ("--base-url", "http://127.0.0.1:9/v1")


class PastTheChecks(Exception):
    pass


@pytest.fixture(autouse=True)
def stop_after_the_checks(monkeypatch):
    """Nothing past the flags' own checks runs here (a setting let through would start a study)."""

    def past(*_args, **_kw):
        raise PastTheChecks

    monkeypatch.setattr(llm_call_anatomy.harness.cli, "choose_out", past)


def accepted(tmp_path, *args: str) -> None:
    with pytest.raises(PastTheChecks):
        main([*args, "--workloads", "load", "--out", str(tmp_path / "run")])


@pytest.mark.parametrize(
    "flags",
    [
        ["--tp", "2"],
        ["--dtype", "float16"],
        ["--attn", "sdpa"],
        ["--engine-defaults", "own"],
        ["--no-prefix-caching"],
    ],
)
def test_an_engine_setting_is_refused_for_a_server_the_harness_does_not_start(tmp_path, capsys, flags):
    err = refused(capsys, tmp_path, "--backend", "openai", *URL, *flags)
    assert flags[0] in err and "openai" in err, err


def test_the_refusal_names_the_backend_and_those_that_apply_it(tmp_path, capsys):
    err = refused(capsys, tmp_path, "--backend", "vllm,openai", *URL, "--tp", "2")
    assert "--tp 2: --backend openai cannot apply it" in err and "someone else started" in err, err
    assert "vllm-server" in err  # the backends that do


@pytest.mark.parametrize(
    ("backend", "flags"),
    [
        ("hf", ["--tp", "2"]),  # HF runs on one device: a column recorded as tp 2 would not be
        ("all", ["--tp", "2"]),
        ("hf", ["--no-prefix-caching"]),  # hf keeps its KV between turns whatever the flag
        ("hf-server", ["--no-prefix-caching"]),  # transformers serve: not switched off by the harness
    ],
)
def test_a_setting_an_in_process_backend_cannot_apply_is_refused(tmp_path, capsys, backend, flags):
    err = refused(capsys, tmp_path, "--backend", backend, *flags)
    assert flags[0] in err and "cannot apply it" in err, err


@pytest.mark.parametrize(
    ("backend", "flags"),
    [
        ("hf,vllm", ["--attn", "sdpa"]),  # HF's attention: the vLLM column records it as not applied
        ("hf,vllm", ["--engine-defaults", "own"]),
        ("vllm,sglang,hf-cb", ["--no-prefix-caching"]),
        ("vllm", ["--tp", "2"]),
        ("openai", [*URL, "--max-model-len", "3072", "--random-weights"]),  # the harness's own use
    ],
)
def test_a_setting_every_backend_applies_or_the_harness_uses_passes(tmp_path, backend, flags):
    accepted(tmp_path, "--backend", backend, *flags)


def test_not_applied_says_asked_or_default_per_backend():
    args = parser().parse_args(["--backend", "hf,openai", "--attn", "sdpa", "--max-model-len", "3072"])
    found = applied.not_applied(args, ["hf", "openai"])
    assert found["openai"]["attn"] == "asked" and found["openai"]["max_model_len"] == "asked"
    assert found["openai"]["prefix_caching"] == "default" and found["openai"]["dp"] == "default"
    assert "attn" not in found["hf"] and found["hf"]["tp"] == "default"
    assert "client_procs" not in found["openai"] and found["hf"]["client_procs"] == "default"
    args = parser().parse_args(["--backend", "vllm", "--client-procs", "2"])
    assert applied.not_applied(args, ["vllm"])["vllm"]["client_procs"] == "asked"  # in process: no clients


def test_every_backend_declares_what_it_applies_and_the_defaults_are_the_parsers():
    assert set(backends.APPLIES) == set(backends.REGISTRY)
    every = {s.name for s in (*applied.SETTINGS, *applied.PARALLEL)}
    # a server it does not start: none of the engine's settings, only its own client's
    assert set(backends.APPLIES["openai"].not_applied()) == every - {"client_procs"}
    assert set(backends.APPLIES["openai"].__dataclass_fields__) == every
    p = parser()
    for s in (*applied.SETTINGS, *applied.PARALLEL):
        assert p.get_default(s.dest) == s.default, s
    assert backends.DATA_PARALLEL == ("sglang", "vllm-server", "sglang-server")
    assert backends.ROUTED == ("sglang-server",)
