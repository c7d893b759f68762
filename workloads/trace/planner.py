"""The trace kind's planner: the window of the trace, its requests as token-id prompts, and one open-loop
level per time scale whose arrivals are the trace's own timestamps.

``plan`` is the kind's ``Kind.plan``. Per time scale k: an unrecorded warm-up group (its own prompts, all at
once; the prefix cache reset before it) and the level's group, whose load settings carry the planned arrival
of every request (``arrivals_s``: its timestamp less the window's start, divided by k) for the load loop's
open loop (``backends.load_loop``), and the trace's shape as the level's facts (``facts.trace``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from contract.chat import Renderer
from contract.plan import Group, Plan, Step
from workloads.trace.prompts import TraceBlocks, reused_prefix_blocks
from workloads.trace.reader import TraceRow
from workloads.trace.spec import MAX_REQUESTS, TraceSpec, scale_label

MODE = "replay"
WARM_KEY = 10**9  # warm-up prompts are drawn with keys no trace line has
MAX_CONTEXT = 10_000_000  # a tokenizer's model_max_length above this says "no limit" (transformers' 1e30)


@dataclass
class Window:
    """The requests a trace workload sends, and what it left out."""

    rows: list[TraceRow]  # sent, in timestamp order
    start_ms: float
    span_s: float  # the window's length, in the trace's seconds
    in_window: int  # the requests of the window (every n-th kept) before the drop rule
    dropped: int = 0
    rule: str = ""
    reused: list[int] = field(default_factory=list)  # per sent request: leading blocks seen before


def context_limit(renderer: Renderer) -> int | None:
    n = getattr(renderer.tokenizer, "model_max_length", None)
    return int(n) if isinstance(n, int | float) and 0 < n < MAX_CONTEXT else None


def window(spec: TraceSpec, context: int | None) -> Window:
    """The window ``[start_s, start_s + duration_s)`` of the trace, every ``every_nth`` request of it, less
    the requests the drop rule leaves out: ``input > max_input_tokens`` where it is set, else ``input +
    output > the model's context`` (its tokenizer's ``model_max_length``)."""
    rows = sorted(
        (
            TraceRow(float(r[0]), int(r[1]), int(r[2]), tuple(r[3]), int(r[4]) if len(r) > 4 else i + 1)
            for i, r in enumerate(spec.rows or [])
        ),
        key=lambda r: (r.timestamp_ms, r.line),
    )
    start = spec.start_s * 1e3
    end = start + spec.duration_s * 1e3 if spec.duration_s is not None else float("inf")
    kept = [r for r in rows if start <= r.timestamp_ms < end][:: spec.every_nth]
    if spec.max_input_tokens is not None:
        rule = f"input > max_input_tokens {spec.max_input_tokens}"
        sent = [r for r in kept if r.input_length <= spec.max_input_tokens]
    elif context is not None:
        rule = f"input + output > the model's context {context}"
        sent = [r for r in kept if r.input_length + r.output_length <= context]
    else:
        rule, sent = "none (no context limit known)", kept
    if len(sent) > MAX_REQUESTS:
        raise ValueError(
            f"trace {spec.name!r}: {len(sent):,} requests in the window (at most {MAX_REQUESTS:,}): "
            "a shorter duration_s or a larger every_nth"
        )
    span = (
        (end - start) / 1e3
        if spec.duration_s is not None
        else ((max((r.timestamp_ms for r in kept), default=start) - start) / 1e3)
    )
    return Window(
        sent,
        start,
        span,
        len(kept),
        len(kept) - len(sent),
        rule,
        reused_prefix_blocks([r.hash_ids for r in sent]),
    )


def shape(spec: TraceSpec, w: Window) -> dict[str, Any]:
    """The trace window's own shape: what the report shows beside what each engine did with it."""
    ins = [r.input_length for r in w.rows]
    outs = [min(r.output_length, spec.output_cap or r.output_length) for r in w.rows]
    blocks = sum(len(r.hash_ids) for r in w.rows)

    def pct(xs: list[int], p: float) -> float | None:
        return float(np.percentile(xs, p)) if xs else None

    return {
        "source": spec.trace.path if spec.trace else "inline rows",
        "block_size": spec.block_size,
        "start_s": spec.start_s,
        "window_s": w.span_s,
        "every_nth": spec.every_nth,
        "in_window": w.in_window,
        "sent": len(w.rows),
        "dropped": w.dropped,
        "drop_rule": w.rule,
        "input_p50": pct(ins, 50),
        "input_p99": pct(ins, 99),
        "output_p50": pct(outs, 50),
        "output_p99": pct(outs, 99),
        "output_cap": spec.output_cap,
        "arrivals_per_min": len(w.rows) / (w.span_s / 60) if w.span_s > 0 else None,
        "blocks": blocks,
        "blocks_seen_before": sum(w.reused),
        "seen_before_share": sum(w.reused) / blocks if blocks else None,
    }


# ``repeats`` is not used: time scales, not repeats
def plan(spec: TraceSpec, renderer: Renderer, out: Plan, repeats: int, start: int = 0) -> None:
    """Per time scale: a warm-up group, then the level's group of the window's requests at their scaled
    timestamps."""
    w = window(spec, context_limit(renderer))
    blocks = TraceBlocks(renderer, spec.block_size)
    facts = shape(spec, w)
    prompts = [out.add_prompt(blocks.prompt(r.hash_ids, r.input_length, r.line)) for r in w.rows]
    warm_prompts = [
        out.add_prompt(blocks.prompt((), min(int(facts["input_p50"] or 16), 512), WARM_KEY + i))
        for i in range(spec.warmup_requests)
    ]
    for k in spec.time_scales:
        case = scale_label(k)
        block = f"{spec.name}/{MODE}/{case}"
        if warm_prompts:
            warm = [_step(spec, case, key, -1 - i, 4, 0) for i, key in enumerate(warm_prompts)]
            out.groups.append(
                Group(
                    block=block,
                    steps=warm,
                    warmup=True,
                    reset_cache=True,
                    load={"concurrency": len(warm), "seed": 0},
                )
            )
        steps = [
            _step(
                spec,
                case,
                key,
                i,
                min(r.output_length, spec.output_cap or r.output_length),
                min(n * spec.block_size, r.input_length),
            )
            for i, (r, key, n) in enumerate(zip(w.rows, prompts, w.reused, strict=True))
        ]
        span = w.span_s / k
        load = {
            "rate_rps": len(steps) / span if span > 0 else float(len(steps) or 1),
            "concurrency": None,
            "arrivals_s": [round((r.timestamp_ms - w.start_ms) / 1e3 / k, 6) for r in w.rows],
            "duration_s": span,
            "arrival": "trace",
            "seed": 0,
            "facts": {"trace": {**facts, "time_scale": k}},
        }
        out.groups.append(Group(block=block, steps=steps, reset_cache=not warm_prompts, load=load))


def _step(spec: TraceSpec, case: str, key: str, rep: int, out_tokens: int, shared: int) -> Step:
    return Step(
        workload=spec.name,
        kind="trace",
        mode=MODE,
        case=case,
        prompt=key,
        max_new_tokens=out_tokens,
        rep=rep,
        temperature=0.0,
        ignore_eos=True,
        reuse_prefix=True,
        needs=["load"],
        shared_prefix_tokens=shared,
    )
