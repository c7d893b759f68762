"""What a plan step asks of a backend, shared by both group runners (``harness.runner``,
``harness.load_runner``).

``request_for`` turns a step into the adapter's :class:`Request`; ``output_fields`` turns what the
adapter returned into record fields, for both runners alike; ``missing_capability`` names the
:class:`Capabilities` flag a backend lacks for a step, given what the group runner itself needs
(``single_requests`` for one request at a time, ``load`` for a level run concurrently). The
console is the child's one progress stream.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from rich.console import Console

from llm_call_anatomy.contract.adapter import Capabilities, RawOutput, Request
from llm_call_anatomy.contract.plan import Plan, Step
from llm_call_anatomy.workloads.kinds import kind

# markup off: workload names, cases and server error messages are user text and may hold "[/...]",
# which Rich would read as a (broken) tag and raise MarkupError mid-run. Colours go through style=.
# soft_wrap: a line is never broken inside a value (piped to a log, Rich would cut it at 80 columns).
console = Console(stderr=True, highlight=False, markup=False, soft_wrap=True)
CAPABILITY_NAMES = {f.name for f in fields(Capabilities)}

# Greedy calls ask every backend for the top-2 log-probs at each step, so the report can tell a
# split between backends at a near-tie (bf16 rounding) from one at a clear margin. Not in the
# sweep and the load (``Kind.timing_only``): they exist to time prefill, decode and throughput, and
# asking for log-probs adds work to each step.
STEP_LOGPROBS = 2


def step_logprobs_for(step: Step) -> int:
    greedy = not step.temperature
    return STEP_LOGPROBS if greedy and not kind(step.kind).timing_only and not step.want_attentions else 0


def request_for(step: Step, plan: Plan) -> Request:
    return Request(
        prompt_ids=plan.prompts[step.prompt],
        max_new_tokens=step.max_new_tokens,
        temperature=step.temperature or 0.0,
        top_p=step.top_p,
        ignore_eos=step.ignore_eos,
        json_schema=step.json_schema if step.grammar else None,
        top_logprobs=step.top_logprobs,
        step_logprobs=step_logprobs_for(step),
        reuse_prefix=step.reuse_prefix,
        seed=step.seed,
        want_attentions=step.want_attentions,
    )


def output_fields(out: RawOutput, prompt: list[int]) -> dict[str, Any]:
    """The record fields of what a backend returned for one request, the same for one request at a time and
    for a load level: cached and computed prompt tokens, whether the engine saw our prompt ids, the output."""
    cached = out.cached_tokens
    return {
        "cached_tokens": cached,
        "computed_tokens": None if cached is None else len(prompt) - cached,
        "prompt_ids_match": None if out.prompt_ids_used is None else out.prompt_ids_used == prompt,
        "output_tokens": out.output_tokens,
        "first_token_id": out.token_ids[0] if out.token_ids else None,
        "output_token_ids": out.token_ids,
        "finish_reason": out.finish_reason,
        "extra": out.extra,
    }


def missing_capability(step: Step, caps: Capabilities, runner_needs: str) -> str | None:
    """The first flag the backend lacks: the group runner's own need, then the step's."""
    for need in (runner_needs, *step.needs):
        if need in CAPABILITY_NAMES and not getattr(caps, need):
            return need
    return None
