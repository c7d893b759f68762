"""Claims checked against the runs: a statement, the figure its source gives, ours, and a verdict.

This module is the machinery only; the claims themselves live in modules listed in
:data:`MODULES` (the seed article's in :mod:`reports.analysis.seed_claims`). To add one, write a
function ``(report) -> Claim | None`` in one of them and decorate it with :func:`claim`; return
``None`` when the runs have nothing to say about it (it is then left out), or a
:class:`~reports.model.Claim` built with one of :func:`holds`, :func:`does_not_hold`, :func:`setup_specific`,
:func:`not_measurable` or :func:`not_decided`, which are the only verdicts the page knows. A claim
never hard-codes our figure: ``here`` is computed from the report it is given. A claim with a
numeric test decides it with an interval against a stated band (:mod:`reports.intervals`), never
by eye; a claim about the model's answers reads "not measurable: random weights" on random weights.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path

from llm_call_anatomy.reports.kinds import REGISTRY
from llm_call_anatomy.reports.model import (
    DOES_NOT_HOLD,
    HOLDS,
    NOT_DECIDED,
    NOT_MEASURABLE,
    SETUP_SPECIFIC,
    Claim,
    Report,
    Verdict,
)

# The seed's claims live in the kinds' rooms, a module each (``workloads/<kind>/report/claims*.py``), each
# with an ``ORDER`` (the article's order: the sweep, the conversation, JSON, templates, the token figures):
# :func:`claim_modules` finds them and imports them in that order; each registers its checks with @claim.


def claim_modules() -> list[str]:
    """Every kind room's claims modules (``report/claims.py``, ``report/claims_*.py``), in their ``ORDER``."""
    found = []
    for target in REGISTRY.values():
        package = importlib.import_module(target.partition(":")[0])
        for directory in getattr(package, "__path__", []):
            for path in sorted(Path(directory).glob("claims*.py")):
                name = f"{package.__name__}.{path.stem}"
                found.append((getattr(importlib.import_module(name), "ORDER", 100), name))
    return [name for _, name in sorted(found)]


_CHECKS: list[tuple[str, Callable[[Report], Claim | None]]] = []


def holds(reason: str) -> Verdict:
    return Verdict(HOLDS, reason)


def does_not_hold(reason: str) -> Verdict:
    return Verdict(DOES_NOT_HOLD, reason)


def setup_specific(reason: str) -> Verdict:
    return Verdict(SETUP_SPECIFIC, reason)


def not_measurable(reason: str) -> Verdict:
    return Verdict(NOT_MEASURABLE, reason)


def not_decided(reason: str) -> Verdict:
    return Verdict(NOT_DECIDED, reason)


def claim(check: Callable[[Report], Claim | None]) -> Callable[[Report], Claim | None]:
    """Register a check (in definition order); the page lists its claim if it returns one."""
    name = f"{check.__module__}.{check.__qualname__}"
    if all(name != n for n, _ in _CHECKS):
        _CHECKS.append((name, check))
    return check


def check_all(report: Report) -> list[Claim]:
    """Every registered claim this report can speak to, in the order of its module and definition."""
    modules = claim_modules()
    order = {m: i for i, m in enumerate(modules)}
    checks = sorted(_CHECKS, key=lambda item: order.get(item[0].rpartition(".")[0], len(order)))
    out = []
    for _, check in checks:
        result = check(report)
        if result is not None:
            out.append(result)
    return out
