"""--no-prefix-caching: what each engine is told (vLLM enable_prefix_caching=False, SGLang
disable_radix_cache, the servers' flags, hf-cb allow_block_sharing=False), and a resume that changes it
is refused (a run made before the setting existed had it on)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from llm_call_anatomy.contract.adapter import BackendSettings
from llm_call_anatomy.harness.cli import parser as build_parser
from llm_call_anatomy.harness.rundir import settings_diff

ON = BackendSettings(model_path="/m", model_label="m", device="cpu", dtype="float32")
OFF = replace(ON, prefix_caching=False)


def test_the_flag_reaches_the_settings():
    from llm_call_anatomy.harness import cli, models

    model = models.ResolvedModel(label="m", path="/m", builtin=False, has_weights=True, random_init=False)
    for argv, expected in (([], True), (["--no-prefix-caching"], False)):
        args = build_parser().parse_args(argv)
        assert cli.backend_settings(args, model, "cpu", "float32")["prefix_caching"] is expected


def test_vllm_and_sglang_in_process_turn_their_cache_off():
    from llm_call_anatomy.backends.sglang.config import engine_kwargs as sglang_kwargs
    from llm_call_anatomy.backends.vllm.config import engine_kwargs as vllm_kwargs

    assert (
        vllm_kwargs(ON)["enable_prefix_caching"] is True
        and vllm_kwargs(OFF)["enable_prefix_caching"] is False
    )
    assert sglang_kwargs(ON, enable_metrics=False)["disable_radix_cache"] is False
    assert sglang_kwargs(OFF, enable_metrics=False)["disable_radix_cache"] is True


def test_the_servers_are_started_with_their_cache_off():
    from llm_call_anatomy.backends.openai.servers import SGLangServerBackend, VLLMServerBackend

    assert "--enable-prefix-caching" in VLLMServerBackend(ON).server_argv(8000)
    off = VLLMServerBackend(OFF).server_argv(8000)
    assert "--no-enable-prefix-caching" in off and "--enable-prefix-caching" not in off
    assert "--disable-radix-cache" in SGLangServerBackend(OFF).server_argv(8000)
    assert "--disable-radix-cache" not in SGLangServerBackend(ON).server_argv(8000)


def test_hf_cb_shares_no_blocks_with_the_cache_off(tiny_model_dir):
    from llm_call_anatomy.backends.hf.cb import HFContinuousBatchingBackend

    settings = replace(OFF, model_path=str(tiny_model_dir))
    assert HFContinuousBatchingBackend(settings)._config().allow_block_sharing is False
    assert (
        HFContinuousBatchingBackend(replace(settings, prefix_caching=True))._config().allow_block_sharing
        is True
    )


@pytest.mark.parametrize(
    "old,new,differs",
    [
        ({}, {"prefix_caching": True}, False),
        ({}, {"prefix_caching": False}, True),
        ({"prefix_caching": False}, {"prefix_caching": False}, False),
    ],
)
def test_a_resume_keeps_the_caching_of_its_run(old, new, differs):
    assert bool(settings_diff(old, new)) is differs
