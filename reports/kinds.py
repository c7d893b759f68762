"""The lazy registry of the report half of each workload
kind: analysis, charts, blocks, caveats, summary rows.

The measuring half of a kind is registered in ``workloads.kinds``; this is the other half, the
``report/`` folder of the kind's room (``workloads/<kind>/report/``, its ``KIND``), found by that folder
(``contract.registry.discover_rooms``: the rooms are read from disk, the measuring code is not imported). A
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

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from markupsafe import Markup

from llm_call_anatomy.contract.price import GpuPrice
from llm_call_anatomy.contract.registry import Registry, discover_rooms

# name -> "workloads.<name>.report:KIND", filled by rediscover() (below) from the rooms on disk
REGISTRY: dict[str, str] = {}
ROOMS = "llm_call_anatomy.workloads"  # the package whose folders are the kinds' rooms


@dataclass
class Context:
    """What a kind's analysis may need beyond its own records."""

    ds: Any  # reports.runs.Dataset
    roofs: dict[str, Any] = field(default_factory=dict)
    blocks: dict[str, int | None] = field(default_factory=dict)  # KV block size per backend
    slo: dict[str, float] | None = None  # the report's --slo goodput pair, per request; None: the runs' own
    gpu_hour_usd: GpuPrice | None = None  # the report's --gpu-hour-usd, one price or a range (else the run's)
    # the report's --slo targets (contract.slo.Target): every column judged against them; None: each run's own
    targets: tuple | None = None
    size: Any = None  # the report's --size (reports.size_ask.SizeAsk); None: not asked


@dataclass(frozen=True)
class ReportKind:
    name: str
    analyse: Callable[
        [Any, Context, str], dict[str, Any]
    ]  # (its measured rows, context, workload name) -> data
    blocks: Callable[[Any, Slots, Any], list]  # (section, chart slots, report) -> page blocks
    charts: dict[str, tuple[Callable[[dict[str, Any], Any], dict[str, Any] | None], str]] = field(
        default_factory=dict
    )
    caveats: Callable[[Any, Any], list] = lambda section, report: []  # (section, report) -> Caveats
    jobs: Callable[[Any, Any, Any], list] = lambda section, rows, report: []  # -> summary Jobs
    quality_note: str | None = (
        None  # shown above the section when the weights are random (its figures are about answers)
    )
    agreement: bool = (
        True  # its T=0 requests are compared token by token across backends (a load level's are not)
    )
    cached_vs_full: bool = False  # its ``cached`` mode is compared with its ``full`` mode, per backend
    steady_state: bool = (
        False  # its figures are load levels' steady states, not medians over repeats (the page says which)
    )
    sees_failures: bool = (
        False  # analyse gets the failed requests too (load: a failure is an SLO miss, not nothing)
    )
    # (section, report) -> reports.analysis.figures.Figure list (the gate's)
    figures: Callable[[Any, Any], list] = lambda section, report: []
    # (section) -> the lines ``python compare.py report`` prints after writing (an answer asked for: --size)
    printed: Callable[[Any], list[str]] = lambda section: []


class Slots(dict):
    """Chart containers by key; a key the kind does not register is a mistake, not an empty chart."""

    def __init__(self, kind: str, slots: dict[str, Markup]) -> None:
        super().__init__(slots)
        self.kind = kind

    def __missing__(self, key: str) -> Markup:
        raise KeyError(
            f"chart {key!r} is not registered for workload kind {self.kind!r} "
            f"(registered: {', '.join(self) or 'none'}; see reports/kinds.py)"
        )


REPORT_KINDS: Registry[ReportKind] = Registry("report kind", REGISTRY, check_name=True)


def rediscover() -> tuple[str, ...]:
    """Read the rooms again (a plugin, or a test, added a directory to the rooms' package path)."""
    REGISTRY.clear()
    REGISTRY.update(discover_rooms(ROOMS, "report"))
    return names()


def names() -> tuple[str, ...]:
    return REPORT_KINDS.names()


def report_kind(name: str) -> ReportKind | None:
    """The kind's report half, or None for a kind this report
    does not know (its records are listed, not analysed)."""
    return REPORT_KINDS.find(name)


def quality_caution(report: Any) -> str | None:
    """The caution a quality figure's summary row carries when the weights are random."""
    return "weights are random: not a quality figure" if report.random_weights else None


def without_agreement() -> tuple[str, ...]:
    """Kinds whose requests are not compared across backends (``ReportKind.agreement`` False)."""
    return tuple(n for n in REPORT_KINDS if not REPORT_KINDS.get(n).agreement)


def cached_vs_full_kinds() -> tuple[str, ...]:
    """Kinds whose ``cached`` mode is compared with their ``full`` mode (``ReportKind.cached_vs_full``)."""
    return tuple(n for n in REPORT_KINDS if REPORT_KINDS.get(n).cached_vs_full)


def slots_for(
    kind: ReportKind,
    data: dict[str, Any],
    report: Any,
    add: Callable[[dict | None, str], Markup],
    section_name: str,
) -> Slots:
    """Every registered chart of the kind built and placed (``add`` registers a spec with the page)."""
    return Slots(
        kind.name,
        {
            key: add(build(data, report), f"{label}, {section_name}")
            for key, (build, label) in kind.charts.items()
        },
    )


rediscover()
