"""The figures a regression gate compares: the page's numbers with their spread and which way is better.

Two sources, both already computed for the page (nothing is recomputed here):

- every latency row of the summary ("which stack for which job"): per backend, the median over
  engine starts with its relative half-spread within a start and across starts
  (:class:`reports.stats.StartStat`, kept on :class:`reports.model.Job`); lower is better;
- what a workload kind adds through its ``figures`` hook (``reports.kinds``): the load kind's
  per-level throughput and latency. One run per level has no measured spread (``within`` and
  ``across`` None): only the gate's threshold applies to it.

A figure is keyed by (group, figure, backend): the same job, the same measurement, the same column.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from llm_call_anatomy.reports.kinds import report_kind

if TYPE_CHECKING:
    from llm_call_anatomy.reports.model import Report

LOWER, HIGHER = "lower", "higher"


@dataclass(frozen=True)
class Figure:
    group: str  # the summary's job, or a kind's group ("Load · chat · S=0 · C=8")
    figure: str  # what is measured
    backend: str  # the column label
    value: float
    unit: str
    better: str  # LOWER | HIGHER
    within: float | None = None  # relative half-spread of the repeats inside a start (None: not measured)
    across: float | None = (
        None  # relative half-spread of the per-start medians (None: one start, not measured)
    )
    starts: int = 1
    n: int = 0

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.group, self.figure, self.backend)


FIGURE_FIELDS = [f.name for f in fields(Figure)]


def from_dict(d: dict[str, Any]) -> Figure:
    """A figure read back from ``summary.json``'s ``figures``."""
    return Figure(**{k: d[k] for k in FIGURE_FIELDS if k in d})


def summary_figures(report: Report) -> list[Figure]:
    out = []
    for j in report.jobs:
        for backend, s in j.stats.items():
            if s.median is not None:
                out.append(
                    Figure(
                        j.job, j.figure, backend, s.median, j.unit, LOWER, s.within, s.across, s.starts, s.n
                    )
                )
    return out


def collect(report: Report) -> list[Figure]:
    """Every figure of the report: the summary's latency rows, then each section's kind's own."""
    out = summary_figures(report)
    for s in report.sections:
        kind = report_kind(s.kind) if s.kind else None
        if kind is not None and s.data:
            out += kind.figures(s, report)
    return out
