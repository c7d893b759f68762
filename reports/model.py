"""The report as plain data: what :func:`reports.assemble.assemble` builds and the page, the exports and the
gate read.

    report = assemble(ds)                 # a Report: its Sections, and what the analyses added
    report.caveats, report.jobs, report.claims   # Caveat, Job and Claim items, each with its figures

The types live here, below the analyses that fill them (``reports.analysis.caveats``, ``summary``,
``claims``, ``run_context``, ``settings_differ``) and the assembly that calls them, so that an analysis
reading the report imports neither the assembly nor another analysis for a type.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from llm_call_anatomy.reports.analysis.anatomy import Call
from llm_call_anatomy.reports.analysis.status import BackendStatus
from llm_call_anatomy.reports.roofline import Roof
from llm_call_anatomy.reports.runs import Dataset
from llm_call_anatomy.reports.stats import StartStat


@dataclass
class Section:
    name: str  # the workload's name, from its file
    kind: str | None  # a registered kind (reports.kinds; None: every backend skipped it)
    backends: list[str]  # backends with measurements in it, in column order
    notes: list[str]  # skipped / failed backends, with reasons
    data: dict[str, Any] = field(default_factory=dict)


# --- what the analyses add: caveats, the summary's jobs, the claims checked ------------------------------
@dataclass(frozen=True)
class Caveat:
    topic: str
    text: str


@dataclass(frozen=True)
class Job:
    job: str
    figure: str  # what is compared
    values: list[tuple[str, str]]  # (backend, formatted value with its spread), best first
    best: str | None  # None: a single backend, a tie, within noise, or not comparable
    verdict: str = ""  # "by 57 % over vllm", "within noise (±9 %)", "not ranked: ..."
    caution: str | None = None
    stats: dict[str, StartStat] = field(
        default_factory=dict
    )  # a latency job's figures behind ``values`` (exports, the gate)
    unit: str = ""  # of ``stats`` (lower is better)
    latency: bool = (
        False  # a measured latency compared over engine starts (what the run-context notes apply to)
    )
    differs: str | None = (
        None  # the settings that differ between the compared columns, said before the ranking
    )


HOLDS, DOES_NOT_HOLD, SETUP_SPECIFIC, NOT_MEASURABLE = (
    "holds",
    "does not hold",
    "setup-specific",
    "not measurable here",
)
NOT_DECIDED = "not decided"  # a numeric test whose interval crosses the claim's band (reports.intervals)
VERDICTS = (HOLDS, DOES_NOT_HOLD, SETUP_SPECIFIC, NOT_MEASURABLE, NOT_DECIDED)


@dataclass(frozen=True)
class Verdict:
    word: str  # one of VERDICTS
    reason: str  # why, citing the figures it rests on

    def __post_init__(self) -> None:
        if self.word not in VERDICTS:
            raise ValueError(f"unknown verdict {self.word!r} (one of {', '.join(VERDICTS)})")


@dataclass(frozen=True)
class Claim:
    source: str  # whose claim: "seed article", "issue #16", ...
    statement: str  # the claim in one line
    theirs: str  # the figure the source gives, formatted
    verdict: Verdict
    here: dict[str, str] = field(default_factory=dict)  # backend -> our figure, formatted ("" where none)


# --- the report ------------------------------------------------------------------------------------------
@dataclass
class Report:
    ds: Dataset
    status: list[BackendStatus]
    sections: list[Section]
    agreement_cases: pd.DataFrame
    agreement_summary: pd.DataFrame
    server: pd.DataFrame
    roofs: dict[str, Roof]
    random_weights: str | None
    caveats: list[Caveat]
    jobs: list[Job]
    claims: list[Claim] = field(default_factory=list)
    agreement_cached: pd.DataFrame = field(default_factory=pd.DataFrame)  # cached vs full, per call
    agreement_cached_summary: pd.DataFrame = field(default_factory=pd.DataFrame)
    flat_logits: dict[str, bool] = field(default_factory=dict)  # per backend with step-0 log-probs
    model_notes: list[str] = field(default_factory=list)  # what this model's figures mean
    anatomy: list[Call] = field(default_factory=list)  # one call taken apart, per workload and backend
