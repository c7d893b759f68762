"""Scheduler settings matched between the in-process vLLM engine and ``vllm serve`` (backends/vllm/config.py),
and the server's KV-cache capacity read from its /metrics (backends/openai/metrics.py). No engine needed."""

from __future__ import annotations

from benchmarks.fake_engine import BLOCK_SIZE, KV_BLOCKS, FakeEngine
from llm_call_anatomy.backends.openai.metrics import scheduler_from_metrics
from llm_call_anatomy.backends.openai.servers import VLLMServerBackend
from llm_call_anatomy.backends.vllm import config
from llm_call_anatomy.contract.adapter import BackendSettings


def settings(**kw) -> BackendSettings:
    return BackendSettings(model_path="/m", model_label="m", **kw)


def test_both_sides_get_the_same_scheduler_settings_by_default() -> None:
    for device in ("cuda", "cpu"):
        s = settings(device=device)
        kwargs = config.engine_kwargs(s)
        argv = VLLMServerBackend(s).server_argv(8000)
        for key, value in config.scheduler_kwargs(s).items():
            assert kwargs[key] == value  # in process
            flag = "--" + key.replace("_", "-")
            assert flag in argv and (
                isinstance(value, bool) or argv[argv.index(flag) + 1] == str(value)
            )  # server
    gpu, cpu = (
        config.scheduler_kwargs(settings(device="cuda")),
        config.scheduler_kwargs(settings(device="cpu")),
    )
    assert gpu["max_num_batched_tokens"] == 8192 and "gpu_memory_utilization" in gpu
    assert (
        "gpu_memory_utilization" not in cpu
    )  # a CPU's KV cache is VLLM_CPU_KVCACHE_SPACE, the same on both sides


def test_own_defaults_pass_nothing() -> None:
    s = settings(device="cuda", engine_defaults="own")
    assert config.scheduler_kwargs(s) == {} and config.scheduler_flags(s) == []
    assert "max_num_batched_tokens" not in config.engine_kwargs(s)
    assert "--max-num-batched-tokens" not in VLLMServerBackend(s).server_argv(8000)


def test_kv_cache_tokens_from_the_servers_metrics() -> None:
    engine = FakeEngine.__new__(FakeEngine)  # its /metrics text only: no event loop needed
    engine.active, engine.hist, engine.finished, engine.prompt_tokens, engine.generation_tokens = (
        [],
        {},
        0,
        0,
        0,
    )
    facts = scheduler_from_metrics(engine.metrics())
    assert (
        facts["kv_cache_tokens"] == KV_BLOCKS * BLOCK_SIZE
        and "num_gpu_blocks" in facts["kv_cache_tokens_source"]
    )
    assert facts["gpu_memory_utilization"] == 0.9
    sglang = (
        "# HELP sglang:max_total_num_tokens x\n# TYPE sglang:max_total_num_tokens gauge\n"
        'sglang:max_total_num_tokens{model_name="m"} 161721.0\n'
    )
    assert scheduler_from_metrics(sglang)["kv_cache_tokens"] == 161721
    assert scheduler_from_metrics("# TYPE x gauge\nx 1.0\n") == {}


def test_the_servers_own_prefix_caching_is_recorded() -> None:
    """env.json records the prefix cache as the server runs it (issue 44 item 3: the effective config)."""
    vllm = (
        "# HELP vllm:cache_config_info x\n# TYPE vllm:cache_config_info gauge\n"
        'vllm:cache_config_info{block_size="16",num_gpu_blocks="100",enable_prefix_caching="False"} 1.0\n'
    )
    assert scheduler_from_metrics(vllm)["prefix_caching"] is False
    assert scheduler_from_metrics(vllm.replace('"False"', '"True"'))["prefix_caching"] is True
    assert "prefix_caching" not in scheduler_from_metrics(vllm.replace(',enable_prefix_caching="False"', ""))


def test_sglangs_radix_cache_switch_is_its_prefix_caching() -> None:
    from llm_call_anatomy.backends.openai.server_facts import scheduler

    class Info:  # /get_server_info's answer
        def __init__(self, info: dict) -> None:
            self.info = info

        def server_info(self) -> dict:
            return self.info

    assert scheduler(None, Info({"disable_radix_cache": True}), "sglang")["prefix_caching"] is False  # type: ignore[arg-type]
    assert scheduler(None, Info({"disable_radix_cache": False}), "sglang")["prefix_caching"] is True  # type: ignore[arg-type]
    assert "prefix_caching" not in scheduler(None, Info({}), "sglang")  # type: ignore[arg-type]


def test_a_vllm_servers_block_size_reaches_the_page() -> None:
    """Issue 43: vLLM on a CPU served with blocks of 128 read "no block: reuses to the token" on the page
    (the openai column's engine block had no block size), beside "reused fewer tokens than even its block
    size allows". The server's /metrics label is kept, and the page's block size reads it there."""
    from llm_call_anatomy.reports.kvcache import block_size

    vllm = (
        "# HELP vllm:cache_config_info x\n# TYPE vllm:cache_config_info gauge\n"
        'vllm:cache_config_info{block_size="128",kv_cache_size_tokens="46592",'
        'enable_prefix_caching="True"} 1.0\n'
    )
    facts = scheduler_from_metrics(vllm)
    assert facts["block_size"] == 128
    assert block_size({"server_kind": "vllm", "scheduler": facts}) == 128
    assert block_size({"scheduler": {"kv_cache_tokens": 10}}) is None
    assert block_size({"block_size": 16, "scheduler": facts}) == 16  # in process: the engine's own
