"""An engine in process beside its own server: where their capacities disagree, each side's TTFT split into
the engine's queue, the rest of the engine's own TTFT and what lies outside the engine, measured (issue 39).

A pair is an in-process column and an HTTP column that ran one engine (``replicas.engine_of``: a server's
``server_kind``, an in-process engine's version key), with the prefix cache the same way and the same
requests (one group of ``capacity.mix_classes``). Where their capacity rows for one variant, loop and target
differ (value, next level up or bound), the **level** is the lowest level both judged where their decisions
differ (one met the target, the other missed it or was left undecided; a throughput-only target has none).
There, over each side's served requests of the whole level (first wave included, as a server's histograms
count them; means, because means add up and percentiles do not):

- **queue**: the engine's own wait from queued to scheduled: in process each request's ``engine_queue_ms``
  (``backends/vllm/facts.py``; SGLang's meta info), over HTTP the server's queue-time histogram
  (``server_timings`` in the level record, its exact mean; several engine starts pooled by their counts),
  with its median beside it (in process over the requests; over HTTP one start's, as its buckets give it:
  ``server_figures.p50_text``), since a first wave can carry a mean that most requests never waited;
- **engine, after the queue** = the engine's own TTFT − queue: its intake and the prefill up to the first
  token (in process each request's ``engine_ttft_ms``, over HTTP the server's TTFT histogram);
- **outside the engine** = the caller's TTFT − the engine's own: in process the harness's step loop, over
  HTTP the front end, the network and the client;

and beside them the caller's TPOT and end-to-end means and the level's output tok/s. The note names the
part that carries most of the TTFT gap, and where that part is the queue, the end-to-end means agree
(within ``SAME_E2E``) and the side that queued less decoded slower, says that the same time was spent
otherwise (:func:`admitted_otherwise`). Where the decisions differ at a level both ran, the in-process
column did not predict its server there: the capacity summary (``capacity_summary``) then puts the server's
column first and says so beside the in-process one (:func:`lead`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from llm_call_anatomy.reports import fmt
from llm_call_anatomy.reports.stats import num
from llm_call_anatomy.workloads.load.report.capacity import KEY
from llm_call_anatomy.workloads.load.report.capacity_cells import capacity_text, level_text
from llm_call_anatomy.workloads.load.report.levels import bucket, level_facts, percentile, requests
from llm_call_anatomy.workloads.load.report.server_figures import p50_text

IN_PROCESS, HTTP = "in process", "HTTP"
PARTS = ("queue", "after_queue", "outside")  # the caller's TTFT mean = their sum (where all three are known)
SAME_E2E = 0.05  # two mean end-to-end times this close (of the larger) are "the same time end to end"
PART_WORDS = {
    "queue": "the engine's queue",
    "after_queue": "the engine after its queue (intake and prefill to the first token)",
    "outside": "what lies outside the engine",
}


@dataclass(frozen=True)
class Split:
    """One side's means over a level's served requests, ms (None: not recorded)."""

    backend: str
    n: int
    ttft: float | None  # the caller's
    queue: float | None
    engine_ttft: float | None
    tpot: float | None  # the caller's decode ms a token
    e2e: float | None  # the caller's submit to finish
    output_tps: float | None  # the level's steady output tok/s
    queue_p50: str = ""  # the queue's median in words: "p50 0.0", "p50 in (500, 800]" (a server's bucket)

    @property
    def after_queue(self) -> float | None:
        return None if self.engine_ttft is None or self.queue is None else self.engine_ttft - self.queue

    @property
    def outside(self) -> float | None:
        return None if self.ttft is None or self.engine_ttft is None else self.ttft - self.engine_ttft


def _mean(xs: pd.Series) -> float | None:
    xs = pd.to_numeric(xs, errors="coerce").dropna()
    return float(xs.mean()) if len(xs) else None


def _extra(g: pd.DataFrame, name: str) -> pd.Series:
    if "extra" not in g:
        return pd.Series(dtype=float)
    return g["extra"].map(lambda e: e.get(name) if isinstance(e, dict) else None)


def _server_mean(facts: list[Any], fig: str) -> float | None:
    """The servers' exact mean of one histogram over the level, its engine starts pooled by their counts."""
    total = count = 0.0
    for f in facts:
        timings = getattr(f, "server_timings", None) or {}
        mean, n = num(timings.get(f"{fig}_ms_mean")), num(timings.get(f"{fig}_n"))
        if mean is None or not n:
            continue
        total, count = total + mean * n, count + n
    return total / count if count else None


def split(backend: str, g: pd.DataFrame, facts: list[Any], via: str, tps: Any = None) -> Split:
    """One side's :class:`Split` from the level's request rows ``g`` and its level records' facts (one an
    engine start): per request in process, the server's histograms over HTTP."""
    ok = g[g["error"].isna()] if "error" in g else g
    if via == HTTP:
        queue, engine_ttft = _server_mean(facts, "queue"), _server_mean(facts, "ttft")
        timed = [t for f in facts if (t := getattr(f, "server_timings", None))]
        # one start's median as the server's buckets give it (medians of several starts do not pool)
        median = (
            p50_text(timed[0].get("queue_ms_p50"), bucket(timed[0].get("queue_p50_bucket_ms")))
            if len(timed) == 1
            else ""
        )
    else:
        waits = pd.to_numeric(_extra(ok, "engine_queue_ms"), errors="coerce").dropna()
        queue = _mean(waits)
        engine_ttft = _mean(ok["engine_ttft_ms"]) if "engine_ttft_ms" in ok else None
        median = f"p50 {fmt.n(percentile(waits, 50))}" if len(waits) else ""
    e2e = (ok["finish_s"] - ok["submit_s"]) * 1e3 if {"finish_s", "submit_s"} <= set(ok) else pd.Series()
    return Split(
        backend=backend,
        n=len(ok),
        ttft=_mean(ok["ttft_ms"]),
        queue=queue,
        engine_ttft=engine_ttft,
        tpot=_mean(ok["decode_ms_per_token"]) if "decode_ms_per_token" in ok else None,
        e2e=_mean(e2e),
        output_tps=num(tps),
        queue_p50=median,
    )


def pairs(via: dict[str, str], engines: dict[str, str], caching: dict, classes: dict, w: str, m: str):
    """(in-process column, server column) of one engine, caching the same way, in one group of same requests
    for the variant ``(w, m)``."""
    groups = classes.get((w, m)) or []
    out = []
    for b in via:
        if via[b] != IN_PROCESS:
            continue
        for s in via:
            same_group = any(b in grp and s in grp for grp in groups)
            same_cache = caching.get(b, True) == caching.get(s, True)
            if via[s] == HTTP and engines.get(s) == engines.get(b) and same_group and same_cache:
                out.append((b, s))
    return out


def _differ(a: dict, b: dict) -> bool:
    ends = any(num(a.get(k)) != num(b.get(k)) for k in ("value", "next_up"))
    return ends or a.get("bound") != b.get("bound")


def deciding_level(a: dict, b: dict) -> float | None:
    """The lowest level both rows judged where their decisions differ (pass, miss, undecided)."""
    da, db = a.get("decisions") or {}, b.get("decisions") or {}
    shared = sorted(float(x) for x in set(da) & set(db) if da[x] != db[x])
    return shared[0] if shared else None


def notes(cap: dict[str, Any], rows: pd.DataFrame, engines: dict[str, str]) -> list[dict[str, Any]]:
    """One note a disagreeing pair and target (see the module docstring): its rows, its level, the two
    splits (None where no level was decided differently) and its sentence."""
    caps, steady = cap["capacity"], cap["steady"]
    via, caching, classes = cap.get("via") or {}, cap.get("caching_of") or {}, cap.get("mix_classes") or {}
    if caps.empty or steady.empty or not via:
        return []
    reqs = requests(rows)
    by_start = level_facts(rows, by_start=True)
    out = []
    by = ["workload", "mode", "loop"] + (["target_label"] if "target_label" in caps else ["target"])
    judged = caps[~caps["bound"].isin(["peak", "not run"])]  # a throughput-only target has no verdicts
    for _, g in judged.groupby(by, sort=False):
        w, m = g["workload"].iloc[0], g["mode"].iloc[0]
        rows_of = {r["backend"]: r for r in g.to_dict("records")}
        for b, s in pairs(via, engines, caching, classes, w, m):
            if b not in rows_of or s not in rows_of or not _differ(rows_of[b], rows_of[s]):
                continue
            a, z = rows_of[b], rows_of[s]
            x = deciding_level(a, z)
            sides = None
            if x is not None:
                sides = _sides(a, (b, s), x, reqs, steady, by_start, via)
            out.append(
                {
                    "in_process": b,
                    "server": s,
                    "row": a,
                    "server_row": z,
                    "level": x,
                    "splits": sides,
                    "predicts": x is None,
                    "text": text(a, z, x, sides),
                }
            )
    return out


def _sides(a: dict, pair: tuple[str, str], x: float, reqs, steady, by_start, via) -> tuple | None:
    """The two sides' splits at level ``x``; None where either lacks the level or they ran other requests."""
    axis = "concurrency" if a["loop"] == "closed" else "rate_rps"
    out = []
    for backend in pair:
        at = steady[(steady["backend"] == backend) & (steady["workload"] == a["workload"])]
        at = at[(at["mode"] == a["mode"]) & (at[axis] == x)]
        if at.empty:
            return None
        case = at["case"].iloc[0]
        key = (backend, a["workload"], a["mode"], case)
        g = reqs[(reqs[KEY] == pd.Series(key, index=KEY)).all(axis=1)]
        facts = [f for k, f in by_start.items() if k[:4] == key]
        out.append((split(backend, g, facts, via[backend], at["output_tps"].iloc[0]), at["mix"].iloc[0]))
    (one, mix_a), (two, mix_b) = out
    return (one, two) if mix_a == mix_b else None


def _ms(v: float | None) -> str:
    return "not recorded" if v is None else fmt.n(v)


def _ttft_text(sp: Split, outside_words: str) -> str:
    median = f" ({sp.queue_p50})" if sp.queue_p50 else ""
    return (
        f"{_ms(sp.ttft)} ms = queue {_ms(sp.queue)}{median} + engine after the queue {_ms(sp.after_queue)} + "
        f"outside the engine ({outside_words}) {_ms(sp.outside)}"
    )


def largest_part(one: Split, two: Split) -> tuple[str, float] | None:
    """The part of the TTFT split whose difference between the two sides is the largest, with that
    difference (server − in process); None where a part is not recorded on either side."""
    diffs = {}
    for part in PARTS:
        a, b = getattr(one, part), getattr(two, part)
        if a is None or b is None:
            return None
        diffs[part] = b - a
    part = max(diffs, key=lambda k: abs(diffs[k]))
    return part, diffs[part]


def same_e2e(one: Split, two: Split) -> bool:
    """The two sides' mean end-to-end times within ``SAME_E2E`` of each other (the larger)."""
    if one.e2e is None or two.e2e is None or max(one.e2e, two.e2e) <= 0:
        return False
    return abs(one.e2e - two.e2e) <= SAME_E2E * max(one.e2e, two.e2e)


def admitted_otherwise(one: Split, two: Split, part: str, diff: float) -> str:
    """Where the queue carries the gap, the end-to-end times agree and TPOT goes the other way: the same
    time end to end, split otherwise between waiting and decoding (else nothing)."""
    if part != "queue" or not same_e2e(one, two) or one.tpot is None or two.tpot is None:
        return ""
    sooner = "in process" if diff > 0 else "behind its server"
    later = "behind its server" if diff > 0 else "in process"
    slower, faster = (one, two) if diff > 0 else (two, one)
    if slower.tpot <= faster.tpot:
        return ""
    return (
        f" End to end the two agree (within {SAME_E2E:.0%}): the engine {sooner} admitted requests sooner "
        f"and decoded them slower (TPOT {_ms(slower.tpot)} against {_ms(faster.tpot)} ms) than {later}, "
        "the same time spent otherwise, so the TTFT a target judges moved and the capacity with it."
    )


def text(a: dict, z: dict, x: float | None, sides: tuple[Split, Split] | None) -> str:
    """The note's sentence (see the module docstring); every figure from the rows and the splits."""
    b, s = a["backend"], z["backend"]
    loop = "concurrency" if a["loop"] == "closed" else "Poisson rate"
    head = (
        f"{b}, in process: {capacity_text(a)}, against {s}, over HTTP: {capacity_text(z)}, "
        f"within {a['target']} ({a['workload']} · {a['mode']}, {loop})."
    )
    if x is None:
        return head + " At every level both ran their decisions agree: no split to give."
    da, dz = (a.get("decisions") or {}).get(x), (z.get("decisions") or {}).get(x)
    at = f" At {level_text(a, x)} ({b} {da}, {s} {dz})"
    if sides is None:
        return head + at + ": the two ran other requests there, so no split is compared."
    one, two = sides
    parts = (
        f", means over the {fmt.n(one.n)} and {fmt.n(two.n)} served requests of the level (first wave "
        f"included): caller TTFT in process {_ttft_text(one, 'the step loop')}; over HTTP "
        f"{_ttft_text(two, 'front end, network, client')}. TPOT {_ms(one.tpot)} against {_ms(two.tpot)} ms; "
        f"end to end {_ms(one.e2e)} against {_ms(two.e2e)} ms, at {_ms(one.output_tps)} against "
        f"{_ms(two.output_tps)} steady output tok/s."
    )
    found = largest_part(one, two)
    if found is None or one.ttft is None or two.ttft is None:
        why = " The split is not recorded on both sides, so the gap is not assigned to a part."
    else:
        part, diff = found
        why = (
            f" Of the TTFT gap ({fmt.n(two.ttft - one.ttft)} ms, HTTP − in process) {PART_WORDS[part]} "
            f"carries the most ({fmt.n(diff)} ms)."
        )
        why += admitted_otherwise(one, two, part, diff)
    return head + at + parts + why + f" The in-process column does not predict {s} here."


def lead(values: list[tuple[str, str]], found: list[dict[str, Any]], target: str, w: str, m: str, loop: str):
    """A summary row's (backend, value) pairs with each server of a disagreeing pair before its in-process
    column, and the in-process value saying it did not predict its server (the note in the capacity part)."""
    where = (w, m, loop, target)
    mine = [
        n
        for n in found
        if not n["predicts"] and tuple(n["row"][k] for k in ("workload", "mode", "loop", "target")) == where
    ]
    if not mine:
        return values
    out = list(values)
    for n in mine:
        names = [name for name, _ in out]
        if n["in_process"] not in names or n["server"] not in names:
            continue
        i, j = names.index(n["in_process"]), names.index(n["server"])
        value = (
            f"{out[i][1]} (in process: does not predict {n['server']}; see the note under the capacity table)"
        )
        entry = (n["in_process"], value)
        if j > i:
            server = out.pop(j)
            out.insert(i, server)
            out[i + 1] = entry
        else:
            out[i] = entry
    return out
