"""The summary: which stack for which job, read off the figures, and the facts a deployment needs.

A latency job compares each backend's figure over engine starts (:func:`reports.stats.over_starts`:
the median of per-start medians, with the spread within a start and across starts); it names
a winner only where the gap to the next backend exceeds both spreads, else "within noise (±x %)".
TTFT-based jobs rank only backends whose TTFT has the same definition (the caller's); old runs
whose ``ttft_ms`` is the engine's internal figure are shown but not ranked against it. Derived
figures (a reply's time from TTFT and the decode step) are shown, not ranked. Every latency job
says what the ranking rests on where it matters (:mod:`reports.analysis.run_context`): a column
from another run (day, machine or commit), runs that shared a GPU host with another engine, a
launch-bound model (what is compared is each stack's per-step overhead). Quality
jobs are flagged when the weights are random. Deployment facts (start-up, KV-cache capacity,
peak GPU memory, grammar cost) are listed, not ranked.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import pandas as pd

from reports import fmt
from reports.analysis.sweep import REPLY_TOKENS
from reports.stats import StartStat, num, over_starts, rank, spread, verdict

if TYPE_CHECKING:
    from reports.assemble import Report


@dataclass(frozen=True)
class Job:
    job: str
    figure: str  # what is compared
    values: list[tuple[str, str]]  # (backend, formatted value with its spread), best first
    best: str | None  # None: a single backend, a tie, within noise, or not comparable
    verdict: str = ""  # "by 57 % over vllm", "within noise (±9 %)", "not ranked: ..."
    caution: str | None = None
    stats: dict[str, StartStat] = field(
        default_factory=dict
    )  # a latency job's figures behind ``values`` (exports, the gate)
    unit: str = ""  # of ``stats`` (lower is better)
    latency: bool = (
        False  # a measured latency compared over engine starts (what the run-context notes apply to)
    )


def stat_text(s: StartStat, unit: str, digits: int | None = None) -> str:
    """``14.0 ms ±9 % (2 starts ±3 %, n=10)``: the within-start spread first, then across starts."""
    within = f" ±{fmt.rel(s.within)}" if s.within is not None else ""
    starts = f"{s.starts} starts ±{fmt.rel(s.across)}" if s.across is not None else "1 start"
    return f"{fmt.n(s.median, digits)} {unit}{within} ({starts}, n={s.n})".replace("  ", " ")


def _latency_job(
    job: str,
    figure: str,
    stats: dict[str, StartStat],
    unit: str,
    ttft: dict[str, bool] | None = None,
    caution: str | None = None,
) -> Job | None:
    stats = {b: s for b, s in stats.items() if s.median is not None}
    if not stats:
        return None
    ranked = _ranked_job(job, figure, stats, unit, ttft, caution)
    return replace(ranked, stats={b: stats[b] for b, _ in ranked.values}, unit=unit)


def _ranked_job(
    job: str,
    figure: str,
    stats: dict[str, StartStat],
    unit: str,
    ttft: dict[str, bool] | None,
    caution: str | None,
) -> Job:
    engine_internal = [b for b, common in (ttft or {}).items() if b in stats and not common]
    r = rank(stats)
    shown = [
        (b, stat_text(stats[b], unit) + (" (engine's own TTFT, old run)" if b in engine_internal else ""))
        for b in r.order
    ]
    if len(r.order) < 2:
        return Job(job, figure, shown, None, "one backend: nothing to choose", caution, latency=True)
    if engine_internal and len(engine_internal) < len(stats):
        why = (
            f"not ranked: {', '.join(engine_internal)} report the engine's internal TTFT (old runs, "
            "timing_source engine-metrics), the others the caller's"
        )
        return Job(job, figure, shown, None, why, caution, latency=True)
    winner, why = verdict(r, f"the noise within a start (±{fmt.rel(r.noise)})")
    return Job(job, figure, shown, winner, why, caution, latency=True)


def _by_backend(rows: pd.DataFrame, value: pd.Series | str) -> dict[str, StartStat]:
    vals = rows[value] if isinstance(value, str) else value
    return {b: over_starts(vals[g.index], g["start"]) for b, g in rows.groupby("backend", sort=False)}


def _ttft_common(rows: pd.DataFrame) -> dict[str, bool]:
    return {b: bool(g["ttft_common"].all()) for b, g in rows.groupby("backend", sort=False)}


def conversation_jobs(s, rows: pd.DataFrame) -> list[Job | None]:
    """The summary row of a conversation: each backend's TTFT summed over the turns of every complete repeat,
    in cached mode where the backend ran it (else full), ranked by the summary's winner rule. Empty where no
    repeat has a TTFT for every turn."""
    turns = rows["turn"].nunique()
    sums = []
    for (b, mode, start, _rep), g in rows.groupby(["backend", "mode", "start", "rep"], sort=False):
        if g["turn"].nunique() == turns and g["ttft_ms"].notna().all():
            sums.append(
                {
                    "backend": b,
                    "mode": mode,
                    "start": start,
                    "ttft": g["ttft_ms"].sum(),
                    "common": g["ttft_common"].all(),
                }
            )
    if not sums:
        return []
    df = pd.DataFrame(sums)
    pick = {
        b: ("cached" if (g["mode"] == "cached").any() else "full")
        for b, g in df.groupby("backend", sort=False)
    }
    df = df[[pick[b] == m for b, m in zip(df["backend"], df["mode"], strict=True)]]
    stats = _by_backend(df, "ttft")
    common = {b: bool(g["common"].all()) for b, g in df.groupby("backend", sort=False)}
    return [
        _latency_job(
            f"Multi-turn chat ({s.name})",
            f"summed TTFT over {turns} turns, prefix reuse where the backend has it",
            stats,
            "ms",
            common,
        )
    ]


def sweep_jobs(s, rows: pd.DataFrame) -> list[Job | None]:
    """The sweep's summary rows at the prompt lengths every backend ran: TTFT at the shortest, prefill at the
    longest, decode at the middle one, and a derived (unranked) end-to-end reply there."""
    rows = rows.dropna(subset=["prompt_tokens"])
    if rows.empty:
        return []
    common = sorted(
        set.intersection(*(set(g["prompt_tokens"].astype(int)) for _, g in rows.groupby("backend")))
    )
    if not common:
        return []
    lo, mid, hi = common[0], common[len(common) // 2], common[-1]
    at = {n: rows[rows["prompt_tokens"] == n] for n in (lo, mid, hi)}
    e2e = at[mid]["ttft_ms"] + (REPLY_TOKENS - 1) * at[mid]["decode_ms_per_token"]

    def ttft_at(n: int, title: str, subtitle: str) -> Job | None:
        return _latency_job(
            f"{title} ({s.name})", subtitle, _by_backend(at[n], "ttft_ms"), "ms", _ttft_common(at[n])
        )

    return [
        ttft_at(lo, "Many short calls", f"TTFT at the shortest prompt, N={lo}"),
        ttft_at(hi, "Long prompts", f"prefill time (TTFT) at N={hi}"),
        _latency_job(
            f"Generating tokens ({s.name})",
            f"decode ms/token at N={mid}",
            _by_backend(at[mid], "decode_ms_per_token"),
            "ms/token",
        ),
        derived(
            _latency_job(
                f"A {REPLY_TOKENS}-token reply ({s.name})",
                f"derived, end to end at N={mid}: TTFT + {REPLY_TOKENS - 1} × decode",
                _by_backend(at[mid], e2e),
                "ms",
                _ttft_common(at[mid]),
            )
        ),
    ]


def derived(job: Job | None) -> Job | None:
    """A figure computed from measured ones: shown, never ranked beside what was measured."""
    if job is None:
        return None
    return replace(
        job,
        best=None,
        verdict="derived from the measured TTFT and decode step, not a measured call: "
        "not ranked beside measured figures",
        latency=False,
    )


def json_jobs(s, quality: str | None) -> list[Job | None]:
    """The JSON section's summary rows: the valid share per mode (a winner only without a tie) and the
    grammar's decode cost per backend, shown as not resolved where it is inside the noise."""
    out: list[Job | None] = []
    rates = s.data["rates"]
    for mode in s.data["modes"]:
        g = rates[rates["mode"] == mode]
        per = {
            b: (int(x["valid"].sum()), int(x["n"].sum()))
            for b, x in g.groupby("backend", sort=False)
            if x["n"].sum()
        }
        if not per:
            continue
        order, best, verdict = rate_ranking({b: k / n for b, (k, n) in per.items()})
        shown = [(b, f"{fmt.pct(per[b][0] / per[b][1])} ({per[b][0]} of {per[b][1]})") for b in order]
        out.append(
            Job(
                f"JSON output, mode '{mode}' ({s.name})",
                "valid JSON, all temperatures",
                shown,
                best,
                verdict,
                quality,
            )
        )
    over = s.data["overhead"]
    if not over.empty:
        shown = []
        for r in over.to_dict("records"):
            c, u = r["constrained"], r["unconstrained"]
            noise = ((c.q3 - c.q1) + (u.q3 - u.q1)) / 2
            sign = "+" if r["extra_ms"] >= 0 else "−"
            text = (
                f"{sign}{fmt.n(abs(r['extra_ms']))} ms/token ({sign}{fmt.rel(abs(r['extra_ms']) / u.median)})"
            )
            shown.append(
                (
                    r["backend"],
                    text
                    if abs(r["extra_ms"]) > noise
                    else f"not resolved ({text}, inside ±{fmt.n(noise)} ms)",
                )
            )
        out.append(
            Job(
                f"Grammar cost ({s.name})",
                f"decode ms/token, '{over['mode'].iloc[0]}' − '{over['base'].iloc[0]}' on the same prompts",
                shown,
                None,
                "a cost, not ranked",
            )
        )
    return out


def template_job(s, quality: str | None) -> Job | None:
    """The summary row of a template workload: each backend's clean-answer rate in its best format, best
    first; a winner is named only when it is strictly ahead of the next (not with one backend or a tie).
    ``quality`` is the caution under the row (random weights); None without rates."""
    rates = s.data["rates"]
    if rates.empty:
        return None
    best = {
        b: g.sort_values("rate", ascending=False).iloc[0] for b, g in rates.groupby("backend", sort=False)
    }
    order, winner, verdict = rate_ranking({b: float(r["rate"]) for b, r in best.items()})
    shown = [
        (b, f"{fmt.pct(best[b]['rate'])} ({best[b]['clean']} of {best[b]['n']}, {best[b]['format']})")
        for b in order
    ]
    return Job(
        f"Short exact answers ({s.name})",
        "clean-answer rate of each backend's best format",
        shown,
        winner,
        verdict,
        quality,
    )


def rate_ranking(rates: dict[str, float]) -> tuple[list[str], str | None, str]:
    """A quality rate's ranking (valid JSON, clean answers: counts, not timings, so no spread to beat): the
    backends best first, the winner where it is strictly ahead of the next, and the verdict ("one backend",
    "a tie", or "" where there is a winner)."""
    order = sorted(rates, key=lambda b: -rates[b])
    tie = len(order) < 2 or rates[order[0]] == rates[order[1]]
    return order, None if tie else order[0], "one backend" if len(order) < 2 else ("a tie" if tie else "")


def kv_tokens(start: dict[str, Any]) -> float | None:
    if start.get("kv_cache_tokens") is not None:
        return num(start["kv_cache_tokens"])
    engine = start.get("engine") or {}
    if engine.get("max_total_num_tokens"):
        return num(engine["max_total_num_tokens"])
    if engine.get("kv_cache_blocks") and engine.get("block_size"):
        return float(engine["kv_cache_blocks"] * engine["block_size"])
    return None


def deployment_jobs(report: Report) -> list[Job]:
    """Start-up seconds, KV-cache capacity and peak GPU
    memory per backend, over its engine starts (env.json)."""
    facts: dict[str, list[tuple[str, str]]] = {"startup": [], "kv": [], "mem": []}
    for b in report.ds.backends:
        starts = report.ds.start_envs(b)
        up = spread(s.get("startup_s") for s in starts)
        kv = spread(kv_tokens(s) for s in starts)
        mem = spread(
            num(s.get("peak_gpu_memory_bytes")) / 2**30 if num(s.get("peak_gpu_memory_bytes")) else None
            for s in starts
        )
        for key, st, unit in (("startup", up, "s"), ("kv", kv, "tokens"), ("mem", mem, "GiB")):
            if st.ok:
                rng = f" [{fmt.n(st.lo)}–{fmt.n(st.hi)}]" if st.n > 1 and st.lo != st.hi else ""
                facts[key].append(
                    (b, f"{fmt.n(st.median)} {unit}{rng} ({st.n} start{'s' if st.n > 1 else ''})")
                )
    labels = {
        "startup": (
            "Engine start-up",
            "seconds from constructing the backend to ready (load, compile, warm-up)",
        ),
        "kv": ("KV-cache capacity", "tokens the engine's KV pool holds (HF: no fixed pool)"),
        "mem": (
            "Peak GPU memory",
            "whole-GPU memory in use at its peak, less what was in use before the start",
        ),
    }
    return [Job(labels[k][0], labels[k][1], v, None, "a fact, not ranked") for k, v in facts.items() if v]


def jobs(report: Report) -> list[Job]:
    from reports.kinds import report_kind

    out: list[Job | None] = []
    measured = report.ds.measured()
    for s in report.sections:
        kind = report_kind(s.kind) if s.kind else None
        if not s.data or kind is None:
            continue
        out += kind.jobs(s, measured[measured["workload"] == s.name], report)
    out += deployment_jobs(report)
    from reports.analysis.run_context import annotate

    return [annotate(report, j) for j in out if j is not None]
