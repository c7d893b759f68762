"""Benchmark 5: the harness under load against the engine's own batched call — same process, same prompts.

One backend is started through the harness's adapter (the engine configured exactly as in the
study), then both paths run the same fixed-shape requests (``workloads.load.kind``: P prompt tokens, the
first S shared, O greedy output tokens with EOS ignored), in alternating order per repeat so drift
does not land on one side, the prefix cache reset before each side so neither inherits the other's:

- harness: ``backends.load_level.run_level`` at concurrency C (a closed loop, the study's load path);
- engine: its own batched call on the same prompt ids with the adapter's own sampling parameters
  (the adapter's ``engine_batch``, ``backends.base.Backend``) —
  vLLM ``LLM.generate([TokensPrompt, ...])``, SGLang ``Engine.generate(input_ids=[...])``, hf-cb
  ``generate_batch``'s loop on the backend's running manager — given C prompts per call (one call
  when N <= C), so that both sides hold at most C requests in flight.

Output tokens/s = output tokens / wall time of the side (the level's ``wall_s``; the engine call
timed around it). Target: the harness reaches >= 90 % of the engine's (median over repeats).

N defaults to C (a study level runs 4 x C): both sides then start the same C requests and refill
none, so the ratio is the harness's own cost (an asyncio stepping task, a token stamp per request
per step). With N > C the harness's closed loop refills while the engine's calls run in waves that
wait for their slowest, which favours the harness; and 4 x C at P = 1024 on the 8B shape would take
~15 s per side and repeat on an H200, past the few minutes a device call should take.

    python -m benchmarks.load_ceiling --backend vllm --model qwen3-8b-shape --random-weights \\
        --out ceiling.json
    python -m benchmarks.load_ceiling --table ceiling-vllm.json ceiling-sglang.json   # the table again

This file is the command line and the study hook; the two sides, the summary and the table are
``benchmarks/load_ceiling_sides.py``.

Exit 0: measured (or skipped: a backend without a batched engine call, e.g. ``hf``); 1: a side did not
produce N x O output tokens (the JSON is still written); 2: bad input or the backend is not installed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.load_ceiling_sides import fixed_prompts, header, measure, problems, summarise, table
from llm_call_anatomy.backends.base import Backend


# --- the command line --------------------------------------------------------------------------
def parser() -> argparse.ArgumentParser:
    """This benchmark's options: the study's model and engine flags (``add_model_args``) plus the load shape,
    repeats, ``--out`` and ``--table``. ``child_hook`` parses ``LCA_CEILING_ARGS`` with it too."""
    from llm_call_anatomy.harness.cli_parser import add_model_args

    p = argparse.ArgumentParser(
        prog="python -m benchmarks.load_ceiling",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--backend",
        default="vllm",
        help="vllm, sglang or hf-cb (default: vllm); hf, hf-graphs and the servers: a skipped row",
    )
    add_model_args(p)
    p.add_argument(
        "--concurrency", type=int, default=128, metavar="C", help="requests in flight (default: 128)"
    )
    p.add_argument("--requests", type=int, default=None, metavar="N", help="per side and repeat (default: C)")
    p.add_argument(
        "--prompt-tokens", type=int, default=1024, metavar="P", help="tokens per prompt (default: 1024)"
    )
    p.add_argument(
        "--shared-prefix-tokens", type=int, default=0, metavar="S", help="of them shared (default: 0)"
    )
    p.add_argument(
        "--output-tokens", type=int, default=64, metavar="O", help="greedy, EOS ignored (default: 64)"
    )
    p.add_argument("--repeats", type=int, default=3, help="pairs of runs, order alternating (default: 3)")
    p.add_argument("--out", type=Path, default=None, metavar="FILE.json", help="write the results here")
    p.add_argument(
        "--table",
        type=Path,
        nargs="+",
        default=None,
        metavar="FILE.json",
        help="only print the table of results written before (no engine)",
    )
    return p


def check(args: argparse.Namespace) -> None:
    """``UsageError`` (one line) about the first bad name or number: the study's bounds check
    (``harness.cli_checks.check_at_least``)."""
    from llm_call_anatomy import backends
    from llm_call_anatomy.harness.cli_checks import UsageError, check_at_least

    if args.backend not in backends.REGISTRY:
        raise UsageError(
            f"--backend {args.backend}: no such backend (choose from {', '.join(backends.REGISTRY)})"
        )
    check_at_least(
        ("--concurrency", args.concurrency, 1),
        ("--requests", args.requests, 1),
        ("--prompt-tokens", args.prompt_tokens, 2),
        ("--shared-prefix-tokens", args.shared_prefix_tokens, 0),
        ("--output-tokens", args.output_tokens, 1),
        ("--repeats", args.repeats, 1),
        ("--max-model-len", args.max_model_len, 2),
    )
    if args.shared_prefix_tokens >= args.prompt_tokens:
        raise UsageError(
            f"--shared-prefix-tokens {args.shared_prefix_tokens} leaves nothing of a "
            f"{args.prompt_tokens}-token prompt to tell requests apart"
        )


def adapter_class(name: str) -> type[Backend]:
    """The backend's adapter class (its ``batch_call`` says whether it has a batched engine call);
    ``UsageError`` where it cannot be imported here."""
    from llm_call_anatomy import backends
    from llm_call_anatomy.backends.base import BackendUnavailable
    from llm_call_anatomy.harness.cli import UsageError

    try:
        return backends.resolve(name)
    except BackendUnavailable as exc:
        raise UsageError(f"--backend {name}: {exc}") from exc


def run(args: argparse.Namespace, adapter: type[Backend]) -> tuple[dict[str, Any], int]:
    """Start the backend, measure; (the results, the exit code). Raises ``UsageError`` (one line) for bad
    input."""
    from llm_call_anatomy.backends.base import BackendUnavailable
    from llm_call_anatomy.contract.adapter import BackendSettings
    from llm_call_anatomy.contract.chat import Renderer
    from llm_call_anatomy.harness import cli, limits, models, parallel_args

    model = models.resolve(args.model, args.random_weights)
    device, dtype = cli.resolve_device(args.device, args.dtype)
    parallel_args.check_parallel(
        args.dp, args.tp, args.router, [args.backend], device
    )  # --dp / --router as the study's
    try:  # constructing checks that the engine can be imported here (SGLang); start() does for vLLM
        backend = adapter(BackendSettings(**cli.backend_settings(args, model, device, dtype)))
    except BackendUnavailable as exc:
        raise cli.UsageError(f"--backend {args.backend}: {exc}") from exc
    positions = limits.model_positions(model.path)
    limit = min(args.max_model_len, positions or args.max_model_len)
    if args.prompt_tokens + args.output_tokens > limit:
        raise cli.UsageError(
            f"{args.prompt_tokens} prompt + {args.output_tokens} output tokens exceed the context "
            f"limit of {limit} (--max-model-len {args.max_model_len}; the model has {positions} positions)"
        )
    renderer = Renderer(cli.load_tokenizer(args.model, model.path))
    prompts, warmup = fixed_prompts(renderer, args)
    n = len(prompts)
    started = time.perf_counter()
    try:
        backend.start()
    except BackendUnavailable as exc:
        raise cli.UsageError(f"--backend {args.backend}: {exc}") from exc
    doc = {**header(backend, args, n), "startup_s": time.perf_counter() - started}
    try:
        doc["backend_version"] = backend.version()
        print(
            f"{args.backend} {doc['backend_version']}: started in {doc['startup_s']:.1f} s; "
            f"C={args.concurrency} N={n} P={args.prompt_tokens} S={args.shared_prefix_tokens} "
            f"O={args.output_tokens}",
            flush=True,
        )
        doc.update(measure(backend, prompts, warmup, args))
        doc["engine_config"] = backend.environment()
    finally:
        backend.close()
    doc["problems"] = problems(doc, n * args.output_tokens)
    return doc, 1 if doc["problems"] else 0


HOOK_ARGS_ENV, HOOK_OUT_ENV = "LCA_CEILING_ARGS", "LCA_CEILING_DIR"


def child_hook(backend: Backend, plan: Any) -> None:  # the prompts are this benchmark's own
    """Benchmark 5 inside a study (``LCA_CHILD_HOOK=benchmarks.load_ceiling:child_hook``), on the study's
    started engine: no second engine start. ``LCA_CEILING_ARGS`` holds this module's options (e.g.
    ``--concurrency 128``); writes ``$LCA_CEILING_DIR/ceiling-<backend>.json`` (unset: the run directory)."""
    import shlex

    from llm_call_anatomy.contract.chat import Renderer
    from llm_call_anatomy.harness import cli

    if backend.batch_call is None:
        return
    s = backend.settings
    args = parser().parse_args([*shlex.split(os.environ.get(HOOK_ARGS_ENV, "")), "--backend", backend.name])
    renderer = Renderer(cli.load_tokenizer(s.model_label, s.model_path))
    prompts, warmup = fixed_prompts(renderer, args)
    doc = {**header(backend, args, len(prompts)), "backend_version": backend.version(), "in_study": True}
    doc.update(measure(backend, prompts, warmup, args))
    doc["problems"] = problems(doc, len(prompts) * args.output_tokens)
    out = Path(os.environ.get(HOOK_OUT_ENV) or s.run_dir or ".") / f"ceiling-{backend.name}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1, default=str))
    print(f"{backend.name}: load ceiling written to {out}", flush=True)


def main(argv: list[str] | None = None) -> int:
    """The command line: ``--table`` only prints; otherwise checks the flags, measures (a backend without a
    batched engine call: a skipped row), writes ``--out`` and prints the table. Exit 2: bad input or backend
    not importable; 1: a side fell short of N x O tokens."""
    args = parser().parse_args(argv)
    if args.table:
        print(table([json.loads(f.read_text()) for f in args.table]))
        return 0
    from llm_call_anatomy.harness.cli import UsageError
    from llm_call_anatomy.harness.models import ModelError

    code = 0
    try:
        check(args)
        adapter = adapter_class(args.backend)
        if adapter.batch_call is None:
            doc: dict[str, Any] = {
                "benchmark": "load_ceiling",
                "backend": args.backend,
                "skipped": adapter.no_batch_call,
            }
        else:
            doc, code = run(args, adapter)
    except (UsageError, ModelError) as exc:
        print(f"load_ceiling: error: {exc}", file=sys.stderr)
        return 2
    try:
        doc["summary"] = summarise(doc) if "skipped" not in doc else None
    except ImportError as exc:  # no pandas in this environment: the raw figures are kept, summarise elsewhere
        print(f"no summary here ({exc}): python -m benchmarks.load_ceiling --table {args.out or 'FILE.json'}")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(doc, indent=1, default=str))
    if doc.get("summary") is not None or "skipped" in doc:
        print(table([doc]))
    for line in doc.get("problems", []):
        print(f"load_ceiling: {line}", file=sys.stderr)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
