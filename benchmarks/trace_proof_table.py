"""The trace proof's table (``benchmarks/trace_proof.py``), built from what a proof's folder saved —
never from figures typed by hand:

    python -m benchmarks.trace_proof_table DIR [--json proof.json]

Per replay (``vllm-bench-1``, ``harness``, ``vllm-bench-2``; ``benchmarks/trace_proof_run.py``):

- **requests**: served / failed, at the client; whether each one had the plan's input and output tokens, in
  order (``DIR/requests.json``; the bench's ``input_lens`` and ``output_lens`` are the server's usage counts,
  the harness's records ``prompt_tokens`` and ``output_tokens``, and ``prompt_ids_match``);
- **tokens**: input and output, at the client and at the server (``vllm:prompt_tokens``,
  ``vllm:generation_tokens`` over the replay, from ``/metrics`` before and after it);
- **prefix-cache hits**: ``vllm:prefix_cache_hits`` / ``vllm:prefix_cache_queries`` over the replay, tokens;
- **TTFT p50 / p90, TPOT p50 / p90** in ms, each client's own figures: the bench's ``median_*`` and ``p90_*``
  (its ``--metric-percentiles 50,90,99``), the harness's from its records by the report's own function
  (``workloads.load.report.levels.percentile``: ``ttft_ms``, ``decode_ms_per_token``). Both are
  ``np.percentile`` over the replay's requests; TTFT is submit to first streamed token, TPOT is (last token -
  first) / (tokens - 1), per request;
- **the server's own TTFT mean** (its ``vllm:time_to_first_token_seconds`` histogram's sum / count over the
  replay) and **TTFT added** by the client: its mean TTFT less the server's (``benchmarks/serving_proof.py``);
- **submit lag** p99: each request's submit after the first, less the plan's arrival after the first;
- **client CPU s**: the whole client process (start-up included), and over the replay's window (first submit
  to last token, interpolated from the 0.25 s samples); **server CPU s** over the same window.

The ``agreement`` lines put the harness beside the two bench runs: within noise when |harness - the benches'
mean| <= max(|bench 1 - bench 2|, 5 % of the mean) (and exactly equal for counts and tokens). A percentile's
line also carries the 95 % interval of that gap over the window's requests drawn again
(``benchmarks/trace_proof_interval.py``): whether the gap is larger than which requests the window held.
"""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path
from typing import Any

from benchmarks.trace_proof_interval import percentile_intervals
from benchmarks.trace_proof_markdown import markdown, write_block

ORDER = ("vllm-bench-1", "harness", "vllm-bench-2")  # the proof's replays; diagnostic ones follow
NOISE_FLOOR = 0.05  # a gap within 5 % of the benches' mean is within noise even when the two agree closer
SERVER_VALUES = {
    "vllm:prefix_cache_queries": "prefix_cache_queries",
    "vllm:prefix_cache_hits": "prefix_cache_hits",
    "vllm:prompt_tokens": "server_input_tokens",
    "vllm:generation_tokens": "server_output_tokens",
    "vllm:request_success": "server_requests",
}
EXACT = ("requests", "failed", "input_tokens", "output_tokens", "server_input_tokens", "server_output_tokens")
COMPARED = ("prefix_cache_hits", "ttft_p50_ms", "ttft_p90_ms", "tpot_p50_ms", "tpot_p90_ms", "added_ttft_ms")
COMPARED += ("client_cpu_window_s",)


def _metrics(folder: Path) -> dict[str, Any]:
    """The server's counters and TTFT over the replay, from the two ``/metrics`` pages."""
    from llm_call_anatomy.backends.openai.metrics import level_timings, parse_buckets
    from llm_call_anatomy.backends.openai.replicas import summed_values

    pages = [
        gzip.decompress((folder / f"metrics-{w}.txt.gz").read_bytes()).decode() for w in ("before", "after")
    ]
    before, after = (summed_values(p, SERVER_VALUES) for p in pages)
    out: dict[str, Any] = {k: after.get(k, 0.0) - before.get(k, 0.0) for k in SERVER_VALUES.values()}
    out["prefix_cache_hit_share"] = (
        out["prefix_cache_hits"] / out["prefix_cache_queries"] if out["prefix_cache_queries"] else None
    )
    timings = level_timings(*(parse_buckets(p) for p in pages))
    out["server_ttft_mean_ms"] = timings.get("ttft_ms_mean")
    return out


def _bench(folder: Path, plan: list[dict[str, Any]]) -> dict[str, Any]:
    r = json.loads((folder / "result.json").read_text())
    ok = [e in (None, "") for e in r["errors"]]
    ends = [s + lat for s, lat in zip(r["start_times"], r["latencies"], strict=True)]
    return {
        "requests": r["completed"],
        "failed": r["failed"],
        "input_tokens": r["total_input_tokens"],
        "output_tokens": r["total_output_tokens"],
        "same_requests": all(ok)
        and r["input_lens"] == [p["input_tokens"] for p in plan]
        and r["output_lens"] == [p["output_tokens"] for p in plan],
        "ttft_p50_ms": r["median_ttft_ms"],
        "ttft_p90_ms": r["p90_ttft_ms"],
        "tpot_p50_ms": r["median_tpot_ms"],
        "tpot_p90_ms": r["p90_tpot_ms"],
        "ttft_mean_ms": r["mean_ttft_ms"],
        "ttfts_ms": [t * 1e3 if ok_ else None for t, ok_ in zip(r["ttfts"], ok, strict=True)],
        "tpots_ms": [  # the bench's own per-request TPOT (vllm.benchmarks.serve.calculate_metrics)
            (lat - t) / (n - 1) * 1e3 if ok_ and n and n > 1 else None
            for lat, t, n, ok_ in zip(r["latencies"], r["ttfts"], r["output_lens"], ok, strict=True)
        ],
        "submit_lag_p99_ms": _lag_p99(r["start_times"], [p["arrival_s"] for p in plan]),
        "window": [min(r["start_times"]), max(ends)],
    }


def _harness(folder: Path, plan: list[dict[str, Any]]) -> dict[str, Any]:
    from llm_call_anatomy.workloads.load.report.levels import percentile

    lines = gzip.decompress((folder / "run" / "records.jsonl.gz").read_bytes()).decode().splitlines()
    rows = [json.loads(line) for line in lines]
    timed = sorted(
        (r for r in rows if r.get("kind") == "trace" and r.get("rep") is not None), key=lambda r: r["rep"]
    )
    ok = [r for r in timed if r.get("error") is None]
    (level,) = [r for r in rows if r.get("kind") == "trace" and r.get("rep") is None]
    facts = level["extra"]["level"]
    origin = facts["origin_perf_counter"]
    ttft = [r["ttft_ms"] for r in ok]
    return {
        "requests": len(ok),
        "failed": len(timed) - len(ok),
        "input_tokens": sum(r["prompt_tokens"] for r in ok),
        "output_tokens": sum(r["output_tokens"] for r in ok),
        "same_requests": len(ok) == len(plan)
        and all(r.get("prompt_ids_match") is not False for r in ok)
        and [(r["prompt_tokens"], r["output_tokens"]) for r in ok]
        == [(p["input_tokens"], p["output_tokens"]) for p in plan],
        "ttft_p50_ms": percentile(ttft, 50),
        "ttft_p90_ms": percentile(ttft, 90),
        "tpot_p50_ms": percentile([r["decode_ms_per_token"] for r in ok], 50),
        "tpot_p90_ms": percentile([r["decode_ms_per_token"] for r in ok], 90),
        "ttft_mean_ms": sum(ttft) / len(ttft) if ttft else None,
        "ttfts_ms": [r["ttft_ms"] if r.get("error") is None else None for r in timed],
        "tpots_ms": [r["decode_ms_per_token"] if r.get("error") is None else None for r in timed],
        "submit_lag_p99_ms": _lag_p99([r["submit_s"] for r in timed], [r["planned_submit_s"] for r in timed]),
        "window": [origin + min(r["submit_s"] for r in timed), origin + max(r["finish_s"] for r in ok)],
        "gauge_samples": facts.get("gauge_samples"),  # the load loop's /metrics samples (None: not recorded)
    }


def _lag_p99(submits: list[float], planned: list[float]) -> float | None:
    """The p99 of each request's submit after the first, less its planned arrival after the first, ms."""
    from llm_call_anatomy.workloads.load.report.levels import percentile

    lags = [((s - submits[0]) - (p - planned[0])) * 1e3 for s, p in zip(submits, planned, strict=True)]
    return percentile(lags, 99)


def _at(samples: list[list[float | None]], t: float, column: int) -> float | None:
    """A sampled CPU counter at time ``t``, linear between the samples around it."""
    pts = [(s[0], s[column]) for s in samples if s[column] is not None]
    before = [p for p in pts if p[0] <= t]
    after = [p for p in pts if p[0] >= t]
    if not before or not after:
        return None
    (t0, c0), (t1, c1) = before[-1], after[0]
    return c0 if t1 == t0 else c0 + (c1 - c0) * (t - t0) / (t1 - t0)


def _over(samples: list[list[float | None]], window: list[float], column: int) -> float | None:
    a, b = _at(samples, window[0], column), _at(samples, window[1], column)
    return None if a is None or b is None else b - a


def replay_row(folder: Path, plan: list[dict[str, Any]]) -> dict[str, Any]:
    """One replay's figures (see the module's docstring)."""
    facts = json.loads((folder / "replay.json").read_text())
    row = _bench(folder, plan) if (folder / "result.json").exists() else _harness(folder, plan)
    row.update(_metrics(folder))
    window = row.pop("window")
    added = (
        row["ttft_mean_ms"] - row["server_ttft_mean_ms"] if row["server_ttft_mean_ms"] is not None else None
    )
    row.update(
        replay=facts["replay"],
        client="vllm bench serve"
        if (folder / "result.json").exists()
        else "harness (compare.py --backend openai)",
        added_ttft_ms=added,
        window_s=window[1] - window[0],
        client_cpu_s=facts["cpu_s"],
        client_cpu_window_s=_over(facts["samples"], window, 1),
        server_cpu_window_s=_over(facts["samples"], window, 2),
        load_average_at_start=facts["load_average_at_start"],
    )
    return row


def paired_median(a: list[float | None], b: list[float | None]) -> float | None:
    """The median over requests of ``a[i] - b[i]`` (the same request in two replays; None: failed in one)."""
    from llm_call_anatomy.workloads.load.report.levels import percentile

    return percentile([x - y for x, y in zip(a, b, strict=False) if x is not None and y is not None], 50)


def agreement(rows: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The harness against the two bench runs, figure by figure; then request by request (TTFT, TPOT): the
    median of the harness's figure less the benches' mean figure for the same request, against the median of
    bench 2's less bench 1's."""
    h, b1, b2 = rows.get("harness"), rows.get("vllm-bench-1"), rows.get("vllm-bench-2")
    if not (h and b1 and b2):
        return []
    out, intervals = [], percentile_intervals(h, b1, b2)
    for key in EXACT + COMPARED:
        x, y1, y2 = h.get(key), b1.get(key), b2.get(key)
        if x is None or y1 is None or y2 is None:
            out.append({"figure": key, "within_noise": None})
            continue
        mean, spread = (y1 + y2) / 2, abs(y1 - y2)
        ok = x == y1 == y2 if key in EXACT else abs(x - mean) <= max(spread, NOISE_FLOOR * abs(mean))
        out.append(
            {"figure": key, "harness_minus_bench_mean": x - mean, "bench_spread": spread, "within_noise": ok}
            | ({"interval_requests_drawn_again": intervals[key]} if key in intervals else {})
        )
    return out + [_paired(h, b1, b2, figure) for figure in ("ttft", "tpot")]


def _paired(h: dict[str, Any], b1: dict[str, Any], b2: dict[str, Any], figure: str) -> dict[str, Any]:
    key = f"{figure}s_ms"
    bench_mean = [
        (x + y) / 2 if x is not None and y is not None else None
        for x, y in zip(b1[key], b2[key], strict=True)
    ]
    gap, noise = paired_median(h[key], bench_mean), paired_median(b2[key], b1[key])
    floor = NOISE_FLOOR * (b1[f"{figure}_p50_ms"] + b2[f"{figure}_p50_ms"]) / 2
    return {
        "figure": f"{figure}_per_request_median_ms",
        "harness_minus_bench_mean": gap,
        "bench_spread": None if noise is None else abs(noise),
        "within_noise": None if gap is None or noise is None else abs(gap) <= max(abs(noise), floor),
    }


def collect(folder: Path) -> dict[str, Any]:
    """The proof's figures: the window, each replay's row, the agreement, the machine's load."""
    folder = Path(folder)
    manifest = json.loads((folder / "requests.json").read_text())
    plan = manifest["requests"]
    rows = {p.name: replay_row(p, plan) for p in sorted(folder.iterdir()) if (p / "replay.json").exists()}
    first = rows.get("vllm-bench-1")
    for row in rows.values():  # request by request against the first bench run
        for figure in ("ttft", "tpot"):
            row[f"{figure}_vs_bench_1_median_ms"] = (
                paired_median(row[f"{figure}s_ms"], first[f"{figure}s_ms"]) if first else None
            )
    meta = json.loads((folder / "meta.json").read_text()) if (folder / "meta.json").exists() else {}
    return {
        "window": {
            "requests": len(plan),
            "input_tokens": sum(p["input_tokens"] for p in plan),
            "output_tokens": sum(p["output_tokens"] for p in plan),
            "span_s": max(p["arrival_s"] for p in plan) if plan else None,
            "verified": manifest.get("verified"),
        },
        "meta": meta,
        "replays": [rows[n] for n in ORDER if n in rows] + [r for n, r in rows.items() if n not in ORDER],
        "agreement": agreement(rows),
        "noise_rule": "within noise: |harness - benches' mean| <= max(|bench 1 - bench 2|, "
        f"{NOISE_FLOOR:.0%} of the mean); counts and tokens exactly equal",
    }


def main(argv: list[str] | None = None) -> int:
    """Print a proof folder's table; ``--json`` writes its figures, ``--write README`` its README block."""
    p = argparse.ArgumentParser(prog="python -m benchmarks.trace_proof_table", description=__doc__)
    p.add_argument("folder", help="a trace proof's folder (python -m benchmarks.trace_proof run --out)")
    p.add_argument("--json", type=Path, default=None, help="also write the figures here")
    p.add_argument(
        "--write", type=Path, default=None, metavar="README", help="replace the README's table block"
    )
    args = p.parse_args(argv)
    result = collect(Path(args.folder))
    table = markdown(result)
    print(table)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    if args.write:
        write_block(args.write, args.folder, table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
