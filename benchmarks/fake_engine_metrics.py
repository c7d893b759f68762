"""The fake engine's ``GET /metrics``: vLLM's Prometheus text, so a client that scrapes it pays what it pays
against vLLM (:mod:`benchmarks.fake_engine` serves it; :mod:`benchmarks.fake_engine_procs` sums it over
several processes).

vLLM's latency histograms with its names and bucket bounds, its gauges (requests running and waiting,
KV-cache usage), its counters and ``vllm:cache_config_info``; what a finished stream adds to the
histograms (:func:`observe_stream`), from the time its request was read and the times its tokens were sent.
"""

from __future__ import annotations

MODEL = "fake"
# fmt: off
TTFT_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
    20.0, 40.0, 80.0, 160.0, 640.0, 2560.0)
ITL_BUCKETS = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
    20.0, 40.0, 80.0)
E2E_BUCKETS = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0,
    240.0, 480.0, 960.0, 1920.0, 7680.0)
# fmt: on
HISTOGRAMS = {  # vLLM's names and bucket bounds (v0.26 vllm/v1/metrics/loggers.py)
    "vllm:time_to_first_token_seconds": TTFT_BUCKETS,
    "vllm:inter_token_latency_seconds": ITL_BUCKETS,
    "vllm:request_time_per_output_token_seconds": ITL_BUCKETS,
    "vllm:e2e_request_latency_seconds": E2E_BUCKETS,
    "vllm:request_queue_time_seconds": E2E_BUCKETS,
    "vllm:request_prefill_time_seconds": E2E_BUCKETS,
    "vllm:request_decode_time_seconds": E2E_BUCKETS,
}
KV_BLOCKS, BLOCK_SIZE = 4096, 16
COUNTERS = ("active", "finished", "prompt_tokens", "generation_tokens")


class Histogram:
    """A Prometheus histogram: per-bucket counts (an observation in the first bucket it fits), sum, count."""

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds, self.counts, self.sum, self.count = bounds, [0] * len(bounds), 0.0, 0

    def observe(self, v: float) -> None:
        self.sum += v
        self.count += 1
        for i, b in enumerate(self.bounds):
            if v <= b:
                self.counts[i] += 1
                break

    def lines(self, name: str, labels: str) -> list[str]:
        out, acc = [f"# HELP {name} fake", f"# TYPE {name} histogram"], 0
        for b, c in zip(self.bounds, self.counts, strict=True):
            acc += c
            out.append(f'{name}_bucket{{{labels},le="{b}"}} {float(acc)}')
        out += [
            f'{name}_bucket{{{labels},le="+Inf"}} {float(self.count)}',
            f"{name}_count{{{labels}}} {float(self.count)}",
            f"{name}_sum{{{labels}}} {self.sum}",
        ]
        return out


def observe_stream(hist: dict[str, Histogram], received: float, sent: list[float]) -> None:
    """What one finished stream adds to vLLM's histograms: its request read at ``received``, its tokens sent
    at ``sent`` (no token sent: nothing)."""
    if not sent:
        return
    hist["vllm:time_to_first_token_seconds"].observe(sent[0] - received)
    for a, b in zip(sent, sent[1:], strict=False):
        hist["vllm:inter_token_latency_seconds"].observe(b - a)
    if len(sent) > 1:
        hist["vllm:request_time_per_output_token_seconds"].observe((sent[-1] - sent[0]) / (len(sent) - 1))
    hist["vllm:e2e_request_latency_seconds"].observe(sent[-1] - received)
    hist["vllm:request_queue_time_seconds"].observe(0.0)
    hist["vllm:request_prefill_time_seconds"].observe(sent[0] - received)
    hist["vllm:request_decode_time_seconds"].observe(sent[-1] - sent[0])


def render_metrics(active: int, finished: int, prompt_tokens: int, generation_tokens: int, hist) -> str:
    """vLLM's ``/metrics`` text for these counts (its gauges, counters, latency histograms, cache config)."""
    labels = f'engine="0",model_name="{MODEL}"'
    lines = [
        "# HELP vllm:num_requests_running fake",
        "# TYPE vllm:num_requests_running gauge",
        f"vllm:num_requests_running{{{labels}}} {float(active)}",
        "# HELP vllm:num_requests_waiting fake",
        "# TYPE vllm:num_requests_waiting gauge",
        f"vllm:num_requests_waiting{{{labels}}} 0.0",
        "# HELP vllm:kv_cache_usage_perc fake",
        "# TYPE vllm:kv_cache_usage_perc gauge",
        f"vllm:kv_cache_usage_perc{{{labels}}} {min(1.0, active * 70 / (KV_BLOCKS * BLOCK_SIZE))}",
        "# HELP vllm:cache_config_info fake",
        "# TYPE vllm:cache_config_info gauge",
        f'vllm:cache_config_info{{block_size="{BLOCK_SIZE}",cache_dtype="auto",engine="0",'
        f'gpu_memory_utilization="0.9",num_gpu_blocks="{KV_BLOCKS}",enable_prefix_caching="True"}} 1.0',
    ]
    for name, value in (
        ("vllm:request_success", finished),
        ("vllm:prompt_tokens", prompt_tokens),
        ("vllm:generation_tokens", generation_tokens),
        ("vllm:num_preemptions", 0),
    ):
        lines += [
            f"# HELP {name}_total fake",
            f"# TYPE {name}_total counter",
            f"{name}_total{{{labels}}} {float(value)}",
        ]
    for name, h in hist.items():
        lines += h.lines(name, labels)
    return "\n".join(lines) + "\n"
