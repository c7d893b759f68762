"""Settings that a backend cannot apply, or that an engine argument would silently override, are refused
before anything runs (issue 44, items 2, 3 and 8): ``--no-prefix-caching`` for a server someone else
started, ``--engine-defaults own`` without a vLLM backend, an ``--engine-arg`` that collides with a
harness-owned setting (named with the flag to use), a NaN or infinite value; and ``--engine-defaults``
is a resume setting."""

from __future__ import annotations

import json

import pytest

import llm_call_anatomy.harness.cli
from llm_call_anatomy.harness.cli import main
from llm_call_anatomy.harness.cli_checks import UsageError, check_resume


@pytest.fixture(autouse=True)
def stop_after_the_checks(monkeypatch):
    """Nothing past the flags' own checks runs here (a setting let through would start a study)."""

    def past(*_args, **_kw):
        raise AssertionError("got past the flags' checks")

    monkeypatch.setattr(llm_call_anatomy.harness.cli, "choose_out", past)


def refused(capsys, tmp_path, *args: str) -> str:
    code = main([*args, "--workloads", "load", "--out", str(tmp_path / "run")])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and err.startswith("compare.py: error: "), err
    assert not (tmp_path / "run").exists()
    return err


def test_no_prefix_caching_is_refused_for_a_remote_server(tmp_path, capsys):
    err = refused(
        capsys, tmp_path, "--backend", "openai", "--base-url", "http://127.0.0.1:9/v1", "--no-prefix-caching"
    )
    assert "--no-prefix-caching" in err and "openai" in err


def test_own_engine_defaults_without_a_vllm_backend_is_refused(tmp_path, capsys):
    err = refused(capsys, tmp_path, "--backend", "hf", "--engine-defaults", "own")
    assert "--engine-defaults own" in err and "vllm" in err


@pytest.mark.parametrize(
    ("arg", "flag"),
    [
        ("vllm-server:enable_prefix_caching=true", "--no-prefix-caching"),
        ("sglang:disable_radix_cache=true", "--no-prefix-caching"),
        ("vllm-server:host=0.0.0.0", "the harness"),
        ("vllm-server:port=8000", "the harness"),
        ("vllm:model=/x", "--model"),
        ("vllm:max_model_len=99", "--max-model-len"),
        ("vllm-server:served_model_name=x", "--served-model-name"),
        ("vllm:tensor_parallel_size=2", "--tp"),
        ("vllm:dtype=half", "--dtype"),
    ],
)
def test_an_engine_arg_that_collides_with_a_harness_setting_is_refused(tmp_path, capsys, arg, flag):
    backend = arg.split(":")[0]
    err = refused(capsys, tmp_path, "--backend", backend, "--engine-arg", arg)
    assert arg.split(":")[1].split("=")[0] in err and flag in err, err


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", '{"a": NaN}'])
def test_a_non_finite_engine_arg_is_refused(tmp_path, capsys, value):
    err = refused(
        capsys, tmp_path, "--backend", "vllm", "--engine-arg", f"vllm:gpu_memory_utilization={value}"
    )
    assert "not a finite number" in err


def test_engine_defaults_is_a_resume_setting(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"settings": {"engine_defaults": "matched"}}))
    with pytest.raises(UsageError, match="engine-defaults was 'matched', now 'own'"):
        check_resume(run, "{}", {"engine_defaults": "own"})
    (run / "run.json").write_text(json.dumps({"settings": {}}))  # a run from before the setting: matched
    check_resume(run, "{}", {"engine_defaults": "matched"})
