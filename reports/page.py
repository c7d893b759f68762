"""Render a :class:`~reports.model.Report` as one self-contained HTML file (works offline).

Jinja2 templates (``reports/templates/``) with autoescaping: everything that came from a model
or a workload file is escaped, and its bidirectional controls (U+202E...) shown as escapes (``fmt.visible``,
the environment's ``finalize``). Charts are Vega-Lite specs in ``<script type="application/json">``
blocks (with ``<``, ``>`` and ``&`` escaped inside the JSON), drawn by the Vega libraries inlined
from ``vl-convert-python``'s bundle; a Content-Security-Policy forbids every network request.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from llm_call_anatomy.reports import charts, fmt, kinds, reference
from llm_call_anatomy.reports.model import Report
from llm_call_anatomy.reports.views import Block, anatomy, claims, common, note

TEMPLATES = Path(__file__).parent / "templates"


@functools.cache
def vega_bundle() -> str:
    """Vega, Vega-Lite and vega-embed as one script (no network), matching altair's Vega-Lite version."""
    import vl_convert
    from altair.utils.html import vl_version_for_vl_convert

    bundle = vl_convert.javascript_bundle(vl_version=vl_version_for_vl_convert())
    return bundle.replace("</script", "<\\/script")


# in a JSON string, a bidirectional control becomes the six characters of its escape, not the escape itself
_JSON_VISIBLE = {ord(c): "\\" + fmt.visible(c) for c in fmt.BIDI}


class Code(Markup):
    """Markup that is code (the inlined Vega bundle): printed as it is, never made visible."""


def json_script(data: Any) -> Markup:
    """JSON that is safe inside a ``<script>`` element whatever its strings hold; a bidirectional control
    character in a string is drawn as its escape (``\\u202e``, :func:`fmt.visible`), as on the rest of the
    page."""
    text = json.dumps(data, ensure_ascii=False, default=str).translate(_JSON_VISIBLE)
    return Markup(text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e"))


class Charts:
    """Collects chart specs; ``slot(spec)`` returns the container the page script fills."""

    def __init__(self) -> None:
        self.specs: list[tuple[str, Markup]] = []

    def slot(self, spec: dict[str, Any] | None, label: str) -> Markup:
        if spec is None:
            return Markup("")
        cid = f"spec-{len(self.specs)}"
        self.specs.append((cid, json_script(spec)))
        return Markup('<div class="chart" data-spec="{}" role="img" aria-label="{}"></div>').format(
            cid, label
        )


def _visible(value: Any) -> Any:
    """Every value the templates print, with its bidirectional controls made visible (``fmt.visible``): a
    text from a record or an env.json (a workload name, an error, a prompt) never reorders the page. Markup
    keeps its tags (the escapes hold no HTML); the inlined Vega bundle is code, printed as it is."""
    if isinstance(value, Markup):
        return value if isinstance(value, Code) else Markup(fmt.visible(str(value)))
    return fmt.visible(value) if isinstance(value, str) else value


def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=_visible,
    )
    env.filters.update(n=fmt.n, count=fmt.count)
    env.globals.update(ref=reference)
    return env


def section_blocks(report: Report, c: Charts) -> list[list[Block]]:
    """Each workload section's blocks (its kind's view,
    ``reports.kinds``), its charts registered with ``c`` in page order."""
    out = []
    for s in report.sections:
        kind = kinds.report_kind(s.kind) if s.kind else None
        if kind is None or not s.data or not s.backends:
            out.append([])
            continue
        slots = kinds.slots_for(kind, s.data, report, c.slot, s.name)
        section = kind.blocks(s, slots, report)
        if section and report.random_weights and kind.quality_note:  # figures about the model's answers
            section = [note(kind.quality_note), *section]
        out.append(section)
    return out


def _steady(kind: str) -> bool:
    """The section's figures are load levels' steady states (``ReportKind.steady_state``)."""
    found = kinds.report_kind(kind)
    return found is not None and found.steady_state


def render(report: Report) -> str:
    """The report's HTML page, one self-contained file: the Jinja template filled with the report's blocks and
    every chart's Vega-Lite spec, the Vega bundle inlined so the page opens offline."""
    c = Charts()
    anatomy_blocks = anatomy.blocks(report.anatomy, report.ds.backends, c.slot)  # first after the summary
    blocks = section_blocks(report, c)
    agreement_slot = c.slot(
        charts.agreement(report.agreement_summary, report.ds.backends), "agreement at T=0"
    )
    models = list(
        dict.fromkeys(str((e.get("model") or {}).get("label") or "?") for e in report.ds.envs.values())
    )
    df = report.ds.records
    versions = {
        b: next(iter(df[df["backend"] == b]["backend_version"].dropna()), None) for b in report.ds.backends
    }
    return (
        environment()
        .get_template("report.html.jinja")
        .render(
            r=report,
            runs=report.ds.envs,
            orders=list(dict.fromkeys(str(e["order"]) for e in report.ds.envs.values() if e.get("order"))),
            load_only=bool(report.sections) and all(_steady(s.kind) for s in report.sections),
            has_load=any(_steady(s.kind) for s in report.sections),
            models=models,
            versions=versions,
            generated=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            summary_blocks=common.summary(report),
            anatomy_blocks=anatomy_blocks,
            section_blocks=blocks,
            agreement_blocks=common.agreement(report, agreement_slot),
            server_blocks=common.server(report),
            caveat_blocks=common.caveats(report),
            claim_blocks=claims.blocks(report.claims, report.ds.backends),
            specs=c.specs,
            bundle=Code(vega_bundle()),
        )
    )
