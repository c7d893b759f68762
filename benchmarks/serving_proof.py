"""The serving proof (issue 21): the project's load client against the engine's own reference client, through
one server, same prompt shape, same levels — and the table that compares them.

``lab/h200/serving_proof.sh`` starts each server once with exactly the harness's flags
(``command``), drives it with the reference client and then with ``compare.py --backend openai``
at the same shape (1,024-token random prompts, 64 output tokens, EOS ignored, closed loop at
C = 32 and 128, C + 10 x C requests), and ``table`` turns the outputs into one JSON table:

- reference: ``vllm bench serve`` (``--save-result`` JSON: ``output_throughput``,
  ``median_ttft_ms``...). For vLLM with ``--backend vllm``; for SGLang the same client pointed at
  SGLang's OpenAI ``/v1/completions`` (``--backend openai``), since ``sglang.bench_serving``
  reports nonsense on dummy weights (requests end at once, TTFT 0).
- project: the run's records, by the report's own definitions (``workloads.load.report.levels``
  ``per_level``: output tok/s over the level's whole window, TTFT at the caller, p50), with the
  client processes' CPU shares and the server's own TTFT p50 from the level records.

Per level and server: both tok/s and their ratio, both TTFT p50 and their ratio, and whether the
targets hold (tok/s >= 95 % of the reference's, TTFT p50 within 10 %). Both clients' figures have
``vllm bench serve``'s definitions: output tokens of all the level's requests over its whole
duration (first submit to last token), TTFT p50 over all of them (the first wave included).

What makes the two runs the same work (the first sitting, 2026-12-01, had none of it, and its
reference runs were served partly from the prefix cache — vLLM's log showed hit rates of 20-40 %
during them, 0 % during the project's — so its reference figures are too high): every reference
run has its own ``--seed`` (the random dataset's prompts of one seed are the same prompts, so two
runs with one seed share them), the server's prefix cache is reset before every run (vLLM ``POST
/reset_prefix_cache``, SGLang ``POST /flush_cache``; the project resets it before each level
itself), the reference runs as many requests as the project's level (C + 10 x C, after its own
C warm-up requests), and vLLM's ``/metrics`` prefix-cache counters are read around each reference
run (``prefix_cache_hit_share``: should be 0).

    python -m benchmarks.serving_proof command vllm --port 8100 --python /tmp/py-vllm \\
        [--model ... --random-weights]
    python -m benchmarks.serving_proof table --reference vllm=DIR --project vllm=RUN_DIR [...] \\
        --out proof.json
"""

from __future__ import annotations

import argparse
import json
import shlex
from pathlib import Path
from typing import Any

TPS_TARGET = 0.95  # the project's output tok/s at least this share of the reference's
TTFT_TOLERANCE = 0.10  # the project's TTFT p50 within this share of the reference's
SERVERS = {
    "vllm": "llm_call_anatomy.backends.openai.servers:VLLMServerBackend",
    "sglang": "llm_call_anatomy.backends.openai.servers:SGLangServerBackend",
}


def server_command(engine: str, port: int, args: argparse.Namespace) -> str:
    """The shell line that starts ``engine``'s server as ``--backend {engine}-server`` would (env
    included)."""
    import importlib

    from llm_call_anatomy.contract.adapter import BackendSettings
    from llm_call_anatomy.harness import models

    model = models.resolve(args.model, args.random_weights)
    settings = BackendSettings(
        model_path=model.path,
        model_label=model.label,
        dtype=args.dtype,
        device=args.device,
        random_weights=args.random_weights or not model.has_weights,
        tp=args.tp,
        max_model_len=args.max_model_len,
    )
    module, name = SERVERS[engine].split(":")
    backend = getattr(importlib.import_module(module), name)(settings)
    argv = backend.server_argv(port)
    argv[0] = args.python
    env = backend.server_env()
    return " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items()) + " " + shlex.join(argv)


def reference_rows(folder: Path) -> dict[int, dict[str, Any]]:
    """``vllm bench serve --save-result`` files in ``folder``: concurrency -> its figures."""
    out = {}
    for path in sorted(folder.glob("*.json")):
        data = json.loads(path.read_text())
        if "output_throughput" not in data or data.get("max_concurrency") is None:
            continue  # a warm-up or another file
        out[int(data["max_concurrency"])] = {
            "tok_s": data["output_throughput"],
            "ttft_p50_ms": data.get("median_ttft_ms"),
            "ttft_mean_ms": data.get("mean_ttft_ms"),
            "tpot_p50_ms": data.get("median_tpot_ms"),
            "itl_p50_ms": data.get("median_itl_ms"),
            "completed": data.get("completed"),
            "file": path.name,
            "prefix_cache_hit_share": prefix_cache_hit_share(
                path.with_suffix(".metrics-before"), path.with_suffix(".metrics-after")
            ),
            **server_ttft(path.with_suffix(".metrics-before"), path.with_suffix(".metrics-after")),
        }
    return out


def server_ttft(before: Path, after: Path) -> dict[str, Any]:
    """The server's own TTFT over one run, from its ``/metrics`` histograms scraped before and after it (the
    level records' ``server_timings``, the same code): mean (exact: the histogram's sum / count) and p50
    (bucket-interpolated). Empty when not scraped."""
    if not before.exists() or not after.exists():
        return {}
    from llm_call_anatomy.backends.openai.metrics import level_timings, parse_buckets

    t = level_timings(parse_buckets(before.read_text()), parse_buckets(after.read_text()))
    return {"server_ttft_mean_ms": t.get("ttft_ms_mean"), "server_ttft_p50_ms": t.get("ttft_ms_p50")}


def prefix_cache_hit_share(before: Path, after: Path) -> float | None:
    """vLLM's prefix-cache hits / queries between two ``/metrics`` scrapes (None: not scraped, or not
    vLLM's)."""
    if not before.exists() or not after.exists():
        return None
    from llm_call_anatomy.backends.openai.metrics import LOAD_VALUES
    from llm_call_anatomy.backends.openai.replicas import summed_values

    b, a = (summed_values(p.read_text(), LOAD_VALUES) for p in (before, after))
    if "prefix_cache_queries_total" not in a or "prefix_cache_queries_total" not in b:
        return None  # SGLang exports no such counters (its cache_hit_rate is a gauge of the moment)
    queries = a["prefix_cache_queries_total"] - b["prefix_cache_queries_total"]
    hits = a.get("prefix_cache_hits_total", 0.0) - b.get("prefix_cache_hits_total", 0.0)
    return round(hits / queries, 4) if queries > 0 else None


def project_rows(run_dir: Path) -> dict[int, dict[str, Any]]:
    """A ``compare.py`` run's load levels: concurrency -> tok/s, TTFT p50 (the report's definitions), client
    CPU."""
    from llm_call_anatomy.contract.level_facts import LevelFacts
    from llm_call_anatomy.reports.runs import read_runs
    from llm_call_anatomy.reports.stats import num
    from llm_call_anatomy.workloads.load.report.levels import level_facts, per_level

    df = read_runs([run_dir]).records
    levels, facts = per_level(df), level_facts(df)
    timed = df[df["load_concurrency"].notna() & df["cache_state"].notna() & df["error"].isna()]
    ttft_mean = timed.groupby("load_concurrency")["ttft_ms"].mean()
    out = {}
    for row in levels.to_dict("records"):
        if row["concurrency"] is None or row["concurrency"] != row["concurrency"]:
            continue  # open-loop rates are not part of the proof
        f = facts.get((row["backend"], row["workload"], row["mode"], row["case"])) or LevelFacts()
        out[int(row["concurrency"])] = {
            "tok_s": row["output_tps"],
            "ttft_p50_ms": row["ttft_p50"],
            "tpot_p50_ms": row["tpot_p50"],
            "itl_p50_ms": row["itl_p50"],
            "completed": row["requests"],
            "errors": row["errors"],
            "client_procs": f.client_procs,
            "client_cpu_share": f.client_cpu_share,
            "client_limited": f.client_limited,
            "ttft_mean_ms": num(ttft_mean.get(row["concurrency"])),
            "server_ttft_p50_ms": (f.server_timings or {}).get("ttft_ms_p50"),
            "server_ttft_mean_ms": (f.server_timings or {}).get("ttft_ms_mean"),
        }
    return out


def client_added_ttft(side: dict[str, Any]) -> float | None:
    """What a client adds to the TTFT the server measured over the same run: the client's mean TTFT less the
    server's own (means, since the server's histogram gives its mean exactly and its p50 only within a
    bucket). The HTTP, the server's API process and the client's own cost: what the proof is about."""
    client, server = side.get("ttft_mean_ms"), side.get("server_ttft_mean_ms")
    return None if client is None or server is None else round(client - server, 1)


def table(
    reference: dict[str, Path], project: dict[str, Path], after: dict[str, Path] | None = None
) -> dict[str, Any]:
    """One row per server and level. ``after``: the reference run again after the project's, so the row also
    shows how much the server itself moved between the turns (a gap smaller than that is no difference)."""
    rows = []
    after = after or {}
    for server in sorted(set(reference) | set(project)):
        ref = reference_rows(reference[server]) if server in reference else {}
        own = project_rows(project[server]) if server in project else {}
        again = reference_rows(after[server]) if server in after else {}
        for c in sorted(set(ref) | set(own)):
            r, p, r2 = ref.get(c, {}), own.get(c, {}), again.get(c, {})
            tps = p["tok_s"] / r["tok_s"] if r.get("tok_s") and p.get("tok_s") is not None else None
            ttft = (
                p["ttft_p50_ms"] / r["ttft_p50_ms"]
                if r.get("ttft_p50_ms") and p.get("ttft_p50_ms") is not None
                else None
            )
            rows.append(
                {
                    "server": server,
                    "concurrency": c,
                    "reference_tok_s": r.get("tok_s"),
                    "project_tok_s": p.get("tok_s"),
                    "tok_s_ratio": _r(tps),
                    "reference_ttft_p50_ms": r.get("ttft_p50_ms"),
                    "project_ttft_p50_ms": p.get("ttft_p50_ms"),
                    "ttft_p50_ratio": _r(ttft),
                    "meets_targets": None
                    if tps is None or ttft is None
                    else bool(tps >= TPS_TARGET and abs(ttft - 1) <= TTFT_TOLERANCE),
                    "reference_after_tok_s": r2.get("tok_s"),
                    "reference_after_ttft_p50_ms": r2.get("ttft_p50_ms"),
                    "reference_cache_hit_share": r.get("prefix_cache_hit_share"),
                    "reference_added_ttft_ms": client_added_ttft(r),
                    "project_added_ttft_ms": client_added_ttft(p),
                    "reference_server_ttft_mean_ms": r.get("server_ttft_mean_ms"),
                    "project_server_ttft_mean_ms": p.get("server_ttft_mean_ms"),
                    "reference": r,
                    "project": p,
                }
            )
    return {
        "targets": f"project tok/s >= {TPS_TARGET:.0%} of the reference's and TTFT p50 within "
        f"{TTFT_TOLERANCE:.0%}, per server and level",
        "reference_client": "vllm bench serve (vLLM: --backend vllm; SGLang: --backend openai on its "
        "/v1/completions)",
        "project_client": "compare.py --backend openai: the lean client in --client-procs processes "
        "(backends/openai/lean_stream.py, backends/load_shards.py)",
        "definitions": "tok/s: output tokens of all the level's requests / first submit to last token (the "
        "reference: its benchmark duration, the same); TTFT p50: the median over all of them, at "
        "each client; added TTFT: the client's mean TTFT less the server's own mean over the same run "
        "(its /metrics histogram's sum / count, scraped before and after the run)",
        "rows": rows,
    }


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


def _pairs(items: list[str], option: str) -> dict[str, Path]:
    out = {}
    for item in items:
        server, sep, path = item.partition("=")
        if not sep or not Path(path).exists():
            raise SystemExit(f"serving_proof: {option} {item!r}: expected SERVER=PATH with an existing PATH")
        out[server] = Path(path)
    return out


def markdown(result: dict[str, Any]) -> str:
    """The table as Markdown, a line per server and level: reference tok/s (its re-run after the project's in
    brackets), project tok/s with its ratio, both TTFT p50 with their ratio, the server's own TTFT mean during
    each client's run and what each client added to it, the reference runs' prefix-cache hit share and the
    targets (``-``: a side missing)."""
    lines = [
        "| server | C | reference tok/s (after) | project tok/s (ratio) | "
        "TTFT p50 ms reference / project (ratio) | server's TTFT mean ms, reference / project run | "
        "added TTFT ms, reference / project | reference cache hits | targets |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        met = r["meets_targets"]
        targets = "met" if met else "not met" if met is False else "-"
        lines.append(
            f"| {r['server']} | {r['concurrency']} | {_f(r['reference_tok_s'])} "
            f"({_f(r['reference_after_tok_s'])}) | {_f(r['project_tok_s'])} ({r['tok_s_ratio']}) | "
            f"{_f(r['reference_ttft_p50_ms'])} / {_f(r['project_ttft_p50_ms'])} ({r['ttft_p50_ratio']}) | "
            f"{_f(r.get('reference_server_ttft_mean_ms'))} / {_f(r.get('project_server_ttft_mean_ms'))} | "
            f"{_f(r.get('reference_added_ttft_ms'))} / {_f(r.get('project_added_ttft_ms'))} | "
            f"{_share(r.get('reference_cache_hit_share'))} | {targets} |"
        )
    return "\n".join(lines)


def _share(x: float | None) -> str:
    return "not read" if x is None else f"{x:.0%}"


def _f(x: float | None) -> str:
    return "-" if x is None else f"{x:,.1f}"


def main(argv: list[str] | None = None) -> int:
    """The command line: ``command`` prints the shell line that starts a server with the harness's flags;
    ``table`` builds the comparison from the outputs, prints it as Markdown and writes the JSON to
    ``--out``."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="what", required=True)
    cmd = sub.add_parser("command", help="print the shell line that starts a server with the harness's flags")
    cmd.add_argument("engine", choices=sorted(SERVERS))
    cmd.add_argument("--port", type=int, required=True)
    cmd.add_argument(
        "--python", default="python3", help="the interpreter (wrapper) of the engine's environment"
    )
    cmd.add_argument("--model", default="qwen3-8b-shape")
    cmd.add_argument("--random-weights", action="store_true")
    cmd.add_argument("--dtype", default=None, help="default: bfloat16 on cuda, float32 on cpu")
    cmd.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    cmd.add_argument("--tp", type=int, default=1)
    cmd.add_argument("--max-model-len", type=int, default=3072)
    tab = sub.add_parser("table", help="the reference vs project table from the outputs")
    tab.add_argument(
        "--reference",
        action="append",
        default=[],
        metavar="SERVER=DIR",
        help="a folder of `vllm bench serve --save-result` files",
    )
    tab.add_argument(
        "--reference-after",
        action="append",
        default=[],
        metavar="SERVER=DIR",
        help="the reference run again after the project's (the server's own drift)",
    )
    tab.add_argument(
        "--project", action="append", default=[], metavar="SERVER=RUN_DIR", help="a compare.py run"
    )
    tab.add_argument("--out", default=None, help="write the table here (JSON)")
    args = p.parse_args(argv)
    if args.what == "command":
        args.dtype = args.dtype or ("float32" if args.device == "cpu" else "bfloat16")
        print(server_command(args.engine, args.port, args))
        return 0
    result = table(
        _pairs(args.reference, "--reference"),
        _pairs(args.project, "--project"),
        _pairs(args.reference_after, "--reference-after"),
    )
    print(markdown(result))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
