"""Template section: clean answers per backend × format, one reply per format, attention on special tokens."""

from __future__ import annotations

from markupsafe import Markup

from llm_call_anatomy.reports import fmt
from llm_call_anatomy.reports.kinds import ReportKind, quality_caution
from llm_call_anatomy.reports.views import Block, Table, chart, compact, h3, p, reply, side, table
from llm_call_anatomy.workloads.template.report import analysis as tpl
from llm_call_anatomy.workloads.template.report import charts, jobs


def rate_table(rates, backends: list[str]) -> Table:
    t = Table(["format", *backends], numeric=set(range(1, len(backends) + 1)))
    for f in dict.fromkeys(rates["format"]):
        row: list = [f]
        for b in backends:
            x = rates[(rates["backend"] == b) & (rates["format"] == f)]
            row.append(
                f"{x['clean'].iloc[0]}/{x['n'].iloc[0]} ({fmt.pct(x['rate'].iloc[0])})" if len(x) else "–"
            )
        t.add(row)
    return t


def sink_text(sink: dict[str, float] | None) -> str:
    caveat = (
        "The seed's caveat: position 0 is an attention sink in most models (heads with nothing to attend to "
        "park their weight there), and the prompt starts with a special token, so a high share is not by "
        "itself attention to the template's markers."
    )
    if sink is None:
        return caveat
    return (
        f"{caveat} Here position 0 alone takes {fmt.pct(sink['position0'])} of it (median over layers, of a "
        f"total {fmt.pct(sink['share'])}); the other special tokens take {fmt.pct(sink['rest'])}."
    )


def blocks(section, slots: dict[str, Markup]) -> list[Block]:
    """The template section's blocks: clean answers per format, one reply per format and backend, and the
    attention on special tokens per layer where a backend recorded it."""
    d = section.data
    out: list[Block | None] = [h3("Clean answers per format")]
    if d["rates"].empty:
        out.append(p("No scored answers.", muted=True))
    else:
        out += [
            table(rate_table(d["rates"], section.backends)),
            p(
                "Clean = the reply, stripped of surrounding whitespace, is "
                "exactly the short answer and the model stopped on its own.",
                muted=True,
            ),
        ]
    samples = d["samples"]
    if not samples.empty:
        panels = []
        for b in section.backends:
            children: list[Block] = []
            for x in samples[samples["backend"] == b].to_dict("records"):
                state = {True: "clean", False: "not clean"}.get(x["clean"], "not scored")
                children += [
                    p(
                        f"{x['format']} · {x['case']} · {state} · finish {x['finish_reason'] or '?'}",
                        muted=True,
                    ),
                    reply(x["text"]),
                ]
            panels.append((b, children))
        out += [h3("One reply per format"), side(panels)]
    att = d["attention"]
    if not att.empty:
        out += [
            h3("Attention on special tokens, per layer"),
            p(
                f"One forward pass over the chat-template prompt ({fmt.n(att['prompt_tokens'].iloc[0])} "
                f"tokens, {fmt.n(att['special_positions'].iloc[0])} of them special): the share of the last "
                "position's attention, averaged over heads, that lands on special tokens."
            ),
            chart(slots["attention"]),
            p(sink_text(tpl.sink(att)), muted=True),
        ]
    return compact(out)


KIND = ReportKind(
    "template",
    tpl.data,
    blocks=lambda s, slots, report: blocks(s, slots),
    charts={
        "attention": (
            lambda d, r: charts.attention(d["attention"], r.ds.backends),
            "attention on special tokens",
        )
    },
    jobs=lambda s, rows, report: [jobs.template_job(s, quality_caution(report))],
    quality_note=(
        "Random weights: not a quality figure. Clean answers and attention on special tokens describe noise."
    ),
)
