"""Benchmark 5's measuring (:mod:`benchmarks.load_ceiling` is its command line and study hook): the two sides
on the same fixed-shape prompts, in alternating order per repeat, and the verdict.

- :func:`harness_side`: the prompts through the study's closed load loop (``backends.load_level.run_level``)
  at concurrency C;
- :func:`engine_side`: the adapter's own batched engine call (``engine_batch``), C prompts per call;
- :func:`measure`: both once to warm up, then the repeats, the order alternating;
- :func:`summarise` and :func:`table`: each side's median tokens/s, their ratio against ``TARGET`` and
  the Markdown row per result file (``reports.stats`` needs pandas: imported where it is called);
- :func:`header`, :func:`fixed_prompts`, :func:`problems`: what every result file starts with, the prompts
  (``workloads.load.kind``'s fixed shape) and the sides that fell short of N x O output tokens.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from llm_call_anatomy.backends.base import Backend
from llm_call_anatomy.contract.adapter import Request

TARGET = 0.9  # harness output tokens/s over the engine's


# --- measuring ----------------------------------------------------------------------------------
def harness_side(
    backend: Backend, prompts: list[list[int]], request: Request, concurrency: int
) -> dict[str, Any]:
    """The harness's side: ``prompts`` as one-request sessions through the study's closed load loop at
    ``concurrency``, after a prefix-cache reset. Returns the level's wall seconds, output tokens, tokens/s and
    how many requests failed (with the first error)."""
    from llm_call_anatomy.backends.load_level import run_level
    from llm_call_anatomy.backends.load_loop import LoadSettings

    sessions = [
        [Request(prompt_ids=ids, max_new_tokens=request.max_new_tokens, ignore_eos=True)] for ids in prompts
    ]
    backend.reset_cache()
    outcomes, facts = run_level(backend, sessions, LoadSettings(concurrency=concurrency))
    done = [o for (o,) in outcomes]
    errors = [o.error for o in done if o.error]
    tokens = sum(len(o.output.token_ids) for o in done if o.output is not None)
    return {
        "wall_s": facts.wall_s,
        "output_tokens": tokens,
        "tokens_per_s": tokens / facts.wall_s,
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
    from llm_call_anatomy.reports.stats import spread

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
    """(the N measured prompts, C warm-up prompts): the load kind's fixed shape, P tokens, the first
    S shared."""
    from llm_call_anatomy.workloads.load.prompts import fixed_prompt, shared_prefix_ids

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
