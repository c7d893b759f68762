"""Benchmark 4: the load client's own ceiling — what it adds to TTFT and ITL, and its CPU, against a server
that paces streams as an engine does.

The server is :mod:`benchmarks.fake_engine` in ``--server-procs`` processes of its own on one port
(:mod:`benchmarks.fake_engine_procs`; default: one per 128 streams of the busiest level, at most half
the cores): in each, one step every ``--step-ms`` (default 7 ms) emits the next token of every stream
in flight; it echoes nothing unasked and serves a realistic vLLM ``/metrics``, summed over its
processes (which the harness scrapes as in a study: ``backends.load_level.sample_pause_s``). The
study's own path drives it: the real ``OpenAIBackend`` (started as for ``--backend openai``) and
``backends.load_level.run_level``, i.e. the lean client in ``--client-procs`` processes, at each
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
- ``server_itl_ms_p50`` / ``_mean``: the server's own gaps between sends, and ``server_fell_behind``:
  true where their median exceeds the step by more than 10 % (``SERVER_BEHIND``) — then the fake
  server itself could not keep its pace (too few ``--server-procs``, a busy host), tok/s is below the
  pace for that reason, and the level says nothing about the client's ceiling;
  ``server_sent_tokens_per_s``: what the server sent in the level, beside its target
  ``server_pace_tokens_per_s`` (C / step); ``server_requests_per_proc``: how the kernel spread them;
- ``server_side``: the harness's own reading of the server's ``/metrics`` over the level (TTFT/ITL
  p50 from the histograms, bucket-interpolated, and their counts, which must equal the requests).

``--old-client`` drives the same server through the ``openai`` package in the harness's own
process instead (what the load path did before issue 21), for comparison: per-request matching
is not available there, so it reports the client-minus-server TTFT p50 of the two distributions.

    python -m benchmarks.load_client [--levels 1,32,128] [--seconds 8] [--client-procs N] [--server-procs N]
        [--out FILE.json]

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
from pathlib import Path
from typing import Any

SERVER_BEHIND = (
    1.1  # the server's median gap between a stream's sends over its step by more than this: behind
)


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


def write_result(
    path: str,
    benchmark: str,
    before: dict[str, Any],
    args: argparse.Namespace,
    rows: list[dict[str, Any]],
    command: str | None = None,
) -> None:
    """A benchmark's result file (JSON): its rows, the machine before the run (:func:`machine`) and the load
    average after, its settings (``args`` but ``--out``), the date, and the command where one is given."""
    result = {
        "benchmark": benchmark,
        **({"command": command} if command is not None else {}),
        "machine": before,
        "load_average_after": os.getloadavg(),
        "settings": {k: v for k, v in vars(args).items() if k != "out"},
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "rows": rows,
    }
    with open(path, "w") as f:
        json.dump(result, f, indent=1)


def measure_level(backend, server, c: int, args: argparse.Namespace) -> dict[str, Any]:
    """One closed-loop level at concurrency ``c`` through the study's own load loop: about ``--seconds`` of
    requests at the server's pace, then tok/s, the client's added TTFT and ITL against the server's own send
    times, the client processes' CPU shares and whether the server kept its pace."""
    from llm_call_anatomy.backends.load_level import run_level
    from llm_call_anatomy.backends.load_loop import LoadSettings
    from llm_call_anatomy.contract.adapter import Request

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
    seen = set(server.log())
    cpu0 = time.process_time()
    outs, facts = run_level(backend, sessions, LoadSettings(concurrency=c, client_procs=args.client_procs))
    harness_cpu = time.process_time() - cpu0
    log = server.log()
    done = [o for (o,) in outs if o.error is None and o.output is not None]
    origin = facts.origin_perf_counter
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
    new = [e for k, e in log.items() if k not in seen and e["sent"]]
    sent = sum(len(e["sent"]) for e in new)
    span = max(e["sent"][-1] for e in new) - min(e["received"] for e in new) if new else 0.0
    per_proc: dict[str, int] = {}
    for k in log:
        if k not in seen:
            per_proc[k.split("-")[1]] = per_proc.get(k.split("-")[1], 0) + 1
    server_p50 = pct(server_gaps, 50)
    timings = facts.server_timings or {}
    tokens = sum(len(o.token_times_s) for o in done)
    gaps = [(b - a) * 1e3 for o in done for a, b in zip(o.token_times_s, o.token_times_s[1:], strict=False)]
    return {
        "client": "openai (in process)" if args.old_client else facts.client,
        "concurrency": c,
        "requests": len(done),
        "failed": n - len(done),
        "wall_s": round(facts.wall_s, 3),
        "tokens_per_s": round(tokens / facts.wall_s, 1),
        "server_pace_tokens_per_s": round(c / (args.step_ms / 1e3), 1),
        "server_sent_tokens_per_s": round(sent / span, 1) if span > 0 else None,
        "server_step_ms": args.step_ms,
        "server_fell_behind": None if server_p50 is None else server_p50 > SERVER_BEHIND * args.step_ms,
        "server_procs": args.server_procs,
        "server_requests_per_proc": [per_proc[k] for k in sorted(per_proc, key=int)],
        "server_side": {k: timings.get(k) for k in ("ttft_ms_p50", "ttft_n", "itl_ms_p50", "itl_n")},
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
        "server_itl_ms_p50": _r(server_p50),
        "server_itl_ms_mean": _r(statistics.fmean(server_gaps)) if server_gaps else None,
        "client_itl_ms_mean": _r(statistics.fmean(gaps)) if gaps else None,
        "client_procs": facts.client_procs,
        "client_cpu_share": facts.client_cpu_share,
        "client_limited": facts.client_limited,
        "harness_process_cpu_share": round(harness_cpu / facts.wall_s, 3),
    }


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 3)


def measure(args: argparse.Namespace, model_path: str) -> list[dict]:
    """Every level of ``--levels`` against one fake server (``--server-procs`` processes), through one
    started ``OpenAIBackend`` (the lean client, or with ``--old-client`` the openai package's)."""
    from benchmarks.fake_engine_procs import start_procs
    from llm_call_anatomy.backends.openai import OpenAIBackend
    from llm_call_anatomy.contract.adapter import BackendSettings

    server = start_procs(args.step_ms / 1e3, args.server_procs)
    url = server.url
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
        rows = [measure_level(backend, server, c, args) for c in args.levels]
        backend.close()
        return rows
    finally:
        server.stop()


def table(rows: list[dict]) -> str:
    """The levels as a Markdown table; a level whose server fell behind its own pace says so."""
    lines = [
        "| C | tok/s (server pace) | server ITL p50 ms (step) | added TTFT p50 / p99 ms "
        "| added ITL p50 / p99 ms "
        "| client CPU share |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        behind = " **server fell behind**" if r["server_fell_behind"] else ""
        lines.append(
            f"| {r['concurrency']} | {r['tokens_per_s']:,.0f} ({r['server_pace_tokens_per_s']:,.0f}) | "
            f"{r['server_itl_ms_p50']} ({r['server_step_ms']}){behind} | "
            f"{r['added_ttft_ms_p50']} / {r['added_ttft_ms_p99']} | "
            f"{r['added_itl_ms_p50']} / {r['added_itl_ms_p99']} | "
            f"{r['client_cpu_share']} |"
        )
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, checked (a bad value: one line, exit 2); ``server_procs`` resolved."""
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
        "--server-procs",
        type=int,
        default=None,
        help="fake-server processes on its one port (default: one per 128 streams of the busiest level, "
        "at most half the cores)",
    )
    p.add_argument(
        "--old-client", action="store_true", help="the openai package in this process instead (comparison)"
    )
    p.add_argument("--out", default=None, help="write the result (rows + machine) here as JSON")
    args = p.parse_args(argv)
    try:
        args.levels = [int(x) for x in args.levels.split(",")]
    except ValueError:
        p.error(f"--levels {args.levels}: give concurrencies as integers, comma-separated")
    if min(args.levels) < 1:
        p.error("--levels: each concurrency must be at least 1")
    if args.client_procs is not None and args.client_procs < 1:
        p.error("--client-procs must be at least 1")
    if args.server_procs is not None and args.server_procs < 1:
        p.error(
            f"--server-procs {args.server_procs}: give 1 or more server processes "
            "(or leave it out: automatic)"
        )
    from benchmarks.fake_engine_procs import auto_server_procs

    args.server_procs = args.server_procs or auto_server_procs(max(args.levels))
    return args


def main(argv: list[str] | None = None) -> int:
    """Measure, print the table, and with ``--out`` write it as JSON with the machine it ran on."""
    args = parse_args(argv)
    from llm_call_anatomy.harness.models import build_tiny

    before = machine()
    rows = measure(args, str(build_tiny()))
    print(table(rows))
    if args.out:
        write_result(args.out, "load_client (benchmark 4)", before, args, rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
