"""Every kind's lint over a run's workloads, before anything runs (``Kind.lint``).

``python compare.py --lint-only --workload-file my.yaml`` runs only this (the tokenizer only) and exits
with the worst kind's code (0 clean, 1 a mistake the workload can mend); a run prints the lines of a
lint that found one. Today the conversation kind has one (``workloads/conversation/lint.py``: does each
turn's prompt extend the previous one?).

    found = check_all(specs, renderer)     # workload name -> findings, for the kinds that lint
    lines, code = report(specs, found)
"""

from __future__ import annotations

from typing import Any

from llm_call_anatomy.contract.chat import Renderer
from llm_call_anatomy.workloads.kinds import kind, names


def check_all(specs: list[Any], renderer: Renderer) -> dict[str, list[Any]]:
    """Each workload's findings, for the workloads whose kind has a lint."""
    return {s.name: lint.check(s, renderer) for s in specs if (lint := kind(s.kind).lint) is not None}


def report(specs: list[Any], found: dict[str, list[Any]]) -> tuple[list[str], int]:
    """The lines of every kind that lints, in the kinds' order, and the worst exit code."""
    lines: list[str] = []
    code = 0
    for name in names():
        lint = kind(name).lint
        if lint is None:
            continue
        own = [s for s in specs if s.kind == name]
        part, part_code = lint.report(own, {s.name: found[s.name] for s in own if s.name in found})
        lines += part
        code = max(code, part_code)
    return lines, code
