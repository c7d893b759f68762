"""SGLang's router in front of ``--dp N`` workers
(``--backend sglang-server --router cache_aware|round_robin``).

``python -m sglang_router.launch_server`` (the ``sglang-router`` wheel, checked against 0.3.2) parses SGLang's
``ServerArgs`` and the router's flags (prefixed ``--router-``): it starts ``dp_size`` single-replica SGLang
servers (``dp_size`` set to 1 and ``base_gpu_id = rank x tp`` each, ports from
``--router-dp-worker-base-port`` upward in random steps, each in its own process group: ``os.setpgrp()``) and
then the router on ``--host`` / ``--port``, with ``--router-policy``. Its Prometheus exporter binds
``0.0.0.0:29000`` unless told: the harness gives it 127.0.0.1 and a free port.

The replicas' own figures are at each worker's ``/metrics``, not the router's: the workers' ports are read
from the router's log (``Launching DP server process I on port P``, launch_server.py's own line), and each
worker's counters become ``replica{I}_*`` keys. At the end, worker process groups left over after the router
has stopped (a SIGKILL to the router skips its clean-up) are stopped here, by their process group ids.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import time
from pathlib import Path

from llm_call_anatomy.backends.openai.metrics import Buckets, Histograms, parse_buckets, scrape_text
from llm_call_anatomy.backends.openai.process import free_port, group_members
from llm_call_anatomy.backends.openai.replicas import replica_totals

WORKER_LINE = re.compile(r"Launching DP server process (\d+) on port (\d+)")


def router_flags(policy: str, metrics_port: int, worker_base_port: int) -> list[str]:
    return [
        "--router-policy",
        policy,
        "--router-prometheus-host",
        "127.0.0.1",
        "--router-prometheus-port",
        str(metrics_port),
        "--router-dp-worker-base-port",
        str(worker_base_port),
    ]


def free_ports() -> tuple[int, int]:
    """The router's Prometheus port and the workers' base port."""
    return free_port(), free_port()


def worker_ports(log_text: str) -> dict[str, int]:
    """{replica: port} from the router's log."""
    return {m[1]: int(m[2]) for m in WORKER_LINE.finditer(log_text)}


def read_log(path: Path | None) -> str:
    try:
        return path.read_text(errors="replace") if path else ""
    except OSError:
        return ""


def worker_texts(ports: dict[str, int], headers: dict[str, str]) -> dict[str, str]:
    """{replica: that worker's /metrics text}; a worker that does not answer is left out."""
    out = {}
    for replica, port in sorted(ports.items()):
        text = scrape_text(f"http://127.0.0.1:{port}/metrics", headers, timeout_s=5.0)
        if text:
            out[replica] = text
    return out


def worker_figures(texts: dict[str, str]) -> dict[str, dict[str, float]]:
    """{replica: the PER_REPLICA figures of that worker's /metrics}."""
    return {replica: replica_totals(text) for replica, text in texts.items()}


def merged_buckets(texts: list[str]) -> tuple[Buckets, Histograms] | None:
    """The workers' latency histograms added up (as ``parse_buckets`` adds up label sets): the server-side
    percentiles of a level over every replica; None when no worker answered."""
    if not texts:
        return None
    buckets: Buckets = {}
    sums: dict[str, tuple[float, float]] = {}
    for text in texts:
        b, h = parse_buckets(text)
        for name, cumulative in b.items():
            acc = buckets.setdefault(name, {})
            for le, v in cumulative.items():
                acc[le] = acc.get(le, 0.0) + v
        for name, (total, count) in h.items():
            s0, c0 = sums.get(name, (0.0, 0.0))
            sums[name] = (s0 + total, c0 + count)
    return buckets, sums


def load_figures(view: dict[str, dict[str, float]]) -> dict[str, float]:
    """A load level's keys: the workers' counters summed (the totals the level's table shows), KV-cache usage
    as the busiest worker's, and each worker's own as ``replica{R}_*``."""
    out: dict[str, float] = {}
    for replica, row in view.items():
        for key, value in row.items():
            if key == "kv_cache_tokens":
                continue
            out[f"replica{replica}_{key}"] = value
            out[key] = (
                max(out.get(key, 0.0), value) if key == "kv_cache_usage_now" else out.get(key, 0.0) + value
            )
    return out


def stop_worker_groups(pgids: list[int], grace_s: float = 20.0) -> None:
    """SIGTERM to each worker's process group still alive, SIGKILL after ``grace_s``."""
    alive = [g for g in pgids if group_members(g)]
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for g in alive:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(g, sig)
        deadline = time.monotonic() + grace_s
        while (alive := [g for g in alive if group_members(g)]) and time.monotonic() < deadline:
            time.sleep(0.1)
        if not alive:
            return


def child_pids(parent: int) -> list[int]:
    """The direct children of ``parent`` (the router's worker processes), from /proc."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 1 and fields[1] == str(parent):
            out.append(int(stat.parent.name))
    return out


__all__ = [
    "child_pids",
    "free_ports",
    "load_figures",
    "merged_buckets",
    "worker_texts",
    "read_log",
    "router_flags",
    "stop_worker_groups",
    "worker_figures",
    "worker_ports",
]
