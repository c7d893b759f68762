"""Benchmark 5: the harness under load against the engine's own batched call — same process, same prompts.

One backend is started through the harness's adapter (the engine configured exactly as in the
study), then both paths run the same fixed-shape requests (``workloads.load``: P prompt tokens, the
first S shared, O greedy output tokens with EOS ignored), in alternating order per repeat so drift
does not land on one side, the prefix cache reset before each side so neither inherits the other's:

- harness: ``backends.load_loop.run_level`` at concurrency C (a closed loop, the study's load path);
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

from backends.base import Backend, Request

TARGET = 0.9  # harness output tokens/s over the engine's


# --- measuring ----------------------------------------------------------------------------------
def harness_side(
    backend: Backend, prompts: list[list[int]], request: Request, concurrency: int
) -> dict[str, Any]:
    """The harness's side: ``prompts`` as one-request sessions through the study's closed load loop at
    ``concurrency``, after a prefix-cache reset. Returns the level's wall seconds, output tokens, tokens/s and
    how many requests failed (with the first error)."""
    from backends.load_loop import LoadSettings, run_level

    sessions = [
        [Request(prompt_ids=ids, max_new_tokens=request.max_new_tokens, ignore_eos=True)] for ids in prompts
    ]
    backend.reset_cache()
    outcomes, facts = run_level(backend, sessions, LoadSettings(concurrency=concurrency))
    done = [o for (o,) in outcomes]
    errors = [o.error for o in done if o.error]
    tokens = sum(len(o.output.token_ids) for o in done if o.output is not None)
    return {
        "wall_s": facts["wall_s"],
        "output_tokens": tokens,
        "tokens_per_s": tokens / facts["wall_s"],
        "errors": len(errors),
        **({"first_error": errors[0]} if errors else {}),
    }


def engine_side(
    backend: Backend, prompts: list[list[int]], request: Request, concurrency: int
) -> dict[str, Any]:
    backend.reset_cache()
    tokens = 0
    started = time.perf_counter()
    for i in range(0, len(prompts), concurrency):
        tokens += sum(backend.engine_batch(prompts[i : i + concurrency], request))
    wall_s = time.perf_counter() - started
    return {"wall_s": wall_s, "output_tokens": tokens, "tokens_per_s": tokens / wall_s, "errors": 0}


def measure(
    backend: Backend, prompts: list[list[int]], warmup: list[list[int]], args: argparse.Namespace
) -> dict[str, list[dict[str, Any]]]:
    """Both sides once on ``warmup`` (unrecorded), then ``repeats`` alternating pairs on ``prompts``."""
    request = Request(prompt_ids=[], max_new_tokens=args.output_tokens, ignore_eos=True)
    sides = {
        "harness": lambda ps: harness_side(backend, ps, request, args.concurrency),
        "engine": lambda ps: engine_side(backend, ps, request, args.concurrency),
    }
    for side in sides.values():
        side(warmup)
    out: dict[str, list[dict[str, Any]]] = {"harness": [], "engine": []}
    for rep in range(args.repeats):
        order = ["harness", "engine"] if rep % 2 == 0 else ["engine", "harness"]
        for position, name in enumerate(order):
            row = {"repeat": rep, "ran": "first" if position == 0 else "second", **sides[name](prompts)}
            out[name].append(row)
            print(
                f"  repeat {rep + 1}/{args.repeats} {name}: {row['output_tokens']} tokens in "
                f"{row['wall_s']:.2f} s = {row['tokens_per_s']:,.0f} tok/s",
                flush=True,
            )
    return out


# --- the summary and table (reports.stats needs pandas: summarised where it is installed) ---------
def summarise(doc: dict[str, Any]) -> dict[str, Any]:
    """Median tokens/s of each side over the repeats, their ratio and the spread of the per-repeat ratios. The
    verdict: yes when the ratio of medians reaches ``TARGET``; ``within noise`` when it does not but some
    repeat's ratio does; otherwise no."""
    from reports.stats import spread

    h, e = (spread(r["tokens_per_s"] for r in doc[side]) for side in ("harness", "engine"))
    pairs = [
        a["tokens_per_s"] / b["tokens_per_s"] for a, b in zip(doc["harness"], doc["engine"], strict=True)
    ]
    ratio, per_repeat = h.median / e.median, spread(pairs)
    if ratio >= TARGET:
        verdict = "yes"
    elif per_repeat.hi is not None and per_repeat.hi >= TARGET:
        verdict = "within noise"  # some repeat reached the target: not resolved at this many repeats
    else:
        verdict = "no"
    fields = ("median", "q1", "q3", "lo", "hi", "n")
    return {
        "harness_tokens_per_s": {k: getattr(h, k) for k in fields},
        "engine_tokens_per_s": {k: getattr(e, k) for k in fields},
        "ratio": ratio,
        "ratio_per_repeat": {k: getattr(per_repeat, k) for k in fields},
        "target": TARGET,
        "meets_target": verdict,
    }


def table(docs: list[dict[str, Any]]) -> str:
    """A Markdown row per result file: the shape (C, N, P, S, O), each side's median tokens/s with its IQR,
    their ratio and the verdict; a file without a ``summary`` (written where pandas was missing) is summarised
    here."""
    lines = [
        "| backend | C | N | P (S) | O | harness tok/s (IQR) | engine tok/s (IQR) | harness / engine "
        f"| >= {TARGET:.0%} |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for d in docs:
        if "skipped" in d:
            lines.append(f"| {d['backend']} | | | | | skipped: {d['skipped']} | | | |")
            continue
        s = d.get("summary") or summarise(d)
        h, e = s["harness_tokens_per_s"], s["engine_tokens_per_s"]
        lines.append(
            f"| {d['backend']} | {d['concurrency']} | {d['requests']} | {d['prompt_tokens']} "
            f"({d['shared_prefix_tokens']}) | {d['output_tokens']} | {h['median']:,.0f} ({h['q1']:,.0f}–"
            f"{h['q3']:,.0f}) | {e['median']:,.0f} ({e['q1']:,.0f}–{e['q3']:,.0f}) | {s['ratio']:.1%} "
            f"| {s['meets_target']} |"
        )
    return "\n".join(lines)


# --- the command line --------------------------------------------------------------------------
def parser() -> argparse.ArgumentParser:
    """This benchmark's options: the study's model and engine flags (``add_model_args``) plus the load shape,
    repeats, ``--out`` and ``--table``. ``child_hook`` parses ``LCA_CEILING_ARGS`` with it too."""
    from harness.cli_parser import add_model_args

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


def check(args: argparse.Namespace) -> str | None:
    """One line about the first bad number, or None."""
    import backends

    if args.backend not in backends.REGISTRY:
        return f"--backend {args.backend}: no such backend (choose from {', '.join(backends.REGISTRY)})"
    for flag, value, least in (
        ("--concurrency", args.concurrency, 1),
        ("--requests", args.requests, 1),
        ("--prompt-tokens", args.prompt_tokens, 2),
        ("--shared-prefix-tokens", args.shared_prefix_tokens, 0),
        ("--output-tokens", args.output_tokens, 1),
        ("--repeats", args.repeats, 1),
        ("--max-model-len", args.max_model_len, 2),
    ):
        if value is not None and value < least:
            return f"{flag} must be at least {least} (got {value})"
    if args.shared_prefix_tokens >= args.prompt_tokens:
        return (
            f"--shared-prefix-tokens {args.shared_prefix_tokens} leaves nothing of a "
            f"{args.prompt_tokens}-token prompt to tell requests apart"
        )
    return None


def adapter_class(name: str) -> type[Backend]:
    """The backend's adapter class (its ``batch_call`` says whether it has a batched engine call);
    ``UsageError`` where it cannot be imported here."""
    import backends
    from backends.base import BackendUnavailable
    from harness.cli import UsageError

    try:
        return backends.resolve(name)
    except BackendUnavailable as exc:
        raise UsageError(f"--backend {name}: {exc}") from exc


def run(args: argparse.Namespace, adapter: type[Backend]) -> tuple[dict[str, Any], int]:
    """Start the backend, measure; (the results, the exit code). Raises ``UsageError`` (one line) for bad
    input."""
    from backends.base import BackendSettings, BackendUnavailable
    from harness import cli, limits, models, parallel_args
    from harness.chat import Renderer

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


def header(backend: Backend, args: argparse.Namespace, n: int) -> dict[str, Any]:
    """What was measured, on what: the fields every result file starts with (standalone or inside a study)."""
    s = backend.settings
    return {
        "benchmark": "load_ceiling",
        "backend": backend.name,
        "model": s.model_label,
        "device": s.device,
        "dtype": s.dtype,
        "concurrency": args.concurrency,
        "requests": n,
        "prompt_tokens": args.prompt_tokens,
        "shared_prefix_tokens": args.shared_prefix_tokens,
        "output_tokens": args.output_tokens,
        "repeats": args.repeats,
        "engine_call": f"{backend.batch_call}, {args.concurrency} prompts per call",
    }


def fixed_prompts(renderer: Any, args: argparse.Namespace) -> tuple[list[list[int]], list[list[int]]]:
    """(the N measured prompts, C warm-up prompts): ``workloads.load``'s fixed shape, P tokens, the first S
    shared."""
    from workloads.load.prompts import fixed_prompt, shared_prefix_ids

    prefix, n = shared_prefix_ids(renderer, args.shared_prefix_tokens), args.requests or args.concurrency
    prompts = [fixed_prompt(renderer, prefix, args.prompt_tokens, r) for r in range(n)]
    return prompts, [
        fixed_prompt(renderer, prefix, args.prompt_tokens, 10**6 + r) for r in range(min(n, args.concurrency))
    ]


def problems(doc: dict[str, Any], expected: int) -> list[str]:
    return [
        f"{side} repeat {r['repeat']}: {r['output_tokens']} of {expected} output tokens"
        + (f" ({r['errors']} failed: {r['first_error']})" if r["errors"] else "")
        for side in ("harness", "engine")
        for r in doc[side]
        if r["output_tokens"] != expected
    ]


HOOK_ARGS_ENV, HOOK_OUT_ENV = "LCA_CEILING_ARGS", "LCA_CEILING_DIR"


def child_hook(backend: Backend, plan: Any) -> None:  # noqa: ARG001 - the prompts are this benchmark's own
    """Benchmark 5 inside a study (``LCA_CHILD_HOOK=benchmarks.load_ceiling:child_hook``), on the study's
    started engine: no second engine start. ``LCA_CEILING_ARGS`` holds this module's options (e.g.
    ``--concurrency 128``); writes ``$LCA_CEILING_DIR/ceiling-<backend>.json`` (unset: the run directory)."""
    import shlex

    from harness import cli
    from harness.chat import Renderer

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
    error = check(args)
    code = 0
    if error is None:
        from harness.cli import UsageError
        from harness.models import ModelError

        try:
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
            error = str(exc)
    if error is not None:
        print(f"load_ceiling: error: {error}", file=sys.stderr)
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
