"""Benchmark 6: which configuration makes transformers' continuous batching (``hf-cb``) fast, and why not.

One model load; for each configuration (``LCA_HF_CB``-style ``key=value`` lists, one per
``--config``) the ``hf-cb`` adapter starts a fresh manager with it and runs, through the study's
own load loop, fixed-shape requests (``--prompt-tokens`` P, ``--output-tokens`` O, EOS ignored) at
each concurrency in ``--levels``. Per configuration and level it writes: the manager's warm-up
seconds, its effective settings (attention, CUDA graphs, async batching, cache blocks), the
median gap between a request's tokens (ms per decode step: one token per request per step),
TTFT median and output tokens/s.

The configurations the H200 sitting runs (the question in issue #13: ``generate_batch`` with sdpa
and CUDA graphs ran at ~100 ms per step for one request on the Qwen3-8B shape):

    python -m benchmarks.hf_cb_configs --model qwen3-8b-shape --random-weights \\
        --out $OUT/hf-cb-configs.json \\
        --config "" --config "use_cuda_graph=true" --config "use_cuda_graph=true,num_blocks=64" \\
        --config "attn=eager"

``""`` is the adapter's default (the manager's own choices for sdpa). A configuration that fails
records its error and the next one runs. Print a table from the file:

    python -m benchmarks.hf_cb_configs --show FILE.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

LEVELS = (1, 32)


def gaps_ms(token_times: list[float]) -> list[float]:
    return [(b - a) * 1e3 for a, b in zip(token_times, token_times[1:], strict=False) if b > a]


def run_config(
    backend, config: str, prompts: list[list[int]], levels: tuple[int, ...], output_tokens: int
) -> dict:
    """Restarts the backend's manager with ``config`` and, at each concurrency C, runs C untimed warm-up
    requests then max(2C, 4) timed ones through the study's load loop. Returns the configuration's row:
    restart seconds, effective settings and, per level, errors, the median gap between a request's tokens,
    TTFT median and output tokens/s."""
    from llm_call_anatomy.backends.load_level import run_level
    from llm_call_anatomy.backends.load_loop import LoadSettings
    from llm_call_anatomy.contract.adapter import Request

    started = time.perf_counter()
    backend.reconfigure(config)
    row: dict[str, Any] = {
        "config": config or "(default)",
        "start_s": round(time.perf_counter() - started, 2),
        "effective": dict(backend.effective),
        "levels": [],
    }
    requests = [
        Request(prompt_ids=p, max_new_tokens=output_tokens, ignore_eos=True, reuse_prefix=True)
        for p in prompts
    ]
    for c in levels:
        n = max(2 * c, 4)
        warm, timed = requests[:c], requests[c : c + n]
        run_level(
            backend, [[r] for r in warm], LoadSettings(concurrency=c)
        )  # first shapes of this level: not timed
        outcomes, facts = run_level(backend, [[r] for r in timed], LoadSettings(concurrency=c))
        done = [o for (o,) in outcomes if o.error is None and o.output is not None]
        steps = [g for o in done for g in gaps_ms(o.token_times_s)]
        row["levels"].append(
            {
                "concurrency": c,
                "requests": len(timed),
                "errors": sorted({o.error for (o,) in outcomes if o.error}),
                "step_ms_median": statistics.median(steps) if steps else None,
                "ttft_ms_median": statistics.median((o.first_token_s - o.submit_s) * 1e3 for o in done)
                if done
                else None,
                "output_tok_s": sum(len(o.output.token_ids) for o in done) / facts.wall_s,
            }
        )
        print(
            f"  {row['config']}: C={c} step {row['levels'][-1]['step_ms_median']} ms, "
            f"{row['levels'][-1]['output_tok_s']:.0f} tok/s",
            flush=True,
        )
    return row


def measure(args: argparse.Namespace) -> list[dict]:
    """One model load (``LCA_HF_CB`` cleared first: the manager starts at the default), then ``run_config``
    for each ``--config`` on the same fixed-length prompts. A configuration that raises becomes a row with
    its error; ``--out`` is rewritten after each one, so a crash keeps what ran."""
    from llm_call_anatomy.backends.hf.cb import HFContinuousBatchingBackend
    from llm_call_anatomy.contract.adapter import BackendSettings
    from llm_call_anatomy.contract.chat import Renderer
    from llm_call_anatomy.harness import cli, models
    from llm_call_anatomy.workloads.load.prompts import fixed_prompt

    model = models.resolve(args.model, args.random_weights)
    device, dtype = cli.resolve_device(args.device, args.dtype)
    os.environ.pop("LCA_HF_CB", None)
    backend = HFContinuousBatchingBackend(BackendSettings(**cli.backend_settings(args, model, device, dtype)))
    backend.start()
    renderer = Renderer(backend.tokenizer)
    levels = tuple(args.levels)
    need = max(levels) + 2 * max(levels) + 8
    prompts = [fixed_prompt(renderer, [], args.prompt_tokens, r) for r in range(need)]
    rows = []
    for config in args.config or [""]:
        try:
            rows.append(run_config(backend, config, prompts, levels, args.output_tokens))
        except Exception as exc:  # noqa: BLE001 - a configuration that fails is a finding; the next one runs
            rows.append({"config": config or "(default)", "error": f"{type(exc).__name__}: {exc}"})
            print(f"  {config or '(default)'}: {rows[-1]['error']}", flush=True)
        if args.out:
            Path(args.out).write_text(
                json.dumps(
                    {
                        "model": args.model,
                        "prompt_tokens": args.prompt_tokens,
                        "output_tokens": args.output_tokens,
                        "rows": rows,
                    },
                    indent=1,
                )
            )
    backend.close()
    return rows


def show(path: str) -> None:
    """Prints a written file: per configuration its effective settings and restart seconds (or its error),
    then per level the step median, TTFT median, output tokens/s and any request errors."""
    doc = json.loads(Path(path).read_text())
    print(f"{doc['model']}: P={doc['prompt_tokens']}, O={doc['output_tokens']}")
    for row in doc["rows"]:
        if "error" in row:
            print(f"{row['config']:<45} error: {row['error']}")
            continue
        eff = row["effective"]
        head = (
            f"{row['config']:<45} attn={eff.get('attn_implementation')} graphs={eff.get('use_cuda_graph')} "
            f"async={eff.get('use_async_batching')} blocks={eff.get('num_blocks')} start={row['start_s']}s"
        )
        print(head)
        for lv in row["levels"]:
            step = lv["step_ms_median"]
            print(
                f"    C={lv['concurrency']:<4} step {step if step is None else round(step, 2)} ms  "
                f"ttft {lv['ttft_ms_median'] and round(lv['ttft_ms_median'], 1)} ms  "
                f"{lv['output_tok_s']:.0f} tok/s" + (f"  errors: {lv['errors']}" if lv["errors"] else "")
            )


def fastest(path: str, concurrency: int) -> str:
    """The configuration (as written for LCA_HF_CB) with the most output tokens/s at ``concurrency``, errors
    excluded."""
    best: tuple[float, str] | None = None
    for row in json.loads(Path(path).read_text())["rows"]:
        for lv in row.get("levels", []):
            if (
                lv["concurrency"] == concurrency
                and not lv["errors"]
                and (best is None or lv["output_tok_s"] > best[0])
            ):
                best = (lv["output_tok_s"], "" if row["config"] == "(default)" else row["config"])
    if best is None:
        raise SystemExit(f"{path}: no configuration ran at C={concurrency}")
    return best[1]


def main(argv: list[str] | None = None) -> int:
    """The command line: ``--fastest`` or ``--show`` read a written file and exit; otherwise it measures the
    configurations and shows ``--out``."""
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    from llm_call_anatomy.harness.cli_parser import add_model_args

    add_model_args(p)  # the study's model and engine flags (--attn: give attn= in a --config instead)
    p.add_argument("--config", action="append", help="an LCA_HF_CB-style key=value list; repeat for several")
    p.add_argument("--levels", type=int, nargs="+", default=list(LEVELS))
    p.add_argument("--prompt-tokens", type=int, default=512)
    p.add_argument("--output-tokens", type=int, default=32)
    p.add_argument("--out", help="JSON file (rewritten after each configuration)")
    p.add_argument("--show", metavar="FILE", help="print the table of a written file and exit")
    p.add_argument(
        "--fastest",
        metavar="FILE",
        help="print the fastest configuration of a written file (at --at) and exit",
    )
    p.add_argument("--at", type=int, default=32, help="the concurrency --fastest compares at (default 32)")
    args = p.parse_args(argv)
    if args.fastest:
        print(fastest(args.fastest, args.at))
        return 0
    if args.show:
        show(args.show)
        return 0
    measure(args)
    if args.out:
        show(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
