"""The levels the trace kind's capacity search adds (``Kind.search_groups``): the trace replayed at a time
scale the search chose, cut from the plan's pool.

The search is the load kind's open loop (``contract.capacity``, run by the harness after the last planned
time scale): its levels are offered rates, and a trace's rate is the window's requests over its scaled span,
so a rate x is the time scale ``k = x / base_rate`` (``base_rate``: the window's requests per second at 1x).
The level sends the window's requests (the pool's first ``requests``) at their offsets ÷ k. An undecided level
run again for twice the time (``extend`` 2) sends the window and the stretch of the trace after it (as many
of the pool's requests as that holds; a window that runs to the trace's end has none after it, and the
level runs again as it was).
"""

from __future__ import annotations

from typing import Any

from llm_call_anatomy.contract.plan import Group, Step
from llm_call_anatomy.workloads.trace.planner import level_groups


def search_groups(
    info: dict[str, Any],
    pool_warm: list[Step],
    pool_timed: list[Step],
    block: str,
    concurrency: int | None,
    rate_rps: float | None,
    searched_for: str,
    extend: int = 1,
) -> list[Group]:
    """The warm-up and timed groups of the time scale the search chose (``rate_rps`` ÷ the base rate)."""
    if concurrency is not None or not rate_rps:
        raise ValueError(
            "a trace's capacity search runs over the time scale (an offered rate), not concurrency"
        )
    k = rate_rps / info["base_rate"]
    offsets = info["offsets_s"] if extend > 1 else info["offsets_s"][: info["requests"]]
    span = info["longer_span_s"] if extend > 1 else info["span_s"]
    facts = info["facts"]
    if extend > 1 and "classes" in facts:  # the longer window's requests, each its class
        facts = {**facts, "classes": info["longer_classes"]}
    extra = {
        "facts": {"trace": facts},
        "searched_for": searched_for,
        "search_ceiling": info["ceiling"],
        "search_ratio": info.get("ratio"),
        **({"extended": extend} if extend > 1 else {}),
    }
    return level_groups(block, pool_warm, pool_timed[: len(offsets)], offsets, k, rate_rps, span, extra)
