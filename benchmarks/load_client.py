"""Benchmark 4: the load client's own ceiling — what it adds to TTFT and ITL, and its CPU, against a server
that paces streams as an engine does.

The server is :mod:`benchmarks.fake_engine` in its own process: one step every ``--step-ms``
(default 7 ms) emits the next token of every stream in flight, it echoes nothing unasked and it
serves a realistic vLLM ``/metrics`` (which the harness scrapes every 0.1 s, as in a study). The
study's own path drives it: the real ``OpenAIBackend`` (started as for ``--backend openai``) and
``backends.load_loop.run_level``, i.e. the lean client in ``--client-procs`` processes, at each
closed-loop concurrency, with ``--prompt-tokens`` (1,024) token-id prompts and ``--tokens`` (64)
output tokens, EOS ignored.

The server logs when it read each request and sent each token on ``time.perf_counter()``
(``CLOCK_MONOTONIC``, the client's clock on this host), so per level it reports, beside streamed
tok/s (and what the server's pacing allows: C / step):

- ``added_ttft_ms``: the client's first-token stamp minus the server's first send, p50 / p99;
- ``added_itl_ms``: each token's stamp minus its send, p50 / p99 (a client that falls behind
  shows it here, not as a short ITL);
- ``submit_to_read_ms``: the client's submit stamp to the server having read the whole request
  (body serialisation, connection, the request on the wire), p50;
- ``client_cpu_share``: each client process's CPU time over the level's wall time;
- ``server_itl_ms_p50`` / ``_mean``: the server's own gaps between sends: where they exceed the step,
  the fake server itself fell behind (a busy host), and tok/s is below the pace for that reason.

``--old-client`` drives the same server through the ``openai`` package in the harness's own
process instead (what the load path did before issue 21), for comparison: per-request matching
is not available there, so it reports the client-minus-server TTFT p50 of the two distributions.

    python -m benchmarks.load_client [--levels 1,32,128] [--seconds 8] [--client-procs N] [--out FILE.json]

Not a timed test: it measures the machine it runs on; the result file names it (CPU, cores,
load average before the run: other processes on the host compete with the client).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
import urllib.request
from pathlib import Path
from typing import Any


def pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    values = sorted(values)
    return values[min(len(values) - 1, max(0, round(q / 100 * (len(values) - 1))))]


def machine() -> dict[str, Any]:
    info = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    model = next(
        (line.split(":", 1)[1].strip() for line in info.splitlines() if line.startswith("model name")),
        platform.processor(),
    )
    return {
        "host": platform.node(),
        "cpu": model,
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "load_average_before": os.getloadavg(),
    }


def measure_level(backend, url: str, c: int, args: argparse.Namespace) -> dict[str, Any]:
    from backends.base import Request
    from backends.load_loop import LoadSettings, run_level

    n = max(
        2 * c, int(args.seconds * c / (args.tokens * args.step_ms / 1e3))
    )  # about --seconds at the server's pace
    sessions = [
        [
            Request(
                prompt_ids=[(k * 7919 + i) % 30000 + 1 for i in range(args.prompt_tokens)],
                max_new_tokens=args.tokens,
                ignore_eos=True,
            )
        ]
        for k in range(n)
    ]
    seen = set(_log(url))
    cpu0 = time.process_time()
    outs, facts = run_level(backend, sessions, LoadSettings(concurrency=c, client_procs=args.client_procs))
    harness_cpu = time.process_time() - cpu0
    log = _log(url)
    done = [o for (o,) in outs if o.error is None and o.output is not None]
    origin = facts.get("origin_perf_counter")
    added_ttft, added_itl, submit_read = [], [], []
    if origin is not None:
        for o in done:
            entry = log.get(o.output.extra.get("response_id") or "")
            if not entry or len(entry["sent"]) != len(o.token_times_s):
                continue
            added_ttft.append((o.first_token_s + origin - entry["sent"][0]) * 1e3)
            added_itl += [(t + origin - s) * 1e3 for t, s in zip(o.token_times_s, entry["sent"], strict=True)]
            submit_read.append((entry["received"] - (o.submit_s + origin)) * 1e3)
    client_ttft = [(o.first_token_s - o.submit_s) * 1e3 for o in done if o.first_token_s is not None]
    server_ttft = [
        (e["sent"][0] - e["received"]) * 1e3 for k, e in log.items() if k not in seen and e["sent"]
    ]
    server_gaps = [
        (b - a) * 1e3
        for k, e in log.items()
        if k not in seen
        for a, b in zip(e["sent"], e["sent"][1:], strict=False)
    ]
    tokens = sum(len(o.token_times_s) for o in done)
    gaps = [(b - a) * 1e3 for o in done for a, b in zip(o.token_times_s, o.token_times_s[1:], strict=False)]
    return {
        "client": "openai (in process)" if args.old_client else facts.get("client"),
        "concurrency": c,
        "requests": len(done),
        "failed": n - len(done),
        "wall_s": round(facts["wall_s"], 3),
        "tokens_per_s": round(tokens / facts["wall_s"], 1),
        "server_pace_tokens_per_s": round(c / (args.step_ms / 1e3), 1),
        "client_ttft_ms_p50": _r(pct(client_ttft, 50)),
        "server_ttft_ms_p50": _r(pct(server_ttft, 50)),
        "client_minus_server_ttft_ms_p50": _r(pct(client_ttft, 50) - pct(server_ttft, 50))
        if client_ttft and server_ttft
        else None,
        "added_ttft_ms_p50": _r(pct(added_ttft, 50)),
        "added_ttft_ms_p99": _r(pct(added_ttft, 99)),
        "added_itl_ms_p50": _r(pct(added_itl, 50)),
        "added_itl_ms_p99": _r(pct(added_itl, 99)),
        "submit_to_read_ms_p50": _r(pct(submit_read, 50)),
        "client_itl_ms_p50": _r(pct(gaps, 50)),
        "server_itl_ms_p50": _r(pct(server_gaps, 50)),
        "server_itl_ms_mean": _r(statistics.fmean(server_gaps)) if server_gaps else None,
        "client_itl_ms_mean": _r(statistics.fmean(gaps)) if gaps else None,
        "client_procs": facts.get("client_procs"),
        "client_cpu_share": facts.get("client_cpu_share"),
        "client_limited": facts.get("client_limited"),
        "harness_process_cpu_share": round(harness_cpu / facts["wall_s"], 3),
    }


def _log(url: str) -> dict[str, dict]:
    with urllib.request.urlopen(url + "/fake/log") as resp:
        return json.loads(resp.read())


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 3)


def measure(args: argparse.Namespace, model_path: str) -> list[dict]:
    from backends.base import BackendSettings
    from backends.openai import OpenAIBackend
    from benchmarks.fake_engine import start

    proc, url = start(args.step_ms / 1e3)
    try:
        backend = OpenAIBackend(
            BackendSettings(
                model_path=model_path,
                model_label="fake",
                base_url=url + "/v1",
                client_procs=args.client_procs,
            )
        )
        backend.start()
        if args.old_client:
            backend.load_client = lambda: None  # the openai package's AsyncOpenAI, in this process
        rows = [measure_level(backend, url, c, args) for c in args.levels]
        backend.close()
        return rows
    finally:
        proc.terminate()
        proc.join(5)


def table(rows: list[dict]) -> str:
    lines = [
        "| C | tok/s (server pace) | added TTFT p50 / p99 ms | added ITL p50 / p99 ms | client CPU share |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['concurrency']} | {r['tokens_per_s']:,.0f} ({r['server_pace_tokens_per_s']:,.0f}) | "
            f"{r['added_ttft_ms_p50']} / {r['added_ttft_ms_p99']} | {r['added_itl_ms_p50']} / {r['added_itl_ms_p99']} | "
            f"{r['client_cpu_share']} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--levels", default="1,32,128", help="closed-loop concurrencies, comma-separated")
    p.add_argument(
        "--seconds", type=float, default=8.0, help="about how long each level runs at the server's pace"
    )
    p.add_argument("--tokens", type=int, default=64, help="output tokens per request")
    p.add_argument("--prompt-tokens", type=int, default=1024)
    p.add_argument("--step-ms", type=float, default=7.0, help="the fake engine's step")
    p.add_argument("--client-procs", type=int, default=None, help="client processes (default: automatic)")
    p.add_argument(
        "--old-client", action="store_true", help="the openai package in this process instead (comparison)"
    )
    p.add_argument("--out", default=None, help="write the result (rows + machine) here as JSON")
    args = p.parse_args(argv)
    args.levels = [int(x) for x in args.levels.split(",")]
    if args.client_procs is not None and args.client_procs < 1:
        p.error("--client-procs must be at least 1")
    from harness.models import build_tiny

    before = machine()
    rows = measure(args, str(build_tiny()))
    print(table(rows))
    if args.out:
        result = {
            "benchmark": "load_client (benchmark 4)",
            "machine": before,
            "load_average_after": os.getloadavg(),
            "settings": {k: v for k, v in vars(args).items() if k != "out"},
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "rows": rows,
        }
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
