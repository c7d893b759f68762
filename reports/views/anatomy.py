"""The page's "One call, taken apart" section: per workload, a table of each backend's representative call
stage by stage and a stacked bar of the stages measured (``reports.analysis.anatomy`` takes the calls apart;
this only lays them out)."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
from markupsafe import Markup

from reports import charts, fmt
from reports.analysis import anatomy
from reports.views import Block, Table, chart, h3, p, table

INTRO = (
    "Where the time of one call goes. Each stage is read from the layer whose clock saw it: the harness "
    "(chat template and tokenizer, timed at plan time: the engines are handed token ids, so these come "
    "before the call's clock starts), the engine's own request stamps or its server's /metrics (intake, "
    "queue, prefill, decode), the caller's token clock (prefill and decode where no engine clock is "
    "recorded; the adapter's detokenization). Unaccounted is the end-to-end less the stages measured "
    "inside it, shown as its own stage: request build, HTTP and SSE framing, a server's own tokenizer and "
    "detokenizer and the response parse live there. docs/anatomy.md defines each stage."
)


def _cell(stage: anatomy.Stage, e2e_ms: float) -> str:
    if not stage.measured:
        return f"not measured: {stage.why}"
    share = "" if stage.name in anatomy.BEFORE or not e2e_ms else f" ({fmt.pct(stage.ms / e2e_ms, 1)})"
    return f"{fmt.n(stage.ms)} ms{share}"


def stage_table(calls: list[anatomy.Call]) -> Table:
    """Rows: the stages in call order, then the end-to-end; a column per backend (its call named in the
    header row), each cell its ms and share of the end-to-end, or why it is not measured."""
    t = Table(["stage", *[c.backend for c in calls]])
    t.add(["call", *[f"{c.label}; {c.prompt_tokens} tokens in, {c.output_tokens} out" for c in calls]])
    for name in anatomy.STAGES:
        row = [_cell(c.stage(name), c.e2e_ms) for c in calls]
        t.add([name, *row], "total" if name == anatomy.UNACCOUNTED else "")
    t.add(["end-to-end (caller)", *[f"{fmt.n(c.e2e_ms)} ms" for c in calls]], "total")
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
    """The section's blocks; [] where no workload has a single request with an end-to-end."""
    if not calls:
        return []
    out: list[Block] = [p(INTRO), p(anatomy.RULE[0].upper() + anatomy.RULE[1:] + ".", muted=True)]
    for workload in dict.fromkeys(c.workload for c in calls):
        mine = [c for c in calls if c.workload == workload]
        out.append(h3(f"Workload {workload}"))
        out.append(table(stage_table(mine)))
        spec = charts.anatomy(stage_frame(mine), list(anatomy.STAGES), backends)
        bar = chart(slot(spec, f"one call taken apart, {workload}"))
        if bar is not None:
            out.append(bar)
    return out
