"""The vLLM adapter's engine configuration and the facts it reads from the engine, without vLLM: the
engine arguments on a CPU and on CUDA, the environment variables it sets, the timing arithmetic on
vLLM's per-request stats, the attention-backend fact. The engine itself: ``test_vllm.py``.
"""

from __future__ import annotations

import os
from types import SimpleNamespace

import pytest

from llm_call_anatomy.backends.vllm import config
from llm_call_anatomy.backends.vllm.facts import attention_backend_fact, engine_timing
from llm_call_anatomy.contract.adapter import BackendSettings


def settings(**kw) -> BackendSettings:
    return BackendSettings(model_path="/m", model_label="m", **kw)


def test_engine_kwargs_eager_on_cpu_defaults_on_cuda():
    cpu, cuda = (
        config.engine_kwargs(settings(device="cpu")),
        config.engine_kwargs(settings(device="cuda", tp=2)),
    )
    for kw in (cpu, cuda):
        assert kw["enable_prefix_caching"] is True and kw["disable_log_stats"] is False
        assert kw["structured_outputs_config"] == config.STRUCTURED_OUTPUTS
        assert "load_format" not in kw
    assert (
        "gpu_memory_utilization" not in cpu and cuda["gpu_memory_utilization"] == 0.9
    )  # matched: vLLM's default
    assert cpu["enforce_eager"] is True and "enforce_eager" not in cuda
    assert cuda["tensor_parallel_size"] == 2
    assert config.engine_kwargs(settings(device="cuda", random_weights=True))["load_format"] == "dummy"


def test_env_variables_are_defaults_and_cpu_only_where_they_belong(monkeypatch, tmp_path):
    for name in (*config.COMMON_ENV, *config.CPU_ENV, *config.LOCAL_MODEL_ENV):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "4")
    assert config.apply_env("cpu", str(tmp_path))["VLLM_CPU_KVCACHE_SPACE"] == "4"  # the user's value wins
    assert "VLLM_ENABLE_V1_MULTIPROCESSING" not in config.engine_env("cuda", str(tmp_path))


def test_hub_offline_only_for_a_local_directory(monkeypatch, tmp_path):
    """A hub id must be downloadable on an empty cache (#20): offline only for a local model directory."""
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    assert config.engine_env("cuda", str(tmp_path))["HF_HUB_OFFLINE"] == "1"
    assert "HF_HUB_OFFLINE" not in config.engine_env("cuda", "Qwen/Qwen3-8B")
    assert "HF_HUB_OFFLINE" not in config.apply_env("cpu", "Qwen/Qwen3-8B")
    assert "HF_HUB_OFFLINE" not in os.environ


def test_engine_timing_from_request_stats():
    stats = SimpleNamespace(
        first_token_latency=0.012,
        num_generation_tokens=5,
        queued_ts=10.0,
        scheduled_ts=10.001,
        first_token_ts=10.011,
        last_token_ts=10.031,
    )
    ttft, decode, extra = engine_timing(stats)
    assert ttft == pytest.approx(12.0) and decode == pytest.approx(5.0)
    assert extra["engine_prefill_ms"] == pytest.approx(10.0) and extra["engine_queue_ms"] == pytest.approx(
        1.0
    )
    one = SimpleNamespace(
        first_token_latency=0.01, num_generation_tokens=1, first_token_ts=3.0, last_token_ts=3.0
    )
    assert engine_timing(one)[1] is None  # one token: no decode figure
    assert engine_timing(None) == (None, None, {})  # stats off: not reported, never zero
    assert engine_timing(SimpleNamespace(first_token_latency=0.0))[0] is None


def test_attention_backend_says_why_it_is_missing():
    assert attention_backend_fact(["FLASH_ATTN"], in_process=False) == "FLASH_ATTN"
    assert attention_backend_fact(["CPU_ATTN", "X"], in_process=True) == "CPU_ATTN, X"
    assert "engine core in its own process" in attention_backend_fact([], in_process=False)
    assert attention_backend_fact([], in_process=True) is None
