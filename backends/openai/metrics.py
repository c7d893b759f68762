"""Server-side timing of one request, read from the server's Prometheus ``/metrics``.

Requests run one at a time, so the server's latency histograms change by exactly one request
between a scrape taken before it and one taken after it: the difference of a histogram's
``_sum`` is that request's value (``_count`` must have moved by one, else the figure is not
attributable and stays ``None``). The server records some histograms only after the last
chunk went out, so the second scrape is retried until the per-request "finished" histogram
has moved (or ``wait_s`` passes). Scrapes happen outside the timed region.

Histograms read (names as the engines export them):

- vLLM: ``vllm:time_to_first_token_seconds`` (arrival to first token),
  ``vllm:request_prefill_time_seconds`` (scheduled to first token),
  ``vllm:request_decode_time_seconds`` (first to last token; divided by tokens - 1),
  ``vllm:request_queue_time_seconds``, ``vllm:e2e_request_latency_seconds`` (finished).
- SGLang: ``sglang:time_to_first_token_seconds``, ``sglang:inter_token_latency_seconds``
  (sum of intervals, count of tokens), ``sglang:e2e_request_latency_seconds`` (finished);
  SGLang exports no per-request prefill histogram.
"""

from __future__ import annotations

import time
import urllib.request
from dataclasses import dataclass
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from llm_call_anatomy.backends.openai.replicas import (
    KV_CONFIG,
    PER_REPLICA,
    only_families,
    replica_values,
    summed_values,
)

SOURCE = "prometheus-histogram-diff"


@dataclass(frozen=True)
class MetricNames:
    finished: str  # observed once per finished request: the sign the scrape is complete
    ttft: str
    prefill: str | None = None
    decode: str | None = None  # per-request decode time (first to last token)
    itl: str | None = None  # inter-token latency: sum of intervals, count of tokens
    queue: str | None = None


FLAVORS: dict[str, MetricNames] = {
    "vllm": MetricNames(
        finished="vllm:e2e_request_latency_seconds",
        ttft="vllm:time_to_first_token_seconds",
        prefill="vllm:request_prefill_time_seconds",
        decode="vllm:request_decode_time_seconds",
        queue="vllm:request_queue_time_seconds",
    ),
    "sglang": MetricNames(
        finished="sglang:e2e_request_latency_seconds",
        ttft="sglang:time_to_first_token_seconds",
        itl="sglang:inter_token_latency_seconds",
    ),
}

Histograms = dict[str, tuple[float, float]]  # name -> (sum, count), added up over label sets


def parse_histograms(text: str) -> Histograms:
    out: dict[str, list[float]] = {}
    for family in text_string_to_metric_families(text):
        if family.type != "histogram":
            continue
        acc = out.setdefault(family.name, [0.0, 0.0])
        for sample in family.samples:
            if sample.name == family.name + "_sum":
                acc[0] += sample.value
            elif sample.name == family.name + "_count":
                acc[1] += sample.value
    return {name: (s, c) for name, (s, c) in out.items()}


def flavor_of(histograms: Histograms) -> str | None:
    """Which engine's metrics these are (``vllm`` / ``sglang``), None if neither's are there."""
    for flavor, names in FLAVORS.items():
        if names.ttft in histograms:
            return flavor
    return None


class MetricsProbe:
    """Scrapes ``url`` around each request and turns histogram differences into per-request figures."""

    def __init__(
        self, url: str, names: MetricNames, headers: dict[str, str], timeout_s: float = 10.0
    ) -> None:
        self.url = url
        self.names = names
        self.headers = headers
        self.timeout_s = timeout_s

    def scrape(self) -> Histograms | None:
        try:
            req = urllib.request.Request(self.url, headers=self.headers)
            with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                return parse_histograms(resp.read().decode("utf-8", "replace"))
        except (OSError, ValueError):
            return None

    def request_timing(self, before: Histograms, output_tokens: int, wait_s: float = 2.0) -> dict[str, Any]:
        """Server-side TTFT / prefill / decode of the one request run since ``before`` (None where
        unknown)."""
        deadline = time.monotonic() + wait_s
        after = self.scrape()
        while (
            after is not None
            and _moved(before, after, self.names.finished) < 1
            and time.monotonic() < deadline
        ):
            time.sleep(0.02)
            after = self.scrape()
        if after is None:
            return {"server_timing_source": None, "server_timing_note": "metrics scrape failed"}
        finished = _moved(before, after, self.names.finished)
        figures: dict[str, Any] = {
            "server_ttft_ms": _one(before, after, self.names.ttft),
            "server_prefill_ms": _one(before, after, self.names.prefill),
            "server_decode_ms_per_token": self._decode(before, after, output_tokens),
            "server_queue_ms": _one(before, after, self.names.queue),
            "server_timing_source": SOURCE,
        }
        if finished != 1:
            figures["server_timing_note"] = (
                f"{finished:g} requests finished between the scrapes: not attributable"
            )
            figures.update(
                server_ttft_ms=None,
                server_prefill_ms=None,
                server_decode_ms_per_token=None,
                server_queue_ms=None,
            )
        return figures

    def _decode(self, before: Histograms, after: Histograms, output_tokens: int) -> float | None:
        if self.names.decode is not None:
            total = _one(before, after, self.names.decode)
            return total / (output_tokens - 1) if total is not None and output_tokens > 1 else None
        if self.names.itl is not None and self.names.itl in after:
            d_sum = after[self.names.itl][0] - before.get(self.names.itl, (0.0, 0.0))[0]
            d_count = _moved(before, after, self.names.itl)
            return d_sum * 1e3 / d_count if d_count > 0 else None
        return None


def _moved(before: Histograms, after: Histograms, name: str) -> float:
    return after.get(name, (0.0, 0.0))[1] - before.get(name, (0.0, 0.0))[1]


def _one(before: Histograms, after: Histograms, name: str | None) -> float | None:
    """The one observation added to histogram ``name`` between the scrapes, in ms (None unless exactly
    one)."""
    if name is None or name not in after or _moved(before, after, name) != 1:
        return None
    return (after[name][0] - before.get(name, (0.0, 0.0))[0]) * 1e3


# Gauges and counters a load level reads (backends.load_loop): "_now" gauges keep their peak, "_total"
# counters their difference.
LOAD_VALUES = {
    "vllm:kv_cache_usage_perc": "kv_cache_usage_now",
    "vllm:gpu_cache_usage_perc": "kv_cache_usage_now",
    "vllm:num_requests_running": "requests_running_now",
    "vllm:num_requests_waiting": "requests_waiting_now",
    "vllm:num_preemptions": "preemptions_total",
    "vllm:prefix_cache_queries": "prefix_cache_queries_total",
    "vllm:prefix_cache_hits": "prefix_cache_hits_total",
    "sglang:token_usage": "kv_cache_usage_now",
    "sglang:num_running_reqs": "requests_running_now",
    "sglang:num_queue_reqs": "requests_waiting_now",
    "sglang:cache_hit_rate": "prefix_cache_hit_rate_now",
}
LOAD_FAMILIES = (*LOAD_VALUES, *PER_REPLICA, KV_CONFIG)


def load_values(url: str, headers: dict[str, str], timeout_s: float = 5.0) -> dict[str, float]:
    """The :data:`LOAD_VALUES` the server exports now (summed over label sets); {} if the scrape fails."""
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=timeout_s) as resp:
            text = resp.read().decode("utf-8", "replace")
    except (OSError, ValueError):
        return {}
    return sampled_values(text)


def sampled_values(text: str) -> dict[str, float]:
    """:func:`load_values` of a scraped page: the totals, and a data-parallel server's (--dp) replicas each
    on its own, from the families they read alone (``only_families``: one cheap pass over the page)."""
    text = only_families(text, LOAD_FAMILIES)
    return {**summed_values(text, LOAD_VALUES), **replica_values(text)}


# -- per load level: the latency histograms' difference over the level, as percentiles ---------------------
# First name present wins (vLLM renamed time_per_output_token to inter_token_latency in v0.11; SGLang 0.5
# names).
LEVEL_HISTOGRAMS: dict[str, tuple[str, ...]] = {
    "ttft": ("vllm:time_to_first_token_seconds", "sglang:time_to_first_token_seconds"),
    "itl": (
        "vllm:inter_token_latency_seconds",
        "vllm:time_per_output_token_seconds",
        "sglang:inter_token_latency_seconds",
    ),
    "tpot": (
        "vllm:request_time_per_output_token_seconds",
    ),  # per request: (last - first token) / (tokens - 1)
    "e2e": ("vllm:e2e_request_latency_seconds", "sglang:e2e_request_latency_seconds"),
    "queue": ("vllm:request_queue_time_seconds", "sglang:queue_time_seconds"),
}
LEVEL_SOURCE = (
    "the server's /metrics histograms, scraped before and after the level and differenced; percentiles "
    "interpolated linearly within a bucket (as Prometheus' histogram_quantile), so they are only as fine "
    "as the server's bucket bounds"
)
Buckets = dict[
    str, dict[float, float]
]  # histogram -> {upper bound: cumulative count}, "+Inf" as inf, summed over labels


def parse_buckets(text: str) -> tuple[Buckets, Histograms]:
    """Every histogram's cumulative buckets and its (sum, count), each added up over label sets."""
    buckets: Buckets = {}
    sums: dict[str, list[float]] = {}
    for family in text_string_to_metric_families(text):
        if family.type != "histogram":
            continue
        acc, sc = buckets.setdefault(family.name, {}), sums.setdefault(family.name, [0.0, 0.0])
        for sample in family.samples:
            if sample.name == family.name + "_bucket":
                le = float(sample.labels["le"])
                acc[le] = acc.get(le, 0.0) + sample.value
            elif sample.name == family.name + "_sum":
                sc[0] += sample.value
            elif sample.name == family.name + "_count":
                sc[1] += sample.value
    return buckets, {name: (s, c) for name, (s, c) in sums.items()}


def bucket_bounds(cumulative: dict[float, float], q: float) -> tuple[float, float] | None:
    """The (lower, upper) bounds of the bucket the q-quantile falls in: how fine the interpolated figure
    is."""
    bounds = sorted(cumulative)
    total = cumulative[bounds[-1]] if bounds else 0.0
    if total <= 0:
        return None
    lower, below = 0.0, 0.0
    for upper in bounds:
        if cumulative[upper] >= q * total and cumulative[upper] > below:
            return lower, upper
        lower, below = upper, cumulative[upper]
    return lower, float("inf")


def bucket_quantile(cumulative: dict[float, float], q: float) -> float | None:
    """The q-quantile (0..1) of a cumulative histogram, linear within the bucket it falls in (the first bucket
    from 0); in the +Inf bucket: the highest finite bound. None without observations."""
    bounds = sorted(cumulative)
    total = cumulative[bounds[-1]] if bounds else 0.0
    if total <= 0:
        return None
    rank = q * total
    lower, below = 0.0, 0.0
    for upper in bounds:
        count = cumulative[upper]
        if count >= rank and count > below:
            if upper == float("inf"):
                return lower
            return lower + (upper - lower) * (rank - below) / (count - below)
        lower, below = upper, count
    return lower


def level_timings(before: tuple[Buckets, Histograms], after: tuple[Buckets, Histograms]) -> dict[str, Any]:
    """The server's own TTFT / ITL / TPOT / e2e / queue over one level: n, mean and p50/p90/p99 in ms per
    figure."""
    (b0, s0), (b1, s1) = before, after
    out: dict[str, Any] = {}
    for figure, names in LEVEL_HISTOGRAMS.items():
        name = next((n for n in names if n in b1), None)
        if name is None:
            continue
        diff = {le: c - b0.get(name, {}).get(le, 0.0) for le, c in b1[name].items()}
        n = s1[name][1] - s0.get(name, (0.0, 0.0))[1]
        if n <= 0:
            continue
        out[f"{figure}_n"] = int(n)
        out[f"{figure}_ms_mean"] = (s1[name][0] - s0.get(name, (0.0, 0.0))[0]) / n * 1e3
        for q in (50, 90, 99):
            v = bucket_quantile(diff, q / 100)
            out[f"{figure}_ms_p{q}"] = None if v is None else v * 1e3
        bounds = bucket_bounds(
            diff, 0.5
        )  # the p50's bucket: a figure inside (0, 300 ms] says little below 300 ms
        out[f"{figure}_p50_bucket_ms"] = (
            None if bounds is None else [b * 1e3 if b != float("inf") else None for b in bounds]
        )
        out[f"{figure}_histogram"] = name
    if out:
        out["source"] = LEVEL_SOURCE
    return out


def scrape_text(url: str, headers: dict[str, str], timeout_s: float = 10.0) -> str | None:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=timeout_s) as resp:
            return resp.read().decode("utf-8", "replace")
    except (OSError, ValueError):
        return None


def scheduler_from_metrics(text: str) -> dict[str, Any]:
    """KV-cache capacity and memory fraction as the server exports them: vLLM's ``vllm:cache_config_info``
    labels (``kv_cache_size_tokens``, else ``num_gpu_blocks`` x ``block_size``; ``gpu_memory_utilization``;
    ``enable_prefix_caching`` as ``prefix_caching``: the cache as the server runs it, whatever was asked;
    ``block_size``, the unit its prefix cache reuses in),
    SGLang's ``sglang:max_total_num_tokens`` gauge."""
    out: dict[str, Any] = {}
    for family in text_string_to_metric_families(text):
        if family.name == "vllm:cache_config_info" and family.samples:
            labels = family.samples[0].labels
            tokens, blocks, size = (
                _int(labels.get(k)) for k in ("kv_cache_size_tokens", "num_gpu_blocks", "block_size")
            )
            if tokens is None and blocks is not None and size is not None:
                tokens = blocks * size
            if tokens is not None:
                out["kv_cache_tokens"] = tokens
                out["kv_cache_tokens_source"] = "/metrics vllm:cache_config_info" + (
                    ""
                    if _int(labels.get("kv_cache_size_tokens"))
                    else f" (num_gpu_blocks {blocks} x block_size {size})"
                )
            if size is not None:  # prefix reuse comes in whole blocks (the page's expected vs reported reuse)
                out["block_size"] = size
            if _float(labels.get("gpu_memory_utilization")) is not None:
                out["gpu_memory_utilization"] = _float(labels.get("gpu_memory_utilization"))
            if labels.get("enable_prefix_caching") in ("True", "False"):
                out["prefix_caching"] = labels["enable_prefix_caching"] == "True"
        elif family.name == "sglang:max_total_num_tokens" and family.samples:
            out["kv_cache_tokens"] = int(family.samples[0].value)
            out["kv_cache_tokens_source"] = "/metrics sglang:max_total_num_tokens"
    return out


def _int(value: str | None) -> int | None:
    try:
        return int(float(value)) if value not in (None, "", "None") else None
    except ValueError:
        return None


def _float(value: str | None) -> float | None:
    try:
        return float(value) if value not in (None, "", "None") else None
    except ValueError:
        return None
