"""The trace kind's planner: the window of the trace, its requests as token-id prompts, and one open-loop
level per time scale whose arrivals are the trace's own timestamps.

``plan`` is the kind's ``Kind.plan``. Per time scale k: an unrecorded warm-up group (its own prompts, all at
once; the prefix cache reset before it) and the level's group, whose load settings carry the planned arrival
of every request (``arrivals_s``: its timestamp less the window's start, divided by k) for the load loop's
open loop (``backends.load_loop``), and the trace's shape as the level's facts (``facts.trace``). The
transcript form's requests are rendered here (``window``), with the model's chat template. With the capacity
search on, the last planned level carries the search's settings (``load.search``: the base rate, the window's
offsets) and a pool of steps (the window and the stretch after it) that ``search.py`` cuts its levels from.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from llm_call_anatomy.contract.chat import Renderer
from llm_call_anatomy.contract.plan import Group, Plan, Step
from llm_call_anatomy.workloads.trace.prompts import TraceBlocks, reused_prefix_blocks, reused_prefix_tokens
from llm_call_anatomy.workloads.trace.reader import TraceRow
from llm_call_anatomy.workloads.trace.spec import MAX_REQUESTS, MAX_SCALE, TraceSpec, scale_label
from llm_call_anatomy.workloads.trace.transcript import TranscriptRequest

MODE = "replay"
WARM_KEY = 10**9  # warm-up prompts are drawn with keys no trace line has
MAX_CONTEXT = 10_000_000  # a tokenizer's model_max_length above this says "no limit" (transformers' 1e30)


@dataclass
class Window:
    """The requests a trace workload sends, and what it left out."""

    rows: list[TraceRow]  # sent, in timestamp order (the transcript form's with their rendered ids)
    start_ms: float
    span_s: float  # the window's length, in the trace's seconds
    in_window: int  # the requests of the window (every n-th kept) before the drop rule
    dropped: int = 0
    rule: str = ""
    reused: list[int] = field(default_factory=list)  # per sent request: leading blocks seen before
    shared: list[int] = field(default_factory=list)  # per sent request: leading tokens seen before
    sessions: int | None = None  # the transcript form's sessions sent


def context_limit(renderer: Renderer) -> int | None:
    n = getattr(renderer.tokenizer, "model_max_length", None)
    return int(n) if isinstance(n, int | float) and 0 < n < MAX_CONTEXT else None


def _candidates(spec: TraceSpec) -> list[Any]:
    """The trace's requests in timestamp order: ``TraceRow`` (rows) or ``TranscriptRequest`` (requests)."""
    if spec.requests is not None:
        return list(spec.requests)  # resolved: in timestamp order
    return sorted(
        (
            TraceRow(
                float(r[0]),
                int(r[1]),
                int(r[2]),
                tuple(r[3]),
                int(r[4]) if len(r) > 4 else i + 1,
                traffic_class=r[5] if len(r) > 5 else None,
            )
            for i, r in enumerate(spec.rows or [])
        ),
        key=lambda r: (r.timestamp_ms, r.line),
    )


def _every_nth_session(requests: list[TranscriptRequest], n: int) -> list[TranscriptRequest]:
    order: dict[str, int] = {}
    for r in requests:
        order.setdefault(r.session_id, len(order))
    return [r for r in requests if order[r.session_id] % n == 0]


def _rendered(r: TranscriptRequest, renderer: Renderer, i: int) -> TraceRow:
    """A transcript request as a row: its messages (its session's history and its own) rendered by the model's
    chat template, its output length (default: the logged response's length in the model's tokens)."""
    ids = renderer.chat_ids(r.chat())
    out = r.output_length or max(1, len(renderer.text_ids(r.response or "")))
    return TraceRow(
        r.timestamp, len(ids), out, (), r.line or i + 1, tuple(ids), r.session_id, r.traffic_class
    )


def window(spec: TraceSpec, context: int | None, renderer: Renderer | None = None, extend: int = 1) -> Window:
    """The window ``[start_s, start_s + duration_s)`` of the trace (``extend``: that many times as long, for a
    search level run again for longer), every ``every_nth`` request of it (the transcript form: every n-th
    session), less the requests the drop rule leaves out: ``input > max_input_tokens`` where it is set, else
    ``input + output > the model's context`` (its tokenizer's ``model_max_length``). The transcript form's
    requests are rendered with ``renderer``."""
    start = spec.start_s * 1e3
    end = start + spec.duration_s * 1e3 * extend if spec.duration_s is not None else float("inf")
    inside = [r for r in _candidates(spec) if start <= _stamp(r) < end]
    transcript = spec.requests is not None
    if transcript:
        if renderer is None:
            raise ValueError("a transcript-form trace is rendered with the model's chat template")
        inside = _every_nth_session(inside, spec.every_nth)
        kept = [_rendered(r, renderer, i) for i, r in enumerate(inside)]
    else:
        kept = inside[:: spec.every_nth]
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
    if transcript:
        reused = [0] * len(sent)
        shared = reused_prefix_tokens([list(r.ids or ()) for r in sent])
    else:
        reused = reused_prefix_blocks([r.hash_ids for r in sent])
        shared = [min(n * spec.block_size, r.input_length) for n, r in zip(reused, sent, strict=True)]
    sessions = len({r.session for r in sent}) if transcript else None
    return Window(sent, start, span, len(kept), len(kept) - len(sent), rule, reused, shared, sessions)


def _stamp(r: Any) -> float:
    return r.timestamp_ms if isinstance(r, TraceRow) else r.timestamp


def shape(spec: TraceSpec, w: Window) -> dict[str, Any]:
    """The trace window's own shape: what the report shows beside what each engine did with it."""
    ins = [r.input_length for r in w.rows]
    outs = [min(r.output_length, spec.output_cap or r.output_length) for r in w.rows]
    blocks = sum(len(r.hash_ids) for r in w.rows)
    transcript = spec.requests is not None

    def pct(xs: list[int], p: float) -> float | None:
        return float(np.percentile(xs, p)) if xs else None

    out = {
        "source": spec.trace.path
        if spec.trace
        else "inline rows"
        if spec.rows is not None
        else "inline requests",
        "form": "transcript" if transcript else "blocks" if blocks else "lengths",
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
        "input_tokens": sum(ins),
        "arrivals_per_min": len(w.rows) / (w.span_s / 60) if w.span_s > 0 else None,
        "blocks": blocks,
        "blocks_seen_before": sum(w.reused),
        "seen_before_share": sum(w.reused) / blocks if blocks else None,
    }
    classes = [r.traffic_class for r in w.rows]
    if any(c is not None for c in classes):  # mixed traffic: each request's class, by its index (rep)
        out.update(
            classes=classes,
            class_counts={c: classes.count(c) for c in dict.fromkeys(classes)},
            class_targets=spec.class_targets,
        )
    if transcript:  # rendered messages, not blocks: the reuse in tokens
        out.update(
            sessions=w.sessions,
            tokens_seen_before=sum(w.shared),
            seen_before_share=sum(w.shared) / sum(ins) if ins else None,
        )
    return out


# ``repeats`` is not used: time scales, not repeats
def plan(spec: TraceSpec, renderer: Renderer, out: Plan, repeats: int, start: int = 0) -> None:
    """Per time scale: a warm-up group, then the level's group of the window's requests at their scaled
    timestamps; with the search on (``search_levels``), the last level carries its settings and a pool
    (the window and the stretch after it) lets the runner cut the levels it adds (``search.py``)."""
    context = context_limit(renderer)
    w = window(spec, context, renderer)
    blocks = TraceBlocks(renderer, spec.block_size)
    facts = shape(spec, w)
    ceiling = spec.search_max_scale or max(MAX_SCALE, *spec.time_scales)
    if spec.search_levels:  # the report judges the bracket in time scales
        facts.update(search_max_scale=ceiling, search_ratio=spec.search_ratio)
    warm_prompts = [
        out.add_prompt(blocks.prompt((), min(int(facts["input_p50"] or 16), 512), WARM_KEY + i))
        for i in range(spec.warmup_requests)
    ]
    steps = _steps(spec, blocks, out, w, "pool")
    warm = [_step(spec, "pool", key, -1 - i, 4, 0) for i, key in enumerate(warm_prompts)]
    offsets = [round((r.timestamp_ms - w.start_ms) / 1e3, 6) for r in w.rows]
    base_rate = len(steps) / w.span_s if w.span_s > 0 else None
    for k in spec.time_scales:
        rate = base_rate * k if base_rate else float(len(steps) or 1)
        out.groups += level_groups(
            f"{spec.name}/{MODE}", warm, steps, offsets, k, rate, w.span_s, {"facts": {"trace": facts}}
        )
    if not spec.search_levels or not base_rate or not steps:
        return
    pool = f"{spec.name}/{MODE}/search-pool"
    longer = window(spec, context, renderer, extend=2)  # an undecided level runs again over twice the time
    out.groups[-1].load = {
        **out.groups[-1].load,
        "search": {
            "loop": "open",
            "levels": spec.search_levels,
            "pool": pool,
            "ceiling": base_rate * ceiling,
            "ratio": spec.search_ratio,
            "targets": spec.search_targets,
            "base_rate": base_rate,
            "requests": len(steps),
            "span_s": w.span_s,
            "offsets_s": [round((r.timestamp_ms - w.start_ms) / 1e3, 6) for r in longer.rows],
            "longer_span_s": longer.span_s,
            "longer_classes": [r.traffic_class for r in longer.rows],
            "facts": facts,
        },
    }
    if warm:
        out.groups.append(Group(block=pool, steps=warm, warmup=True, load={"pool": "warmup"}))
    timed = _steps(spec, blocks, out, longer, "pool")
    out.groups.append(Group(block=pool, steps=timed, warmup=True, load={"pool": "timed"}))


def _steps(spec: TraceSpec, blocks: TraceBlocks, out: Plan, w: Window, case: str) -> list[Step]:
    """The window's requests as steps: each its prompt (its rendered ids, or its hash ids' blocks), its output
    length (capped by ``output_cap``) and what a prefix cache can reuse for it."""
    return [
        _step(
            spec,
            case,
            out.add_prompt(
                list(r.ids) if r.ids is not None else blocks.prompt(r.hash_ids, r.input_length, r.line)
            ),
            i,
            min(r.output_length, spec.output_cap or r.output_length),
            shared,
        )
        for i, (r, shared) in enumerate(zip(w.rows, w.shared, strict=True))
    ]


def level_groups(
    block: str,
    warm: list[Step],
    timed: list[Step],
    offsets_s: list[float],
    k: float,
    rate_rps: float,
    span_s: float,
    extra: dict[str, Any],
) -> list[Group]:
    """One time scale's groups: the warm-up (the prefix cache reset before it, all at once) and the level,
    each request at its offset in the window ÷ ``k``; ``extra``: the level's load settings beside (its
    ``facts``, the search's)."""
    case = scale_label(k)
    facts = extra.get("facts") or {}
    load = {
        **extra,
        "rate_rps": rate_rps,
        "concurrency": None,
        "arrivals_s": [round(t / k, 6) for t in offsets_s],
        "duration_s": span_s / k,
        "arrival": "trace",
        "seed": 0,
        "facts": {**facts, "trace": {**(facts.get("trace") or {}), "time_scale": k}},
    }
    out = []
    if warm:
        steps = [replace(s, case=case) for s in warm]
        out.append(
            Group(
                block=f"{block}/{case}",
                steps=steps,
                warmup=True,
                reset_cache=True,
                load={"concurrency": len(steps), "seed": 0},
            )
        )
    steps = [replace(s, case=case) for s in timed]
    return [*out, Group(block=f"{block}/{case}", steps=steps, reset_cache=not warm, load=load)]


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
