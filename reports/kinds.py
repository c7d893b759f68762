"""The lazy registry of the report half of each workload kind: analysis, charts, blocks, caveats, summary rows.

The measuring half of a kind is registered in ``workloads.kinds``; this is the other half. A
:class:`ReportKind` names, for one kind, the function that turns its records into a section's
data (``analyse``), its charts by key (``charts``: each builds a Vega-Lite spec from the data),
the page blocks (``blocks``: gets the chart slots by key), the caveats and summary rows it adds,
and the figures a regression gate compares beyond the summary's (``figures``, ``reports.gate``).
``analyse`` gets the measured records, or with ``sees_failures`` every record that was not
skipped (the failed ones too, each with its ``error``). ``assemble``, ``page``, ``caveats`` and
``summary`` loop over this registry; none names a kind. A view asking for a chart key its kind
does not register fails loudly (:class:`Slots`).

The report decides from facts in the records and env.json (the kind of each workload, what a
backend's records say), never from backend names.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from markupsafe import Markup

REGISTRY: dict[str, str] = {
    "conversation": "reports.builtin_kinds:CONVERSATION",
    "sweep": "reports.builtin_kinds:SWEEP",
    "json": "reports.builtin_kinds:JSON",
    "template": "reports.builtin_kinds:TEMPLATE",
    "load": "reports.views.many_users:KIND",
}


@dataclass
class Context:
    """What a kind's analysis may need beyond its own records."""

    ds: Any  # reports.load.Dataset
    roofs: dict[str, Any] = field(default_factory=dict)
    blocks: dict[str, int | None] = field(default_factory=dict)  # KV block size per backend
    slo: dict[str, float] | None = None
    gpu_hour_usd: float | None = None  # the report's --gpu-hour-usd (else the run's)


@dataclass(frozen=True)
class ReportKind:
    name: str
    analyse: Callable[[Any, Context, str], dict[str, Any]]  # (its measured rows, context, workload name) -> data
    blocks: Callable[[Any, Slots, Any], list]  # (section, chart slots, report) -> page blocks
    charts: dict[str, tuple[Callable[[dict[str, Any], Any], dict[str, Any] | None], str]] = field(default_factory=dict)
    caveats: Callable[[Any, Any], list] = lambda section, report: []  # noqa: E731 - (section, report) -> Caveats
    jobs: Callable[[Any, Any, Any], list] = lambda section, rows, report: []  # noqa: E731 - -> summary Jobs
    quality_note: str | None = None  # shown above the section when the weights are random (its figures are about answers)
    sees_failures: bool = False  # analyse gets the failed requests too (load: a failure is an SLO miss, not nothing)
    figures: Callable[[Any, Any], list] = lambda section, report: []  # noqa: E731 - -> reports.analysis.figures.Figure (the gate's)


class Slots(dict):
    """Chart containers by key; a key the kind does not register is a mistake, not an empty chart."""

    def __init__(self, kind: str, slots: dict[str, Markup]) -> None:
        super().__init__(slots)
        self.kind = kind

    def __missing__(self, key: str) -> Markup:
        raise KeyError(f"chart {key!r} is not registered for workload kind {self.kind!r} "
                       f"(registered: {', '.join(self) or 'none'}; see reports/kinds.py)")


def names() -> tuple[str, ...]:
    return tuple(REGISTRY)


@functools.cache
def report_kind(name: str) -> ReportKind | None:
    """The kind's report half, or None for a kind this report does not know (its records are listed, not analysed)."""
    if name not in REGISTRY:
        return None
    module_name, attr = REGISTRY[name].split(":")
    found = getattr(importlib.import_module(module_name), attr)
    if found.name != name:
        raise RuntimeError(f"{REGISTRY[name]} registers kind {found.name!r}, not {name!r}")
    return found


def slots_for(kind: ReportKind, data: dict[str, Any], report: Any, add: Callable[[dict | None, str], Markup],
              section_name: str) -> Slots:
    """Every registered chart of the kind built and placed (``add`` registers a spec with the page)."""
    return Slots(kind.name, {key: add(build(data, report), f"{label}, {section_name}") for key, (build, label) in kind.charts.items()})
