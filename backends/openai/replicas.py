"""Per-replica figures from a data-parallel server's Prometheus ``/metrics`` (``--dp`` above 1).

vLLM labels each engine's series ``engine="0"``, ``engine="1"``...; SGLang labels each scheduler's
``dp_rank="0"``... (``SchedulerMetricsCollector`` labels, SGLang 0.5.17). Read here, per replica:

- vLLM: ``vllm:prefix_cache_queries`` / ``vllm:prefix_cache_hits`` (counters, prompt tokens looked up and
  found in that engine's prefix cache), ``vllm:kv_cache_usage_perc``, and KV capacity from
  ``vllm:cache_config_info`` (per engine where it carries the label);
- SGLang: ``sglang:prompt_tokens`` / ``sglang:cached_tokens`` (counters), ``sglang:token_usage``,
  ``sglang:max_total_num_tokens`` (that replica's KV capacity in tokens).

:func:`replica_values` gives flat keys for a load level (``replica0_prefix_cache_hits_total``: the load loop
differences ``*_total`` over the level and keeps the peak of ``*_now``); :func:`replicas` the whole view for
env.json. A server with one replica (no such label, or one value of it) gives nothing: the totals say it all.
"""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client.parser import text_string_to_metric_families

REPLICA_LABELS = ("engine", "dp_rank")
KV_CONFIG = "vllm:cache_config_info"  # vLLM's KV capacity per engine, in its labels
# metric family -> (the key, counters "_total" / gauges "_now" / facts "")
PER_REPLICA = {
    "vllm:prefix_cache_queries": "prefix_cache_queries_total",
    "vllm:prefix_cache_hits": "prefix_cache_hits_total",
    "vllm:kv_cache_usage_perc": "kv_cache_usage_now",
    "vllm:num_requests_running": "requests_running_now",
    "sglang:prompt_tokens": "prefix_cache_queries_total",
    "sglang:cached_tokens": "prefix_cache_hits_total",
    "sglang:token_usage": "kv_cache_usage_now",
    "sglang:num_running_reqs": "requests_running_now",
    "sglang:max_total_num_tokens": "kv_cache_tokens",
}


def _replica_of(labels: dict[str, str]) -> str | None:
    for name in REPLICA_LABELS:
        if labels.get(name) not in (None, ""):
            return labels[name]
    return None


def replicas(text: str) -> dict[str, dict[str, float]]:
    """{replica: {key: value}} summed over each replica's label sets; {} with fewer than two replicas."""
    out: dict[str, dict[str, float]] = {}
    for family in text_string_to_metric_families(text):
        if family.name == KV_CONFIG:
            for sample in family.samples:
                replica, labels = _replica_of(sample.labels), sample.labels
                blocks, size = labels.get("num_gpu_blocks"), labels.get("block_size")
                if replica is not None and str(blocks).isdigit() and str(size).isdigit():
                    out.setdefault(replica, {})["kv_cache_tokens"] = int(blocks) * int(size)
            continue
        key = PER_REPLICA.get(family.name) or PER_REPLICA.get(family.name.removesuffix("_total"))
        if key is None or family.type not in ("gauge", "counter"):
            continue
        for sample in family.samples:
            replica = _replica_of(sample.labels)
            if replica is None or sample.name not in (family.name, family.name + "_total"):
                continue
            row = out.setdefault(replica, {})
            row[key] = row.get(key, 0.0) + sample.value
    return out if len(out) > 1 else {}


def only_families(text: str, names: Iterable[str]) -> str:
    """The lines of a ``/metrics`` text that belong to the families ``names`` (their HELP and TYPE lines and
    samples; a name matches as a prefix, so a counter's ``_total`` and ``_created`` come along, and a family
    whose name extends one of them does too, which the readers then skip). A load level samples the page
    (every 0.1 s before ``backends.load_level.sample_pause_s``, about once a second since) and reads a
    dozen families of it: vLLM 0.26's page is ~69 KB, and parsing it whole (twice,
    for the totals and the replicas) cost ~19 ms of client CPU a sample (``benchmarks/trace_proof.py``)."""
    keep = tuple(names)
    lines = []
    for line in text.splitlines():
        if line.startswith("#"):
            parts = line.split(None, 3)
            name = parts[2] if len(parts) > 2 and parts[1] in ("HELP", "TYPE") else ""
        else:
            name = line.split("{", 1)[0].split(" ", 1)[0]
        if name and name.startswith(keep):
            lines.append(line)
    return "\n".join(lines) + "\n" if lines else ""


def summed_values(text: str, names: dict[str, str]) -> dict[str, float]:
    """The gauges and counters of ``names`` (metric name -> our key) in a ``/metrics`` text, summed over
    their label sets; a counter matches with or without its ``_total`` suffix."""
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        key = names.get(family.name) or names.get(family.name.removesuffix("_total"))
        if key is None or family.type not in ("gauge", "counter"):
            continue
        for sample in family.samples:
            if sample.name in (family.name, family.name + "_total"):
                out[key] = out.get(key, 0.0) + sample.value
    return out


def replica_totals(text: str) -> dict[str, float]:
    """One replica's :data:`PER_REPLICA` figures (a single-replica server: a worker behind SGLang's
    router)."""
    return summed_values(text, PER_REPLICA)


def replica_values(text: str) -> dict[str, float]:
    """The per-replica figures as flat keys for a load level: ``replica{R}_{key}``."""
    return {
        f"replica{r}_{k}": v
        for r, row in replicas(text).items()
        for k, v in row.items()
        if k != "kv_cache_tokens"
    }


def hit_shares(view: dict[str, dict[str, float]]) -> dict[str, float | None]:
    """Each replica's share of looked-up prompt tokens found in its prefix cache (hits / queries)."""
    return {
        r: (
            row["prefix_cache_hits_total"] / row["prefix_cache_queries_total"]
            if row.get("prefix_cache_queries_total")
            else None
        )
        for r, row in view.items()
    }
