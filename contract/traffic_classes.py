"""Mixed traffic: each request's traffic class (chat, agent, ...) judged against its own target, on the same
levels as the whole traffic.

A level's facts carry its requests' classes, by request index (``rep``), in ``facts.trace["classes"]`` (a
replayed trace's; a level without them has no classes), and the chosen targets in ``class_targets``.

- **Which target**: the workload's ``class_targets`` maps a class to a target by name; without it, a class is
  judged against the run's target of the same name (``--slo chat:...,agent:...``, or the defaults' chat,
  agent and batch). A class with no such target is not judged (the page says so).
- **A class's verdict** at a level: its own requests' percentiles against its target (``contract.capacity.
  judge`` on that part of the level), with the whole level's flags (its offered rate and its queue are the
  level's, not a class's).
- **Every class at its own target**: the level passes when each judged class passes; the worst decision
  otherwise (miss, then not offered, then undecided), named by its class. This is the verdict "how much of
  this mixed traffic one GPU holds" is bracketed by.
- **The capacity search** (:func:`judge_for_search`): a target that is some class's is judged on that class's
  requests (so the search brackets each class at its own target); any other target on every request.
"""

from __future__ import annotations

from dataclasses import replace

from llm_call_anatomy.contract.capacity import MISS, NOT_OFFERED, PASS, UNDECIDED, judge
from llm_call_anatomy.contract.level_facts import LevelFacts
from llm_call_anatomy.contract.level_stats import LevelStats, level_stats
from llm_call_anatomy.contract.slo import Target, Verdict

ALL = "every class at its own target"
WORST_FIRST = (MISS, NOT_OFFERED, UNDECIDED, PASS)


def targets_of_classes(trace: dict, targets: tuple[Target, ...]) -> dict[str, Target | None]:
    """Each class of the trace (in order of first request) -> its target (None: the run has none for it)."""
    names = {t.name: t for t in targets if not t.throughput_only}
    chosen = trace.get("class_targets") or {}
    out: dict[str, Target | None] = {}
    for c in trace.get("classes") or []:
        if c is not None and c not in out:
            out[c] = names.get(chosen.get(c, c))
    return out


def judge_classes(
    rows: list[dict], level: LevelStats, facts: LevelFacts, targets: tuple[Target, ...]
) -> dict[str, tuple[Target, Verdict]]:
    """Per class with a target: (its target, its verdict at this level); empty for a trace without classes."""
    trace = facts.trace if isinstance(facts.trace, dict) else {}
    classes = trace.get("classes") or []
    out = {}
    for c, target in targets_of_classes(trace, targets).items():
        if target is None:
            continue
        part = [r for r in rows if _class(r, classes) == c]
        if part:
            out[c] = (target, judge(target, level_stats(part, None), facts, level=level))
    return out


def every_class(verdicts: dict[str, tuple[Target, Verdict]]) -> Verdict | None:
    """The level for every class at its own target: the worst class's decision (None: a class undecidable,
    with no samples)."""
    decisions = {c: v.decision for c, (_, v) in verdicts.items()}
    if not decisions or any(d is None for d in decisions.values()):
        return None
    worst = next(d for d in WORST_FIRST if d in decisions.values())
    c = next(c for c, d in decisions.items() if d == worst)
    v = verdicts[c][1]
    why = f"{c}: {v.limiter}" if v.limiter and worst != PASS else None
    return replace(v, decision=worst, met=worst == PASS, limiter=why)


def judge_for_search(
    target: Target, rows: list[dict], facts: LevelFacts | None, level: LevelStats
) -> Verdict:
    """The capacity search's verdict of a level for ``target``: on the requests of the classes whose target it
    is (with the whole level's flags), else on every request (``contract.capacity.judge``)."""
    trace = facts.trace if facts is not None and isinstance(facts.trace, dict) else {}
    mine = [c for c, t in targets_of_classes(trace, (target,)).items() if t is not None]
    part = [r for r in rows if _class(r, trace.get("classes") or []) in mine] if mine else []
    if not part:
        return judge(target, level, facts)
    return judge(target, level_stats(part, None), facts, level=level)


def _class(row: dict, classes: list) -> str | None:
    rep = row.get("rep")
    if isinstance(rep, bool) or not isinstance(rep, int | float) or rep != rep:
        return None
    return classes[int(rep)] if 0 <= rep < len(classes) else None
