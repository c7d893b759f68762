"""What rendering a prompt costs: the chat template and the tokenizer, timed once per prompt at plan time.

The harness renders every prompt ahead of the calls (``contract.chat.Renderer``, in the parent) and hands
the engines token ids, so the template and the tokenizer never run inside a call's timed region. Their cost
is still part of what one call costs a client that renders at call time (the reference's TTFT excludes it),
so the parent times it here, once per prompt of the single-request steps, with the run's own tokenizer:

- ``template_ms``: the prompt's messages rendered to text by the chat template (prompts rendered from
  messages only; None for a prompt built from token ids, such as the sweep's filler),
- ``tokenize_ms``: the prompt's text tokenized (a prompt built from ids is decoded first, untimed, and
  its text tokenized again: the cost of tokenizing a text of that length).

Each is the median of :data:`REPEATS` timed calls after one untimed call (the tokenizer's caches warm, as
in a server that has served before). Load levels' prompts are not timed (thousands of prompts; their
records carry None). The figures go to ``RUN_DIR/prompt_timings.json``, not plan.json (whose hash a
``--resume`` compares: a timing differs from run to run), and the runner copies them onto each call's
record (``template_ms``, ``tokenize_ms``; docs/explanation/anatomy.md).
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from llm_call_anatomy.contract.chat import Renderer
from llm_call_anatomy.contract.files import atomic_write_text
from llm_call_anatomy.contract.plan import Plan

FILE = "prompt_timings.json"  # RUN_DIR/: prompt key -> {"template_ms", "tokenize_ms"}
REPEATS = 3


def timed_ms(call: Callable[[], Any], repeats: int = REPEATS) -> float:
    """The median wall time of ``call`` in ms over ``repeats`` runs, after one untimed run."""
    call()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def single_request_prompts(plan: Plan) -> list[str]:
    """The prompt keys of the plan's timed single-request steps (not warm-ups, not load levels), in order."""
    keys = (s.prompt for g in plan.groups if not g.warmup and not g.load for s in g.steps)
    return list(dict.fromkeys(keys))


def measure(plan: Plan, renderer: Renderer) -> dict[str, dict[str, float | None]]:
    """``template_ms`` and ``tokenize_ms`` of each single-request prompt of ``plan`` (see the module)."""
    out: dict[str, dict[str, float | None]] = {}
    for key in single_request_prompts(plan):
        chat = renderer.chats.get(key)
        template_ms = None
        if chat is not None:
            messages, tools = chat["messages"], chat.get("tools")
            text = renderer.chat_text(messages, tools)
            template_ms = timed_ms(lambda m=messages, t=tools: renderer.chat_text(m, t))
        else:
            text = renderer.tokenizer.decode(plan.prompts[key])
        tokenize_ms = timed_ms(lambda t=text: renderer.text_ids(t))
        out[key] = {"template_ms": template_ms, "tokenize_ms": tokenize_ms}
    return out


def write(run_dir: Path, timings: dict[str, dict[str, float | None]]) -> None:
    atomic_write_text(run_dir / FILE, json.dumps(timings))


def read(run_dir: Path) -> dict[str, dict[str, float | None]]:
    """The run's prompt timings; {} where the run has none (an older run, a plan with load levels only)."""
    try:
        data = json.loads((run_dir / FILE).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def fields_of(timings: dict[str, dict[str, float | None]], prompt: str) -> dict[str, float | None]:
    """The record fields of one call's prompt: ``template_ms`` and ``tokenize_ms`` (None: not timed)."""
    found = timings.get(prompt) or {}
    return {"template_ms": found.get("template_ms"), "tokenize_ms": found.get("tokenize_ms")}
