"""The words of a capacity cell: the level a target holds ('≥' a floor, a bracket, 'none', a peak), the
planned levels the run never reached ('not run': never read as met, issue 22), and capacity on ÷ off.

Used by the capacity table and the caching table (``views.capacity``), the summary rows
(``views.capacity_summary``) and the replica configurations' capacities (``views.replicas``).
"""

from __future__ import annotations

from reports import fmt
from workloads.load.report.capacity import known, not_run_between


def level_text(r: dict, value: object) -> str:
    """A level of ``r``'s loop: ``C=N`` closed, ``N req/s`` open (``N sessions/s`` for a sessions load's open
    loop: it starts sessions)."""
    if r["loop"] == "closed":
        return f"C={fmt.n(value)}"
    return f"{fmt.n(value)} {fmt.text(r.get('rate_unit')) or 'req/s'}"


def not_run_text(r: dict, xs: list[float]) -> str:
    """``C=32, C=128 not run`` (in ``r``'s loop's levels)."""
    return ", ".join(level_text(r, x) for x in xs) + " not run"


def capacity_text(r: dict) -> str:
    """A capacity cell: the level (``C=N`` closed, ``N req/s`` open, ``N sessions/s`` for a sessions load's
    open loop: it starts sessions); '≥' where every level met the target;
    the next level up where the search left a bracket; 'none' (and the level that missed) where no level met
    it; for a throughput-only target, the level of peak tok/s. A planned level the run never reached
    (``not_run``) is named where it could change the capacity (above a floor, between a bracket's ends, below
    the lowest miss; any, beside a peak; all, where the run never reached the variant and loop): never read as
    met. NaN reads as no value."""
    v = r["value"]
    if r["bound"] == "not run":
        return f"not run (the run stopped before {', '.join(level_text(r, x) for x in not_run_between(r))})"
    if r["bound"] == "peak":
        every = not_run_between(r)
        if not known(v):
            return "no level" + (f" ({not_run_text(r, every)})" if every else "")
        peak = f"peak tok/s at {level_text(r, v)}"
        return peak + (f" of the levels run ({not_run_text(r, every)})" if every else "")
    if not known(v):
        below = not_run_between(r, hi=r["next_up"])
        parts = [f"missed at {level_text(r, r['next_up'])}"] if known(r["next_up"]) else []
        parts += [not_run_text(r, below)] if below else []
        return "none" + (f" ({'; '.join(parts)})" if parts else "")
    text = level_text(r, v)
    unjudged = r.get("unjudged")
    unjudged = list(unjudged) if isinstance(unjudged, list | tuple) else []
    why = (
        ", ".join(level_text(r, x) for x in unjudged)
        + " not judged: no steady-state request"
        + (", all in its first wave" if r["loop"] == "closed" else "")
        if unjudged
        else ""
    )
    if r["bound"] == "floor":
        above = not_run_between(r, lo=v)
        if above:  # a floor only because the run stopped: what it never reached is no level that met it
            them = "it" if len(above) == 1 else "them"
            tail = f"; {why}" if why else ""
            return f"≥ {text} ({not_run_text(r, above)}: the run stopped before {them}{tail})"
        return f"≥ {text} (every level {'judged' if why else 'tested'} met it{'; ' + why if why else ''})"
    between = not_run_between(r, lo=v, hi=r["next_up"])
    parts = ["the levels between not measured"] if r["bound"] == "bracket" else []
    parts += [not_run_text(r, between)] if between else []
    parts += [why] if why else []
    if r["bound"] == "bracket":
        text += f" (< {fmt.n(r['next_up'])}; {'; '.join(parts)})"
    elif parts:
        text += f" ({'; '.join(parts)})"
    return text + (" · non-monotone" if r["non_monotone"] else "")


def capacity_ratio_text(r: dict) -> str:
    """Capacity on ÷ off: the ratio, '≥' or '≤' where a floor on one side bounds it (with that side's planned
    levels above it that did not run), '>' or '<' where a side met the target at no level (the ratio to the
    level it missed at), and no number where neither met it, or both are floors (every level met the target
    with the cache on and off, or a side's run stopped before its next planned level: that side's levels not
    run are named, never read as met)."""
    bound = fmt.text(r.get("capacity_bound"))
    if bound == "both floors":
        on, off = r["capacity_floors"]
        both = (
            f"both ≥ {level_text(r, on)}"
            if on == off
            else f"≥ {level_text(r, on)} on, ≥ {level_text(r, off)} off"
        )
        cut = _not_run_sides(r)
        if not any(cut):
            return f"– ({both}: every level met it)"
        sides = [
            f"{not_run_text(r, list(xs)) if xs else 'every level met it'} {side}"
            for side, xs in zip(("on", "off"), cut, strict=True)
        ]
        return f"– ({both}: {'; '.join(sides)})"
    missed = r.get("capacity_missed_at")
    missed = tuple(missed) if isinstance(missed, list | tuple) and len(missed) == 2 else (None, None)
    if bound == "both none":
        return f"– (neither met it: missed at {level_text(r, missed[0])} on, {level_text(r, missed[1])} off)"
    ratio = fmt.n(r.get("capacity_ratio"), 2)
    if bound in ("more than", "less than") and ratio != "–":
        side = 1 if bound == "more than" else 0  # the side that met it at no level
        why = f"{('on', 'off')[side]}: none, missed at {level_text(r, missed[side])}"
        return f"{'>' if bound == 'more than' else '<'} {ratio} ({why})"
    if ratio == "–" or bound in ("", "ratio"):
        return ratio
    side = 0 if bound == "at least" else 1  # the floor's side: on bounds it from below, off from above
    xs = list(_not_run_sides(r)[side])
    why = f" ({not_run_text(r, xs)} {('on', 'off')[side]})" if xs else ""
    return ("≥ " if bound == "at least" else "≤ ") + ratio + why


def _not_run_sides(r: dict) -> tuple:
    """A caching ratio row's planned levels not run above each side's capacity, (on, off); none where the
    row has no such pair."""
    cut = r.get("capacity_not_run")
    return tuple(cut) if isinstance(cut, list | tuple) and len(cut) == 2 else ([], [])
