"""Sections that span workloads: the summary, backend status, agreement, client vs server TTFT, caveats."""

from __future__ import annotations

from markupsafe import Markup

from llm_call_anatomy.reports import fmt, kinds
from llm_call_anatomy.reports.analysis import agreement as agreement_analysis
from llm_call_anatomy.reports.stats import spread
from llm_call_anatomy.reports.views import Block, Table, bullets, chart, compact, details, h3, note, p, table


def jobs_table(report) -> Table:
    """The summary's 'which stack for which job' table: per job the figure compared, the winner in bold with
    its margin (or, muted, why none is named), every backend's values, and the job's caution as a warning. The
    settings that differ between the compared columns (dtype, endpoint, KV pool...) are said first in the
    verdict's cell, before the winner."""
    t = Table(
        [
            "job",
            "figure compared",
            "best, and the margin to the next",
            "every backend (best first): median ±spread within a start (starts ±spread across them, n)",
        ]
    )
    for j in report.jobs:
        if j.best:
            best = Markup("<b>{}</b> {}").format(j.best, j.verdict)
        else:
            best = Markup('<span class="muted">{}</span>').format(j.verdict)
        if j.differs:
            best = Markup('<span class="warn">{}</span><br>{}').format(j.differs, best)
        values = Markup("<br>").join(Markup("<b>{}</b> {}").format(b, v) for b, v in j.values)
        cell = Markup('{}<br><span class="warn">{}</span>').format(values, j.caution) if j.caution else values
        t.add([j.job, j.figure, best, cell])
    return t


def status_table(report) -> Table:
    """The Backends table: each backend's state, requests measured, failures (count and first error), skipped
    work grouped by reason, and planned load levels with no records (the run stopped before them); the row is
    styled by its state."""
    t = Table(["backend", "status", "requests measured", "failed", "skipped, with the reason"], numeric={2})
    for st in report.status:
        by_reason: dict[str, list[str]] = {}
        for wl, mode, reason in st.skipped:
            by_reason.setdefault(reason, []).append(f"{wl} / {mode}" if mode else wl)
        lines = [f"{reason} ({', '.join(where)})" for reason, where in by_reason.items()]
        if st.missing:
            lines.append(
                "not run (planned load levels with no records: the "
                f"run stopped before them): {', '.join(st.missing)}"
            )
        skipped = Markup("<br>").join(lines)
        failed = f"{st.errors}: {st.first_error}" if st.first_error else str(st.errors)
        t.add([st.backend, st.state, st.measured, failed, skipped], f"state-{st.state.replace(' ', '-')}")
    return t


CALLER_TTFT = (
    "TTFT at the caller: from submitting the request (after the untimed cache reset and a device "
    "synchronization) to the first generated token being available to the calling code, the device "
    "synchronized where it applies; the same definition for every backend"
)  # as backends.base.TTFT_DEFINITION
LOAD_TTFT = (
    "TTFT at the caller, under load: from a request's submit in its level (the cache is reset before the "
    "level's untimed warm-up, not before each request) to its first generated token being available to the "
    "calling code; the same definition for every backend"
)  # a page of load levels only: batch-1's reset before every request does not apply


def ttft_definition(report) -> list[Block]:
    """The one TTFT definition the page compares on (a page of load levels only: from the request's submit),
    and which columns do not meet it (old runs)."""
    defs = [((e.get("timing_definitions") or {}).get("ttft_ms")) for e in report.ds.envs.values()]
    text = next((d for d in defs if d), None)
    found = [kinds.report_kind(s.kind) for s in report.sections if s.kind]
    if found and all(k is not None and k.steady_state for k in found):  # a page of load levels only
        text = LOAD_TTFT
    out = [p(Markup("<b>How TTFT is compared</b> — {}.").format(text.rstrip(".") if text else CALLER_TTFT))]
    df = report.ds.measured()
    old = [
        b
        for b, g in df.groupby("backend", sort=False)
        if g["ttft_ms"].notna().any() and not g["ttft_common"].all()
    ]
    if old:
        out.append(
            note(
                f"{', '.join(old)}: these runs predate the common definition; their ttft_ms is the engine's "
                "own internal figure (timing_source engine-metrics: from the request's arrival in the engine "
                "to the first token leaving it, without the way to and from the caller). They are shown, but "
                "not ranked against caller-measured TTFTs."
            )
        )
    return out


def summary(report) -> list[Block]:
    """The summary section: the TTFT definition, the jobs table with the rule for naming a winner in words (a
    muted line where nothing was measured), and the Backends table."""
    out: list[Block | None] = [h3("Which stack for which job"), *ttft_definition(report)]
    out.append(
        table(jobs_table(report)) if report.jobs else p("No backend produced measurements.", muted=True)
    )
    if report.jobs:
        out.append(
            p(
                "A winner is named only where the gap to the next backend beats the spread within a start "
                "(both backends' added) and the larger range of per-start medians, every engine start of the "
                "winner is ahead of every start of the next, and both have at least two engine starts. "
                "Derived figures are shown, not ranked. The warnings under a job's figures say what its "
                "ranking rests on: a column from another run (day, machine or commit), a GPU host shared "
                "with another engine, a launch-bound model.",
                muted=True,
            )
        )
    out += [h3("Backends"), table(status_table(report))]
    return compact(out)


RANDOM_QUALITY = (
    "Random weights: not a quality figure. Which answers the backends agree on means nothing here."
)


def _split_cells(a: dict) -> list[str]:
    if not a["informative"]:
        return ["not informative", "not informative", "–", a["why"]]
    splits = ", ".join(
        f"{n} {what}"
        for n, what in (
            (a["near_tie"], "at a near-tie"),
            (a["clear"], "at a clear margin"),
            (a["no_margin"], "margin not recorded"),
        )
        if n
    )
    return [
        f"{a['same_first']} of {a['cases']}",
        f"{a['identical']} of {a['cases']} ({fmt.pct(a['share'])})",
        fmt.n(a["median_divergence"]),
        splits or "–",
    ]


def agreement_table(summ) -> Table:
    """Agreement per workload and backend against the reference backend: same first token, same whole output,
    the median first difference and whether the splits were near-ties or clear margins ('not informative'
    where the step-0 candidates were flat)."""
    t = Table(
        [
            "workload",
            "backend",
            "vs",
            "same first token",
            "same whole output",
            "median first difference",
            "where they split",
        ],
        numeric={3, 4, 5},
    )
    for a in summ.to_dict("records"):
        t.add([a["workload"], a["backend"], a["reference"], *_split_cells(a)])
    return t


def case_table(cases) -> Table:
    """The per-call agreement table: one row per compared call, whether the outputs match, the first differing
    position, the tokens compared (the shorter output), and the log-prob margin each side reported there ('–'
    where they match)."""
    t = Table(
        [
            "workload",
            "mode",
            "case",
            "turn",
            "rep",
            "backend",
            "vs",
            "same output",
            "first difference",
            "tokens",
            "margin there (vs / backend)",
        ],
        numeric={3, 4, 8, 9, 10},
    )
    for a in cases.to_dict("records"):
        margins = (
            "–" if a["identical"] else f"{fmt.n(a['margin_reference'], 3)} / {fmt.n(a['margin_backend'], 3)}"
        )
        t.add(
            [
                a["workload"],
                a["mode"],
                a["case"],
                fmt.n(a["turn"]),
                fmt.n(a["rep"]),
                a["backend"],
                a["reference"],
                "yes" if a["identical"] else "no",
                fmt.n(a["first_divergence"]),
                a["tokens"],
                margins,
            ]
        )
    return t


def agreement(report, slot: Markup) -> list[Block]:
    """The agreement section's blocks: how each backend's T=0 tokens compare with the reference's (chart,
    table, per call), and cached vs full on the same backend; a note when fewer than two backends have T=0
    replies."""
    summ, cases = report.agreement_summary, report.agreement_cases
    out: list[Block | None] = [note(RANDOM_QUALITY)] if report.random_weights else []
    if summ.empty:
        ran = [st.backend for st in report.status if st.measured]
        out.append(
            p(
                "Needs at least two backends with greedy (T=0) "
                f"replies; {', '.join(ran) or 'none'} produced them.",
                muted=True,
            )
        )
    else:
        out += [
            p(
                f"Each backend's token ids compared with {summ['reference'].iloc[0]}'s for the same "
                "prompt at T=0. Where they differ, the first difference is the number of leading tokens "
                "they share, and the margin there is the gap between the two best candidates' "
                "log-probabilities as each engine reported them: below "
                f"{fmt.n(agreement_analysis.NEAR_TIE)} nat a split is a near-tie (bf16 rounding can swap "
                "such candidates), above it a clear margin (the engines computed different things: worth "
                "a look). Where a backend's step-0 candidates are all equally likely (dummy weights: "
                "flat logits), every engine breaks the tie the same way, so matches are not informative."
            ),
            chart(slot),
            table(agreement_table(summ)),
            details("per call", [table(case_table(cases))]),
        ]
    cached = report.agreement_cached_summary
    if not cached.empty:
        t = Table(
            [
                "workload",
                "backend",
                "same first token",
                "same whole output",
                "median first difference",
                "where they split",
            ],
            numeric={2, 3, 4},
        )
        for a in cached.to_dict("records"):
            t.add([a["workload"], a["backend"], *_split_cells(a)])
        out += [
            h3("Cached vs full, same backend"),
            p(
                "Each conversation turn at T=0 run with the prefix cache (cached) and "
                "after a reset (full): the same prompt, so the same tokens are expected; a "
                "split at a clear margin means reusing the cache changed the computation."
            ),
            table(t),
            details("per call", [table(case_table(report.agreement_cached))]),
        ]
    return compact(out)


# above PER_REQUEST_ROWS requests the fold keeps the LARGEST_PER_GROUP largest differences of each backend and
# workload (a load page has tens of thousands of requests: megabytes of rows nobody reads)
PER_REQUEST_ROWS = 400
LARGEST_PER_GROUP = 10


def per_request_rows(df, limit: int = PER_REQUEST_ROWS, largest: int = LARGEST_PER_GROUP):
    """The per-request rows the fold shows and its title: every request up to ``limit``; above it, for each
    backend and workload the ``largest`` caller − engine differences (the tail worth reading), in the records'
    order, with the title saying how many of how many (every request stays in the records)."""
    if len(df) <= limit:
        return df, "per request"
    df = df.reset_index(drop=True)
    gap = df["difference_ms"].abs().fillna(-1.0)  # a request without the engine's figure last
    keep = (
        df.assign(_gap=gap)
        .sort_values("_gap", ascending=False, kind="stable")
        .groupby(["backend", "workload"], sort=False)
        .head(largest)
        .index
    )
    shown = df[df.index.isin(keep)]
    return shown, (
        f"per request: the {largest} largest differences of each backend and workload "
        f"({len(shown):,} of {len(df):,} requests; all are in the records)"
    )


def server(report) -> list[Block]:
    """The caller-vs-engine TTFT blocks, where an engine reports its own TTFT: a summary per backend and
    workload, and the requests' figures in a fold (``per_request_rows``: all of them, or on a page of many
    the largest differences)."""
    df = report.server
    if df.empty:
        return []
    summary = Table(
        [
            "backend",
            "workload",
            "requests",
            "caller TTFT ms (the common one)",
            "engine's own TTFT ms",
            "caller − engine ms",
        ],
        numeric={2, 3, 4, 5},
    )
    for (backend, workload), g in df.groupby(["backend", "workload"], sort=False):
        summary.add(
            [
                backend,
                workload,
                len(g),
                fmt.stat(spread(g["client_ttft_ms"])),
                fmt.stat(spread(g["server_ttft_ms"])),
                fmt.stat(spread(g["difference_ms"])),
            ]
        )
    t = Table(
        [
            "backend",
            "workload",
            "mode",
            "case",
            "rep",
            "caller TTFT ms",
            "engine TTFT ms",
            "difference ms",
            "server prefill ms",
            "decode ms/token caller / engine",
        ],
        numeric={4, 5, 6, 7, 8, 9},
    )
    shown, title = per_request_rows(df)
    for r in shown.to_dict("records"):
        t.add(
            [
                r["backend"],
                r["workload"],
                r["mode"],
                r["level"],
                fmt.n(r["rep"]),
                fmt.n(r["client_ttft_ms"]),
                fmt.n(r["server_ttft_ms"]),
                fmt.n(r["difference_ms"]),
                fmt.n(r["server_prefill_ms"]),
                f"{fmt.n(r['client_decode_ms_per_token'])} / {fmt.n(r['server_decode_ms_per_token'])}",
            ]
        )
    return [
        h3("Caller vs engine TTFT"),
        p(
            "Where the engine (or the server's /metrics) reports its own TTFT, it "
            "is shown next to the caller's, under its own name: the difference is "
            "the way to and from the engine (scheduling, IPC, HTTP)."
        ),
        table(summary),
        details(title, [table(t)]),
    ]


def caveats(report) -> list[Block]:
    items: list[Markup | str] = [
        Markup('<span class="topic">{}</span> {}').format(c.topic, c.text) for c in report.caveats
    ]
    return [
        p("Derived from these runs' numbers; each cites the figures it rests on.", muted=True),
        bullets(items or ["None derived."]),
    ]
