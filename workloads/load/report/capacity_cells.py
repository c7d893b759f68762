"""The words of a capacity cell: the bracket a target holds (both ends; a range where levels inside it were
undecided; '≥' only at the stated maximum; 'no miss up to' where the search stopped below it; 'none'; a
peak), the evidence at both ends, each engine start's bracket, the planned levels the run never reached
('not run': never read as met, issue 22), capacity on ÷ off, and the steady-state table's verdict and
population cells.

Used by the capacity table and the caching table (``views.capacity``), the summary rows
(``views.capacity_summary``) and the replica configurations' capacities (``views.replicas``).
"""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from llm_call_anatomy.contract.level_flags import closed_letter
from llm_call_anatomy.reports import fmt
from llm_call_anatomy.workloads.load.report.capacity import known, not_run_between


def row_letter(r: dict) -> str:
    """A capacity row's closed-loop letter, as every level is named (``level_flags.closed_letter``)."""
    return closed_letter(r.get("think_s"))


def variant_text(r: dict) -> str:
    """A row's workload and variant: ``load-fixed · S=0``."""
    return f"{r['workload']} · {r['mode']}"


def names_text(backends: Iterable[str]) -> str:
    """``a``, ``a and b``, ``a, b and c`` (each name once, in order)."""
    names = list(dict.fromkeys(backends))
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def level_text(r: dict, value: object) -> str:
    """A level of ``r``'s loop: ``C=N`` closed (``U=N`` users who think), ``N req/s`` open (``N sessions/s``
    for a sessions load's open loop: it starts sessions)."""
    if r["loop"] == "closed":
        return f"{row_letter(r)}={fmt.n(value)}"
    return f"{fmt.n(value)} {fmt.text(r.get('rate_unit')) or 'req/s'}"


def not_run_text(r: dict, xs: list[float]) -> str:
    """``C=32, C=128 not run`` (in ``r``'s loop's levels)."""
    return ", ".join(level_text(r, x) for x in xs) + " not run"


def capacity_text(r: dict) -> str:
    """A capacity cell: the level (``C=N`` closed, ``N req/s`` open, ``N sessions/s`` for a sessions load's
    open loop: it starts sessions). Both ends of a bracket, ``C=16–20 (met at 16, missed at 20, 1.25×
    apart)``, with the levels left undecided inside it (a range); '≥' only where every level met the target
    up to the stated maximum (``floor``); ``no miss up to X`` where the search or the run stopped below it
    (``unbracketed``), naming the engine's limit on requests running at once where the search stopped
    there; 'none' (and the level that missed) where no level met it; for a throughput-only
    target, the level of peak tok/s. A planned level the run never reached
    (``not_run``) is named where it could change the capacity (above a floor, between a bracket's ends, below
    the lowest miss; any, beside a peak; all, where the run never reached the variant and loop): never read as
    met. NaN reads as no value."""
    v = r["value"]
    if r["bound"] in ("not run", "peak", "skipped") or not known(v):
        return _no_capacity_text(r)
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
    if r["bound"] == "floor":  # every level passed up to the stated maximum: "at least" that maximum
        return f"≥ {text} (every level {'judged' if why else 'tested'} met it{'; ' + why if why else ''})"
    if r["bound"] == "unbracketed":  # no miss, but the search never reached its maximum
        return _unbracketed_text(r, text, why, unjudged)
    return _bracket_text(r, text, why)


def _no_capacity_text(r: dict) -> str:
    """A cell with no capacity value: a variant the run never reached, a throughput-only target's peak, or
    'none' where no level met the target."""
    v = r["value"]
    if r["bound"] == "skipped":  # the backend skipped the workload whole: its reason, never "not run"
        return f"skipped: {r.get('skipped')}"
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
        parts = [f"{missed_word(r)} at {level_text(r, r['next_up'])}"] if known(r["next_up"]) else []
        undecided = [x for x in (r.get("undecided") or []) if known(x)]
        parts += ["undecided at " + ", ".join(level_text(r, x) for x in undecided)] if undecided else []
        parts += [not_run_text(r, below)] if below else []
    return "none" + (f" ({'; '.join(parts)})" if parts else "")


def _unbracketed_text(r: dict, text: str, why: str, unjudged: list) -> str:
    """``no miss up to X (why the search stopped there)``: a level it did not reach, levels it could not
    judge, the engine's own limit, or the search's budget below its maximum."""
    v = r["value"]
    above = not_run_between(r, lo=v)
    if above:
        them = "it" if len(above) == 1 else "them"
        reason = f"{not_run_text(r, above)}: the run stopped before {them}"
    elif why and any(x > v for x in unjudged):  # the levels above were run and could not be judged
        return f"no miss up to {text} ({why})"
    elif known(r.get("engine_limit")) and v >= r["engine_limit"]:  # the search stopped at the engine's
        limit = f"{fmt.text(r.get('engine_limit_name')) or 'its limit'} = {fmt.n(r['engine_limit'])}"
        reason = f"the engine's max running sequences, {limit}"
    elif known(r.get("ceiling")) and r["ceiling"] > v:
        reason = f"the search stopped below its maximum, {level_text(r, r['ceiling'])}"
    else:
        reason = "the search stopped before a miss"
    return f"no miss up to {text} ({reason}{'; ' + why if why else ''})"


def _bracket_text(r: dict, text: str, why: str) -> str:
    """Both ends of a bracket (or the range up to the undecided levels, or an exact level), with what lies
    between them."""
    v = r["value"]
    between = not_run_between(r, lo=v, hi=r["next_up"])
    parts = []
    undecided = [x for x in (r.get("undecided") or []) if known(x)]
    if undecided:
        parts.append("undecided at " + ", ".join(level_text(r, x) for x in undecided))
    parts += [not_run_text(r, between)] if between else []
    parts += [why] if why else []
    if known(r["next_up"]) and r["bound"] in ("bracket", "range"):
        ratio = r.get("ratio") if known(r.get("ratio")) else r["next_up"] / v if v else None
        wide = f", {ratio:.2f}× apart" if ratio else ""
        ends = f"met at {fmt.n(v)}, {missed_word(r)} at {fmt.n(r['next_up'])}"
        text = f"{span_text(r, v, r['next_up'])} ({ends}{wide}"
        text += "; " + "; ".join(parts) + ")" if parts else ")"
    elif r["bound"] == "exact":
        text += f" ({level_text(r, r['next_up'])} missed" + ("; " + "; ".join(parts) if parts else "") + ")"
    elif undecided:  # a range with no miss above it: from the last pass to the highest undecided level
        text = f"{span_text(r, v, undecided[-1])} ({'; '.join([f'met at {fmt.n(v)}', *parts])})"
    elif parts:
        text += f" ({'; '.join(parts)})"
    return text + (" · non-monotone" if r["non_monotone"] else "")


MIN_STARTS = 3  # a server's headline capacity wants at least this many engine starts (issue 39)


def headline_text(r: dict) -> str:
    """A capacity as the summary states it: the cell, the deciding percentile with its interval at both ends,
    and every engine start's bracket where several ran (:func:`evidence_text`, :func:`starts_text`)."""
    parts = [capacity_text(r)]
    if r.get("bound") not in ("peak", "not run", "skipped"):
        evidence = evidence_text(r)
        parts += [evidence] if evidence != "–" else []
        parts += [starts_text(r) if len(r.get("starts") or []) > 1 else "1 engine start"]
    return " · ".join(parts)


def missed_word(r: dict) -> str:
    """What the level above a capacity was: "missed", or "not offered as planned" where its arrivals were not
    the load it names (``miss_at``'s decision)."""
    top = r.get("miss_at") if isinstance(r.get("miss_at"), dict) else {}
    return "not offered as planned" if top.get("decision") == "not offered" else "missed"


def span_text(r: dict, lo: object, hi: object) -> str:
    """A bracket's two ends in ``r``'s loop: ``C=16–20``, ``8–10 req/s``."""
    if r["loop"] == "closed":
        return f"{row_letter(r)}={fmt.n(lo)}–{fmt.n(hi)}"
    return f"{fmt.n(lo)}–{fmt.n(hi)} {fmt.text(r.get('rate_unit')) or 'req/s'}"


def evidence_text(r: dict) -> str:
    """The deciding percentile at both ends of a capacity, with its bootstrap interval (5th–95th percentile
    over time blocks of the steady window): ``met: ttft p90 412 ms [380–450] · missed: ttft p90 623 ms
    [590–660]``, and the flags that decided a level (not offered as planned, overloaded)."""
    out = []
    for word, e in (("met", r.get("pass_at")), ("missed", r.get("miss_at"))):
        if not isinstance(e, dict):
            continue
        if e.get("decision") not in (None, "pass", "miss"):
            word = e["decision"]  # undecided, not offered
        figure = ""
        if e.get("limit") and known(e.get("value")):
            iv = e.get("interval")
            whole = isinstance(iv, list | tuple) and len(iv) == 2
            band = f" [{fmt.n(iv[0])}–{fmt.n(iv[1])}]" if whole else ""
            value = "∞ (failures)" if e["value"] == float("inf") else f"{fmt.n(e['value'])} ms"
            figure = f"{e['limit'].removesuffix('_ms').replace('_', ' ')} {value}{band}"
        flags = [f.replace("_", " ") for f in e.get("flags") or [] if f.replace("_", " ") != word]
        out.append(f"{word}: " + "; ".join(x for x in (figure, *flags) if x))
    return " · ".join(out) or "–"


def starts_text(r: dict) -> str:
    """The capacity of each engine start that ran the levels, the median start's first (the row's figure):
    ``3 starts: C=16–20 (median), C=16–20, C=32–40``; fewer than :data:`MIN_STARTS` said so (the spread
    between starts, which can move a capacity a level or two, is then not, or barely, measured)."""
    starts = r.get("starts") or []
    if len(starts) < 2:
        return "1 engine start: the spread between starts is not measured"
    cells = []
    for s in sorted(starts, key=lambda s: s["start"] != r.get("start")):
        # a start's own undecided levels stay: a range that ends at one ("U=256–512") is not the floor "U=256"
        one = {**r, "undecided": [], **s, "ratio": None, "not_run": [], "unjudged": [], "non_monotone": False}
        if s["bound"] in ("bracket", "range") and known(s["next_up"]) and known(s["value"]):
            text = span_text(r, s["value"], s["next_up"])
        else:
            text = capacity_text(one).split(" (")[0]
        cells.append(text + (" (median)" if s["start"] == r.get("start") else ""))
    few = f" (fewer than {MIN_STARTS} starts)" if len(starts) < MIN_STARTS else ""
    return f"{len(starts)} starts: " + ", ".join(cells) + few


def capacity_ratio_text(r: dict) -> str:
    """Capacity on ÷ off: the ratio, '≥' or '≤' where a floor on one side bounds it (with that side's planned
    levels above it that did not run), '>' or '<' where a side met the target at no level (the ratio to the
    level it missed at), and no number where neither met it, or both are floors (every level met the target
    with the cache on and off, or a side's run stopped before its next planned level: that side's levels not
    run are named, never read as met)."""
    bound = fmt.text(r.get("capacity_bound"))
    if bound == "both floors":
        on, off = r["capacity_floors"]
        kinds = r.get("capacity_floor_bounds")
        kinds = tuple(kinds) if isinstance(kinds, list | tuple) and len(kinds) == 2 else ("floor", "floor")
        words = ["≥" if k == "floor" else "no miss up to" for k in kinds]
        both = (
            f"both {words[0]} {level_text(r, on)}"
            if on == off and words[0] == words[1]
            else f"{words[0]} {level_text(r, on)} on, {words[1]} {level_text(r, off)} off"
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


def verdicts_by_level(caps: pd.DataFrame) -> dict[tuple, str]:
    """(backend, workload, mode, loop, level) -> each target's decision there, ``chat pass · agent miss``
    (from the capacity rows' ``decisions``: the median engine start's where several ran)."""
    out: dict[tuple, list[str]] = {}
    for r in caps.to_dict("records") if len(caps) else []:
        decisions = r.get("decisions")
        for x, d in decisions.items() if isinstance(decisions, dict) else ():
            key = (r["backend"], r["workload"], r["mode"], r["loop"], float(x))
            out.setdefault(key, []).append(f"{r['target']} {d}")
    return {k: " · ".join(v) for k, v in out.items()}


def population_text(r: dict) -> str:
    """Users, requests in flight (time-weighted mean / p90 over the steady window) and arrivals/s."""
    if not any(fmt.n(r.get(k)) != "–" for k in ("users", "in_flight_mean", "arrivals_per_s")):
        return "–"
    return (
        f"{fmt.n(r.get('users'))} · {fmt.n(r.get('in_flight_mean'), 1)} / {fmt.n(r.get('in_flight_p90'))}"
        f" · {fmt.n(r.get('arrivals_per_s'), 1)}"
    )
