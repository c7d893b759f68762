"""JSON section: valid JSON vs temperature, per-backend
tables, grammar overhead, step-0 candidates, failures."""

from __future__ import annotations

from typing import Any

from markupsafe import Markup

from llm_call_anatomy.reports import fmt
from llm_call_anatomy.reports.kinds import ReportKind, quality_caution
from llm_call_anatomy.reports.stats import stat_of
from llm_call_anatomy.reports.views import (
    Block,
    Table,
    chart,
    compact,
    details,
    h3,
    p,
    reply,
    side,
    table,
    tokens,
)
from llm_call_anatomy.workloads.json.report import analysis as jx
from llm_call_anatomy.workloads.json.report import charts, jobs


def rate_table(rates, backend: str) -> Table:
    """One backend's JSON table: per mode and temperature the valid calls of all, the correct ones of those
    with expected values ('–' where none has), and latency and decode as median and spread."""
    t = Table(
        ["mode", "T", "valid", "correct", "latency per call ms", "decode ms/token"], numeric={1, 2, 3, 4, 5}
    )
    for x in rates[rates["backend"] == backend].to_dict("records"):
        t.add(
            [
                x["mode"],
                fmt.n(x["temperature"], 1),
                f"{x['valid']}/{x['n']} ({fmt.pct(x['pass_rate'])})",
                f"{x['correct']}/{x['correct_n']}" if x["correct_n"] else "–",
                fmt.stat(stat_of(x, "latency")),
                fmt.stat(stat_of(x, "decode")),
            ]
        )
    return t


def overhead_table(overhead) -> Table:
    """The grammar's cost per backend: decode ms/token of each grammar mode beside the same prompts without a
    grammar, and the difference in ms and as a ratio."""
    t = Table(
        [
            "backend",
            "grammar mode",
            "decode ms/token",
            "same prompts, no grammar",
            "decode ms/token",
            "difference",
        ],
        numeric={2, 4, 5},
    )
    for o in overhead.to_dict("records"):
        t.add(
            [
                o["backend"],
                o["mode"],
                fmt.stat(o["constrained"]),
                o["base"],
                fmt.stat(o["unconstrained"]),
                f"{fmt.n(o['extra_ms'])} ms ({fmt.times(o['ratio'])})",
            ]
        )
    return t


def candidate_table(c) -> Table:
    t = Table(["#", "token", "logit", "p"], numeric={0, 2, 3})
    for r in c.rows:
        t.add(
            [
                r["rank"],
                tokens([r["text"]], 0 if r["fence"] else None),
                fmt.n(r["logit"], 2),
                fmt.n(r["prob"]),
            ]
        )
    return t


def failures(d: dict[str, Any], backends: list[str]) -> list[Block]:
    """One fold per backend and mode with failing replies: how many and why, and the replies shown."""
    out: list[Block] = []
    fails, counts = d["failures"], d["failure_counts"]
    for b in backends:
        for mode in d["modes"]:
            rows = fails[(fails["backend"] == b) & (fails["mode"] == mode)] if not fails.empty else fails
            if not len(rows):
                continue
            kinds = counts[(counts["backend"] == b) & (counts["mode"] == mode)]
            how = ", ".join(f"{k['why']} {k['count']}" for k in kinds.to_dict("records"))
            children: list[Block] = []
            for f in rows.to_dict("records"):
                children += [
                    p(
                        f"T={fmt.n(f['temperature'], 1)} · {f['case']} · "
                        f"finish {f['finish_reason'] or '?'} · {f['why']}",
                        muted=True,
                    ),
                    reply(f["text"]),
                ]
            out.append(
                details(f"{b} · {mode}: {int(kinds['count'].sum())} failed ({how}); up to 4 shown", children)
            )
    return out


def blocks(section, slots: dict[str, Markup]) -> list[Block]:
    """The JSON section's blocks: valid share vs temperature, the grammar's overhead, step-0 candidates, the
    seed's JSON claims per backend, and the failing replies."""
    d = section.data
    out: list[Block | None] = [
        h3("Valid JSON vs temperature"),
        chart(slots["pass"]),
        side([(b, [table(rate_table(d["rates"], b))]) for b in section.backends]),
        p(
            "Valid = parses with json.loads as it is (no fence stripping) and "
            "validates against the workload's schema; correct = valid and "
            "equal to the expected values. Latency per call is end to end.",
            muted=True,
        ),
    ]
    if not d["overhead"].empty:
        out += [h3("Grammar overhead"), table(overhead_table(d["overhead"]))]
    if d["candidates"]:
        out += [
            h3("Step-0 candidates"),
            p(
                "Top candidates for the first token, per mode; a Markdown fence or backtick is "
                "highlighted. Where a logit is shown (HF) they are the model's own preference, "
                "before any grammar mask; backends that report their sampler's log-probabilities "
                "(vLLM, SGLang) show them after the mask in a grammar mode, marked below."
            ),
            side(
                [
                    (
                        f"{c.backend} · {c.mode}"
                        + (f" · fence at rank {c.fence_rank}" if c.fence_rank else "")
                        + (" · after the grammar mask" if c.after_mask else ""),
                        [table(candidate_table(c))],
                    )
                    for c in d["candidates"]
                ]
            ),
        ]
    if d.get("claims"):
        t = Table(["backend", "the seed's claim", "for this model", "from"])
        for c in d["claims"]:
            shown = (
                Markup('<b class="verdict-{}">{}</b>').format(c.verdict.replace(" ", "-"), c.verdict)
                if c.verdict != jx.RANDOM
                else Markup('<span class="muted">{}</span>').format(c.verdict)
            )
            t.add([c.backend, c.claim, shown, c.evidence])
        out += [
            h3("The seed's claims about JSON output"),
            p(
                "Each judged per backend from these calls, all temperatures pooled, by a 95 % "
                "interval of the counts (Wilson; Newcombe for the strict-vs-free difference): "
                "'not decided' where the interval crosses the line, 'holds' and 'does not hold' "
                "about this model and these prompts; on random weights none is measurable."
            ),
            table(t),
        ]
    out.append(h3("Failing replies"))
    fail_blocks = failures(d, section.backends)
    out += fail_blocks or [p("No reply failed validation.", muted=True)]
    return compact(out)


KIND = ReportKind(
    "json",
    jx.data,
    blocks=lambda s, slots, report: blocks(s, slots),
    charts={"pass": (lambda d, r: charts.json_pass(d["rates"]), "JSON pass rate vs temperature")},
    caveats=lambda s, report: jx.caveats(s),
    jobs=lambda s, rows, report: jobs.json_jobs(s, quality_caution(report)),
    quality_note=(
        "Random weights: not a quality figure. Validity without a grammar, "
        "correctness, the step-0 candidates and the seed's claims below describe "
        "noise; the grammar's guarantee of form and its cost per token still hold."
    ),
)
