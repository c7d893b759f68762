"""The page's "One call, taken apart" section: per workload, a table of each backend's representative call
stage by stage and a stacked bar of the stages measured (``reports.analysis.anatomy`` takes the calls apart;
this only lays them out)."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
from markupsafe import Markup

from llm_call_anatomy.contract.docs import doc
from llm_call_anatomy.reports import charts, fmt, reference
from llm_call_anatomy.reports.analysis import anatomy
from llm_call_anatomy.reports.views import Block, Table, chart, h3, p, table

INTRO = (
    "Where the time of one call goes. Each stage is read from the layer whose clock saw it: the harness "
    "(chat template and tokenizer, timed at plan time: the engines are handed token ids, so these come "
    "before the call's clock starts), the engine's own request stamps or its server's /metrics (intake, "
    "queue, prefill, decode), the caller's token clock (prefill and decode where no engine clock is "
    "recorded; the adapter's detokenization and a streamed answer's final assembly). Unaccounted is the "
    "end-to-end less the stages measured inside it, shown as its own stage: request build, HTTP and SSE "
    "framing, a server's own tokenizer and detokenizer and the client's per-chunk parsing live there. "
    f"{doc('explanation/anatomy.md')} defines each stage."
)


def _cell(stage: anatomy.Stage, e2e_ms: float) -> str:
    if not stage.measured:
        return f"not measured: {stage.why}"
    share = "" if stage.name in anatomy.BEFORE or not e2e_ms else f" ({fmt.pct(stage.ms / e2e_ms, 1)})"
    return f"{fmt.n(stage.ms)} ms{share}"


def _part(ms: float | None) -> str:
    return "–" if ms is None else f"{fmt.n(ms)} ms"


def reference_line(calls: list[anatomy.Call]) -> str:
    """The reference's own split beside ours: decode's share of a 64-token call, and what its TTFT leaves
    out."""
    shares = [f"{fmt.pct(v, 1)} at N = {fmt.n(k)}" for k, v in reference.ANATOMY["decode_share"].items()]
    ours = ", ".join(
        f"{c.backend} {fmt.pct(c.stage('decode').ms / c.e2e_ms, 1)} ({c.workload}, "
        f"{c.prompt_tokens} tokens in, {c.output_tokens} out)"
        for c in calls
        if c.stage("decode").measured and c.e2e_ms
    )
    return (
        f"{reference.LABEL}: decode takes {' and '.join(shares)} of a call with a "
        f"{reference.REPLY_TOKENS}-token reply; its prefill is {reference.ANATOMY['prefill']}. "
        f"Decode's share of the end-to-end here: {ours or 'none measured'}."
    )


def stage_table(calls: list[anatomy.Call]) -> Table:
    """Rows: the stages in call order, then the end-to-end; a column per backend (its call named in the
    header row), each cell its ms and share of the end-to-end, or why it is not measured."""
    t = Table(["stage", *[c.backend for c in calls]])
    t.add(["call", *[f"{c.label}; {c.prompt_tokens} tokens in, {c.output_tokens} out" for c in calls]])
    for name in anatomy.STAGES:
        row = [_cell(c.stage(name), c.e2e_ms) for c in calls]
        t.add([name, *row], "total" if name == anatomy.UNACCOUNTED else "")
    t.add(["end-to-end (caller)", *[f"{fmt.n(c.e2e_ms)} ms" for c in calls]], "total")
    before = [c.unaccounted_before_first_token_ms() for c in calls]
    t.add(["unaccounted before the first token", *[_part(b) for b in before]])
    after = [
        None if b is None else c.stage(anatomy.UNACCOUNTED).ms - b for b, c in zip(before, calls, strict=True)
    ]
    t.add(["unaccounted after the first token", *[_part(a) for a in after]])
    t.add(
        ["measured by", *["; ".join(f"{s.name}: {s.clock}" for s in c.stages if s.measured) for c in calls]]
    )
    return t


def stage_frame(calls: list[anatomy.Call]) -> pd.DataFrame:
    """The measured stages of ``calls`` as rows (backend, stage, ms, clock), for the stacked bar."""
    rows = [
        {"backend": c.backend, "stage": s.name, "ms": s.ms, "clock": s.clock}
        for c in calls
        for s in c.stages
        if s.measured
    ]
    return pd.DataFrame(rows, columns=["backend", "stage", "ms", "clock"])


def blocks(
    calls: list[anatomy.Call], backends: list[str], slot: Callable[[dict | None, str], Markup]
) -> list[Block]:
    """The section's blocks, a table and a bar per workload (and per workload under load); [] where no
    workload has a request with an end-to-end."""
    if not calls:
        return []
    rules = anatomy.RULE[0].upper() + anatomy.RULE[1:] + "; " + anatomy.LOADED_RULE + "."
    singles = [c for c in calls if c.level is None]
    out: list[Block] = [p(INTRO), p(rules, muted=True), p(reference_line(singles))]
    for workload, level in dict.fromkeys((c.workload, c.level) for c in calls):
        mine = [c for c in calls if (c.workload, c.level) == (workload, level)]
        title = f"Workload {workload}" + (f", under load: {mine[0].load}" if level else "")
        out.append(h3(title))
        out.append(table(stage_table(mine)))
        spec = charts.anatomy(stage_frame(mine), list(anatomy.STAGES), backends)
        bar = chart(slot(spec, f"one call taken apart, {workload}" + (f" at {level}" if level else "")))
        if bar is not None:
            out.append(bar)
    return out
