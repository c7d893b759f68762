"""The server's own timings in the Load tables: one way to write them, and the words that define them.

A server's /metrics histogram over a level gives an exact mean (its sum ÷ count) and a p50 that is
only as fine as the bucket it falls in. The cells show the mean first and the p50 as a figure only
where its bucket is narrow; where the bucket is wide (``wide``: the first bucket, from 0; the
open-ended +Inf bucket; or an upper bound at least ``WIDE`` times the lower) they show the bucket
instead: "19.9 · p50 in (0, 100]", "7.41 · p50 > 40,000", "5.08 · p50 4.93". Server TPOT is the
server's per-request TPOT histogram (vLLM); a server without one but with an inter-token histogram
(SGLang) gives that, per token, labelled so. A backend over HTTP whose server exports no latency
histograms (transformers serve) reads "not exported", and ``definitions`` says why once.
"""

from __future__ import annotations

from typing import Any

from llm_call_anatomy.reports import fmt
from llm_call_anatomy.reports.stats import num

WIDE = 2.0  # a bucket whose upper bound is at least this many times its lower says little inside it
NOT_EXPORTED = "not exported"
NOT_RECORDED = "not recorded"


def wide(bounds: tuple[float, float | None] | None) -> bool:
    """The p50's bucket is too wide for the interpolated figure to mean anything (see the module)."""
    if bounds is None:
        return False
    lower, upper = bounds
    return upper is None or lower <= 0 or upper >= WIDE * lower


def p50_text(p50: Any, bounds: Any) -> str:
    """ "p50 4.93" in a narrow bucket, "p50 in (0, 100]" in a wide one, "p50 > 40,000" in +Inf."""
    bounds = bounds if isinstance(bounds, tuple) else None
    if wide(bounds):
        lower, upper = bounds
        return f"p50 > {fmt.n(lower)}" if upper is None else f"p50 in ({fmt.n(lower)}, {fmt.n(upper)}]"
    return f"p50 {fmt.n(p50)}" if num(p50) is not None else ""


def mean_and_p50(r: dict[str, Any], fig: str, label: str = "") -> str:
    """One server figure of a level: "mean · p50" (``label`` after the mean), or why there is none."""
    state = r.get("server_metrics")
    if state != "recorded":
        return state if isinstance(state, str) else "–"
    mean, p50 = num(r.get(f"server_{fig}_mean")), num(r.get(f"server_{fig}_p50"))
    if mean is None and p50 is None:
        return "–"
    parts = [fmt.n(mean) + (f" ({label})" if label else "")] if mean is not None else []
    p50_part = p50_text(p50, r.get(f"server_{fig}_p50_bucket"))
    return " · ".join(parts + ([p50_part] if p50_part else []))


def ttft_cell(r: dict[str, Any]) -> str:
    """The server's TTFT: "19.9 · p50 in (0, 100]"."""
    return mean_and_p50(r, "ttft")


def tpot_cell(r: dict[str, Any]) -> str:
    """The server's TPOT where it has a per-request histogram, else its ITL (per token), labelled."""
    tpot, itl = num(r.get("server_tpot_mean")), num(r.get("server_itl_mean"))
    if r.get("server_metrics") == "recorded" and tpot is None and itl is not None:
        return mean_and_p50(r, "itl", "ITL per token")
    return mean_and_p50(r, "tpot", "TPOT")


def ttft_mean_cell(r: dict[str, Any]) -> str:
    """The server's exact mean TTFT, its count beside it where it is not the level's served requests."""
    state = r.get("server_metrics")
    if state != "recorded":
        return state if isinstance(state, str) else "–"
    n, served = num(r.get("server_ttft_n")), num(r.get("requests"))
    return fmt.n(r.get("server_ttft_mean")) + (f" (n {fmt.n(n)})" if n is not None and n != served else "")


def not_exported(levels) -> list[str]:
    """The backends whose server exports no latency histograms at /metrics."""
    rows = levels[levels["server_metrics"] == NOT_EXPORTED]
    return list(dict.fromkeys(rows["backend"]))


def definitions(levels) -> str:
    """The sentences that define the server's figures and caller − server, and, once, why a backend has
    none."""
    text = (
        "Server TTFT / TPOT: the server's own /metrics histograms over the level (scraped before and "
        "after it and differenced): the mean is exact (the histogram's sum ÷ count); the p50 is "
        "interpolated within its bucket, so where that bucket is wide (the first one, from 0; the +Inf "
        f"one; or an upper bound ≥ {WIDE:g}× the lower) the bucket is given instead: "
        '"19.9 · p50 in (0, 100]" is a mean of 19.9 ms and a median somewhere in (0, 100 ms]. Server '
        "TPOT is the server's per-request TPOT histogram (vLLM); a server without one (SGLang) gives "
        'its inter-token histogram, per token, labelled "ITL per token". Caller − server = the '
        "caller's mean TTFT over the level's served requests minus the server's mean TTFT (two exact "
        "means; the p50s are not comparable across buckets): the client, the network and the HTTP "
        "front end (\"(n N)\" beside the server's mean: it counted N requests, not the level's served ones)."
    )
    missing = not_exported(levels)
    if missing:
        text += (
            f" {', '.join(missing)}: server figures {NOT_EXPORTED}: its server gave no latency "
            "histograms at /metrics (transformers serve exports none), so its TTFT cannot be split "
            "into server and client."
        )
    if (levels["server_metrics"] == NOT_RECORDED).any():
        text += (
            f" {NOT_RECORDED}: a level of a server that has /metrics whose record holds no latency "
            "histograms (a run from before the harness read them, or scrapes that gave none)."
        )
    return text
