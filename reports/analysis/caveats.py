"""Caveats derived from the data, each citing the figures it rests on; nothing is written in advance.

Each rule looks at one analysis result and returns sentences only where the numbers support
them. A kind's own rules live with its analysis (``ReportKind.caveats``: a cache break-even,
block rounding and prefix breaks in ``conversation``; a fitted floor, the roofline and launch
overhead in ``sweep``; grammar overhead in ``json_extraction``; the load's in ``many_users``);
this module keeps the loop over the kinds and the rules across workloads
(disagreement across backends, weaker timing sources, server-side timing, and prefix reuse under load
counted in whole KV blocks: :func:`block_reuse`).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from llm_call_anatomy.reports import fmt
from llm_call_anatomy.reports.kinds import report_kind
from llm_call_anatomy.reports.kvcache import block_size
from llm_call_anatomy.reports.model import Caveat, Report
from llm_call_anatomy.reports.stats import num, spread

TIMING_NOTES = {
    "max_tokens-differential": (
        "TTFT is a separate 1-token call and decode the difference (the engine does not stream here)"
    ),
    "e2e-only": "only end-to-end time is known (no TTFT or decode split)",
    "client-stream": "timed from the client's stream, so HTTP and detokenisation are included",
}


def derive(report: Report) -> list[Caveat]:
    """Every caveat of the report, in page order: random weights first, then each section's own rules (its
    report kind's ``caveats``, found through the registry), then the rules across workloads: agreement, weaker
    timing sources, server-side timing. The same caveat (topic and text) twice is kept once."""
    out: list[Caveat] = []
    if report.random_weights:
        out.append(
            Caveat(
                "model",
                f"Weights are random ({report.random_weights}): latency and cache figures hold; quality "
                "figures (JSON validity without a grammar, clean answers, agreement) do not.",
            )
        )
    for section in report.sections:
        kind = report_kind(section.kind) if section.kind else None
        if kind is not None and section.data:
            out += kind.caveats(section, report)
    out += agreement(report.agreement_summary, report.agreement_cached_summary)
    out += timing(report.ds.measured())
    out += server(report.server, {b: report.ds.env_of(b).get("engine") or {} for b in report.ds.backends})
    out += configurations({b: report.ds.env_of(b) for b in report.ds.backends}, report.ds)
    out += block_reuse(
        report.ds.measured(),
        {b: block_size(report.ds.env_of(b).get("engine") or {}) for b in report.ds.backends},
    )
    return list(dict.fromkeys(out))  # a page-wide fact that several sections found is said once


def over_http(engine: dict[str, Any]) -> bool:
    """Whether a column's requests went over HTTP to a server, not to an engine in the harness's process: an
    env fact, the server's URL in its env.json ``engine`` block (every OpenAI-compatible adapter writes
    ``base_url``; an engine in process has none)."""
    return bool(engine.get("base_url"))


def configurations(blocks: dict[str, dict[str, Any]], ds: Any = None) -> list[Caveat]:
    """A ``base@variant`` column's configuration (issue 41): its settings as given, and where its engine
    reports them, as reported, and those it reports otherwise (the engine ignored or changed them: the column
    is not the configuration its name says). From env.json (the column's ``variant``; a column whose engine
    never started: the run's ``variants``)."""
    out = []
    for label, block in blocks.items():
        found = block.get("variant") or (
            (ds.run_env_of(label).get("variants") or {}).get(ds.sources.get(label, (None, label))[1])
            if ds is not None
            else None
        )
        if not found:
            continue
        given = found.get("settings") or {}
        shown = ", ".join(f"{k}={v}" for k, v in given.items())
        text = f"{label} is {found.get('base')} with {shown} ({found.get('source', 'given')})"
        reported = found.get("reported")
        if reported is None:
            text += "; its engine did not start, so nothing says how it ran"
        else:
            said = {k: v for k, v in reported.items() if v is not None}
            unsaid = [k for k in given if k not in said]
            if said:
                text += "; its engine reports " + ", ".join(f"{k}={v}" for k, v in said.items())
            if unsaid:
                text += f"; not reported by the engine: {', '.join(unsaid)}"
        differs = found.get("differs") or {}
        if differs:
            text += (
                ". The engine ignored or changed "
                + ", ".join(f"{k} (given {d['given']}, ran {d['reported']})" for k, d in differs.items())
                + ": this column is not the configuration its name says"
            )
        out.append(Caveat("configuration", text + "."))
    return out


# --- across workloads -----------------------------------------------------------------------
def agreement(summary: pd.DataFrame, cached: pd.DataFrame | None = None) -> list[Caveat]:
    """The agreement caveats: per backend pair, how many T=0 calls matched token for token and how the others
    split (near-tie or clear margin), or why the comparison says nothing; and where cached and full runs
    disagreed."""
    out = []
    for r in summary.to_dict("records"):
        if not r.get("informative", True):
            out.append(
                Caveat(
                    "agreement",
                    f"{r['backend']} vs {r['reference']} ({r['workload']}): not informative, "
                    f"{r['why']}: identical tokens there say nothing about the engines.",
                )
            )
            continue
        text = (
            f"At T=0 {r['backend']} matched {r['reference']} token for token on {r['identical']} of "
            f"{r['cases']} {r['workload']} calls (same first token on {r['same_first']})"
        )
        if num(r["median_divergence"]) is not None:
            text += (
                "; where they differ, the first different token is "
                f"at index {fmt.n(r['median_divergence'])} (median)"
            )
        if r.get("near_tie") or r.get("clear"):
            text += f": {r['near_tie']} split at a near-tie, {r['clear']} at a clear margin"
        out.append(Caveat("agreement", text + "."))
    for r in (cached if cached is not None else pd.DataFrame()).to_dict("records"):
        if r.get("informative", True) and r["identical"] < r["cases"]:
            out.append(
                Caveat(
                    "agreement",
                    f"{r['backend']}: cached and full gave different tokens on "
                    f"{r['cases'] - r['identical']} of {r['cases']} {r['workload']} calls "
                    f"({r['near_tie']} at a near-tie, {r['clear']} at a clear margin).",
                )
            )
    return out


def timing(df: pd.DataFrame) -> list[Caveat]:
    out = []
    for (backend, source), g in df.groupby(["backend", "timing_source"], sort=False):
        if source in TIMING_NOTES:
            out.append(
                Caveat("timing", f"{backend}: {len(g)} calls timed by '{source}': {TIMING_NOTES[source]}.")
            )
    return out


def server(df: pd.DataFrame, engines: dict[str, dict[str, Any]] | None = None) -> list[Caveat]:
    """The caller's TTFT above the engine's or server's own, per backend column (``engines``: column -> its
    env.json ``engine`` block): over HTTP the gap is the client, HTTP and detokenisation; in process it has
    no HTTP."""
    out = []
    if df.empty:
        return out
    for backend, g in df.groupby("backend", sort=False):
        d = spread(g["difference_ms"])
        if not d.ok:
            continue
        if over_http((engines or {}).get(backend) or {}):
            why = "above the server's own figure (HTTP, queueing and detokenisation)"
        else:
            why = (
                "above the engine's own figure (in process, no HTTP: the engine's output path to the calling "
                "code and, for an engine the harness steps, the step in flight)"
            )
        out.append(Caveat("timing", f"{backend}: the client saw TTFT {fmt.stat(d, 'ms')} {why}."))
    return out


BLOCK_LOSS = 0.10  # block rounding alone keeps this share of the shared tokens from reuse: said


def block_reuse(df: pd.DataFrame, blocks: dict[str, int | None]) -> list[Caveat]:
    """Prefix reuse under load against the engine's KV block size: a prefix cache reuses whole blocks only
    (vLLM 16 tokens by default, SGLang 1 unless ``page_size``), so requests that share less than a block
    with earlier ones reuse nothing, and every shared prefix loses its last partial block. Where that rounding
    alone keeps at least ``BLOCK_LOSS`` of the shared tokens out of reach, one caveat a workload and backend
    says so with its figures: the load's 'reuse expected' counts every shared token, the engine whole
    blocks (the per-turn tables of a conversation round to blocks themselves)."""
    need = {
        "load_concurrency",
        "load_rate_rps",
        "shared_prefix_tokens",
        "prompt_tokens",
        "backend",
        "workload",
    }
    if df.empty or not need <= set(df.columns):
        return []
    loaded = df[
        (df["load_concurrency"].notna() | df["load_rate_rps"].notna()) & (df["shared_prefix_tokens"] > 0)
    ]
    out = []
    for (workload, backend), g in loaded.groupby(["workload", "backend"], sort=False):
        block = blocks.get(backend)
        if not block or block <= 1:
            continue
        shared = g["shared_prefix_tokens"].astype(float)
        usable = pd.concat([shared, g["prompt_tokens"].astype(float) - 1], axis=1).min(axis=1)
        whole = (usable // block) * block
        total, reachable = float(shared.sum()), float(whole.sum())
        if not total or (total - reachable) / total < BLOCK_LOSS:
            continue
        short = int((shared < block).sum())
        out.append(
            Caveat(
                str(workload),
                f"{backend} reuses a cached prefix in whole blocks of {block} tokens (its KV cache's block "
                f"size): of the {fmt.n(total)} prompt tokens its requests share with earlier ones (the "
                f"'reuse expected'), {fmt.n(reachable)} ({fmt.pct(reachable / total)}) fall in whole blocks"
                + (
                    f"; {short} of {len(g)} requests share fewer than {block} tokens and reuse none"
                    if short
                    else ""
                )
                + ". A reported reuse below the expected one is this rounding before it is a cache miss.",
            )
        )
    return out
