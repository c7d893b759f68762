"""What a server says of itself beside the requests: where its engine's latency histograms are, its
KV-cache capacity and scheduler settings for env.json (its /metrics; SGLang also /get_server_info), the
histograms a load level differences into server-side percentiles, and the gauges and counters it samples.

Each takes the backend's :class:`~backends.openai.metrics.MetricsProbe` (None: no engine histograms at
/metrics) and answers "not reported" its own way (None, ``{}``, or why), never with an exception: a
server's /metrics is an extra the study records, not something a request needs.
"""

from __future__ import annotations

from typing import Any

from llm_call_anatomy.backends.openai.metrics import (
    FLAVORS,
    MetricsProbe,
    flavor_of,
    load_values,
    parse_buckets,
    scheduler_from_metrics,
    scrape_text,
)
from llm_call_anatomy.backends.openai.server_http import ServerHTTP

# what SGLang's /get_server_info adds to the scheduler facts its /metrics gives
SGLANG_INFO_KEYS = (
    "chunked_prefill_size",
    "max_running_requests",
    "max_prefill_tokens",
    "mem_fraction_static",
    "max_total_num_tokens",
)


def find_metrics(
    root: str, headers: dict[str, str], flavor: str | None
) -> tuple[MetricsProbe | None, str | None]:
    """A probe of the engine's latency histograms at ``root``/metrics and whose they are (vLLM's or SGLang's
    names); (None, None) where there are none, or not those of the ``flavor`` already known."""
    probe = MetricsProbe(root + "/metrics", FLAVORS["vllm"], headers)
    found = flavor_of(probe.scrape() or {})
    if found is None or (flavor is not None and found != flavor):
        return None, None
    probe.names = FLAVORS[found]
    return probe, found


def metrics_page(probe: MetricsProbe | None) -> str | None:
    """The whole /metrics page now; None: no /metrics, or it did not answer."""
    return scrape_text(probe.url, probe.headers) if probe is not None else None


def latency_histograms(probe: MetricsProbe | None):
    """The latency histograms now (buckets, sum, count), for a level's server-side percentiles; None: none."""
    text = metrics_page(probe)
    return parse_buckets(text) if text else None


def kv_cache_tokens(probe: MetricsProbe | None) -> tuple[int | None, str]:
    """The KV-cache capacity in tokens and where it came from (vLLM: ``vllm:cache_config_info``; SGLang:
    ``sglang:max_total_num_tokens``), or None and why."""
    text = metrics_page(probe)
    facts = scheduler_from_metrics(text) if text else {}
    if facts.get("kv_cache_tokens") is not None:
        return facts["kv_cache_tokens"], facts["kv_cache_tokens_source"]
    return None, "the server's /metrics does not say" if probe else "no /metrics at this server"


def scheduler(probe: MetricsProbe | None, http: ServerHTTP, flavor: str | None) -> dict[str, Any]:
    """What the server says of its scheduler and KV cache (its /metrics; SGLang also /get_server_info),
    with its prefix cache on or off (``prefix_caching``) where it says so."""
    text = metrics_page(probe)
    out = scheduler_from_metrics(text) if text else {}
    if flavor == "sglang":
        info = http.server_info()
        out.update({key: info[key] for key in SGLANG_INFO_KEYS if key in info})
        if isinstance(info.get("disable_radix_cache"), bool):  # the prefix cache as the server runs it
            out["prefix_caching"] = not info["disable_radix_cache"]
    return out


def max_running(scheduler: dict[str, Any]) -> tuple[int | None, str]:
    """The server's limit on requests running at once from its scheduler facts (:func:`scheduler`), and the
    setting's name; (None, why) where it does not say."""
    for key in ("max_running_requests", "max_num_seqs"):
        found = scheduler.get(key)
        if isinstance(found, int) and not isinstance(found, bool) and found > 0:
            return found, key
    return None, "the server does not say its limit on requests running at once"


def gauges(probe: MetricsProbe | None) -> dict[str, float]:
    """The server's own gauges and counters now (vLLM: KV-cache usage, preemptions, prefix-cache hits)."""
    return load_values(probe.url, probe.headers) if probe is not None else {}
