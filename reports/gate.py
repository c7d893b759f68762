"""The regression gate: a candidate run's figures against a baseline's, per figure, with a verdict.

    python compare.py report --baseline RUN_DIR|summary.json --candidate RUN_DIR|summary.json
        [--threshold-pct 5]

Each side is one or more run directories (reported on as the page would be) or a ``summary.json``
that ``--format json`` wrote. Figures are matched by (group, figure, backend)
(:mod:`reports.analysis.figures`). For each pair:

- change = how much worse the candidate is, relative to the baseline (positive: worse, whichever
  way the figure is better);
- spread = what the change must exceed to count: as the summary's ranking, the two runs'
  relative half-spreads within a start added, and across starts added, the larger of the two
  sums; unmeasured (one repeat, one run per load level) counts as none;
- regressed = change beyond the spread and beyond ``--threshold-pct``; improved = the same the
  other way; otherwise within noise (inside the spread) or within the threshold.

Failed requests are figures too (``error_figures``: the share of each backend's requests that failed, and
of each load level's): any rise regresses, whatever the threshold (fast failures shorten a level's
window, so its tok/s can look no worse), and a candidate with any failed request cannot pass
(``failures in candidate``), even against a baseline that failed as much. A figure that is not a finite
number (NaN, inf in a summary.json) is "not comparable" and fails like a missing one; one that is not a
number at all (null, a string) is bad input.

Exit codes: 0 no figure regressed; 1 a figure regressed, the candidate has failed requests, or a baseline
figure is missing from the candidate or not comparable (a backend that failed, a workload left out;
``--ignore-missing`` lets that pass); 2 bad input (no such run, no figure in common, a figure that is not
a number).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from llm_call_anatomy.reports import fmt, report_of
from llm_call_anatomy.reports.analysis.figures import HIGHER, LOWER, Figure, collect, from_dict
from llm_call_anatomy.reports.export import plain, status_rows
from llm_call_anatomy.reports.runs import ReportError

REGRESSED, IMPROVED, NOISE, THRESHOLD = "regressed", "improved", "within noise", "within threshold"
MISSING, NEW, NOT_COMPARED = "missing in candidate", "only in candidate", "not compared"
FAILURES, NOT_COMPARABLE = "failures in candidate", "not comparable"
# a change beyond the threshold where each side is one call of one start (n = 1, no spread: --repeats 1): the
# gate cannot tell it from noise, so it says so and does not fail on it; with repeats it judges the spread
NO_SPREAD = "moved, noise not measured"
ORDER = (
    REGRESSED,
    FAILURES,
    MISSING,
    NOT_COMPARABLE,
    IMPROVED,
    NO_SPREAD,
    NOISE,
    THRESHOLD,
    NOT_COMPARED,
    NEW,
)
ERRORS_FIGURE, ERRORS_GROUP = "failed requests", "Errors"


@dataclass(frozen=True)
class Delta:
    base: Figure | None
    cand: Figure | None
    change: float | None  # relative, positive = worse
    spread: float | None  # relative, None: neither side measured one
    verdict: str

    @property
    def figure(self) -> Figure:
        return self.base or self.cand  # type: ignore[return-value]


def _sum(a: float | None, b: float | None) -> float | None:
    return None if a is None and b is None else (a or 0.0) + (b or 0.0)


def spread_of(base: Figure, cand: Figure) -> float | None:
    sums = [s for s in (_sum(base.within, cand.within), _sum(base.across, cand.across)) if s is not None]
    return max(sums) if sums else None


def worse_by(base: Figure, cand: Figure) -> float | None:
    """The candidate's change relative to the baseline, signed
    so that positive is worse; None from a baseline of 0."""
    if not base.value:
        return None
    change = (cand.value - base.value) / abs(base.value)
    return -change if base.better == HIGHER else change


def is_error_rate(f: Figure) -> bool:
    return f.figure == ERRORS_FIGURE and f.unit == "%"


def judge_errors(base: Figure, cand: Figure) -> Delta:
    """The share of failed requests: any rise regresses (in percentage points, no threshold); a candidate
    with failures fails all the same."""
    change = (cand.value - base.value) / 100
    if change > 0:
        verdict = REGRESSED
    elif cand.value > 0:
        verdict = FAILURES
    else:
        verdict = IMPROVED if change < 0 else THRESHOLD
    return Delta(base, cand, change, None, verdict)


def judge(base: Figure, cand: Figure, threshold: float) -> Delta:
    """One figure of both sides: not comparable where either is not finite, the error-rate rule for the
    share of failed requests, else the change against the spread and ``threshold``."""
    if not (math.isfinite(base.value) and math.isfinite(cand.value)):
        return Delta(base, cand, None, None, NOT_COMPARABLE)
    if is_error_rate(base):
        return judge_errors(base, cand)
    change, spread = worse_by(base, cand), spread_of(base, cand)
    if change is None:
        return Delta(base, cand, None, spread, NOT_COMPARED)
    bar = max(spread or 0.0, threshold)
    single = base.n == 1 and cand.n == 1 and spread is None  # one call, one start, each side
    if single and abs(change) > bar:  # a change, but none the gate can tell from noise
        verdict = NO_SPREAD
    elif change > bar:
        verdict = REGRESSED
    elif -change > bar:
        verdict = IMPROVED
    else:
        verdict = NOISE if spread is not None and abs(change) <= spread else THRESHOLD
    return Delta(base, cand, change, spread, verdict)


def compare(base: list[Figure], cand: list[Figure], threshold: float) -> list[Delta]:
    """Every figure of either side, judged; ``threshold`` is relative (0.05 for 5 %). Regressions first."""
    by_key = {f.key: f for f in cand}
    out = [
        judge(b, by_key[b.key], threshold) if b.key in by_key else Delta(b, None, None, None, MISSING)
        for b in base
    ]
    seen = {b.key for b in base}
    out += [
        Delta(None, c, None, None, FAILURES if is_error_rate(c) and c.value > 0 else NEW)
        for c in cand
        if c.key not in seen
    ]
    return sorted(out, key=lambda d: ORDER.index(d.verdict))  # stable: the page's order within a verdict


def failed(deltas: list[Delta], ignore_missing: bool = False) -> bool:
    return any(
        d.verdict in (REGRESSED, FAILURES) or (d.verdict in (MISSING, NOT_COMPARABLE) and not ignore_missing)
        for d in deltas
    )


# --- reading the two sides ------------------------------------------------------------------------
def figures_of(paths: list[Path], merge_starts: bool = False) -> list[Figure]:
    """The figures of run directories (their report assembled) or of a ``summary.json``, with the share of
    failed requests (``error_figures``) from its status and load levels."""
    if len(paths) == 1 and paths[0].is_file():
        try:
            data = json.loads(paths[0].read_text(encoding="utf-8"))
            out = [from_dict(d) for d in data["figures"]]
            extra = error_figures(data.get("status") or [], _levels_of(data))
        except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ReportError(
                f"{paths[0]}: not a summary.json with figures ({type(exc).__name__}: {exc})"
            ) from exc
        for f in out:
            checked(f, paths[0])
        keys = {f.key for f in out}
        return out + [f for f in extra if f.key not in keys]

    return figures(report_of(paths, merge_starts=merge_starts))


def checked(f: Figure, where: Path) -> Figure:
    """A figure read from a file whose value (and spreads) are numbers; a NaN is a number, not comparable."""
    for name in ("value", "within", "across"):
        v = getattr(f, name)
        if (v is not None or name == "value") and (isinstance(v, bool) or not isinstance(v, int | float)):
            raise ReportError(f"{where}: figure {' · '.join(f.key)}: its {name} is not a number ({v!r:.40})")
    return f


def _levels_of(data: dict) -> list[dict]:
    return [
        row
        for w in data.get("workloads") or []
        if isinstance(w, dict)
        for row in ((w.get("tables") or {}).get("levels") or [])
        if isinstance(row, dict)
    ]


def error_figures(status: list[dict], levels: list[dict]) -> list[Figure]:
    """The share of failed requests (in %, lower is better): per backend (its status row: measured and
    failed) and per load level (its levels row: requests served and errors)."""
    out = []
    for st in status:
        ok, bad = st.get("measured") or 0, st.get("failed") or 0
        if ok + bad:
            out.append(
                Figure(
                    ERRORS_GROUP, ERRORS_FIGURE, st["backend"], 100 * bad / (ok + bad), "%", LOWER, n=ok + bad
                )
            )
    for r in levels:
        ok, bad = r.get("requests") or 0, r.get("errors") or 0
        if ok + bad and {"backend", "workload", "mode", "case"} <= set(r):
            group = f"Load · {r['workload']} · {r['mode']} · {r['case']}"
            out.append(
                Figure(group, ERRORS_FIGURE, r["backend"], 100 * bad / (ok + bad), "%", LOWER, n=ok + bad)
            )
    return out


def figures(report) -> list[Figure]:
    levels = [  # a section's per-level table with served requests and errors (the load kind's)
        row
        for s in report.sections
        if s.data and s.data.get("levels") is not None
        for row in plain(s.data["levels"])
        if isinstance(row, dict) and {"requests", "errors", "backend"} <= set(row)
    ]
    return collect(report) + error_figures(plain(status_rows(report)), levels)


# --- the text ---------------------------------------------------------------------------------------
def _value(f: Figure | None) -> str:
    return "–" if f is None else f"{fmt.n(f.value)} {f.unit}".strip()


def line(d: Delta) -> str:
    """One figure's verdict, both values, which way is better, by how much it moved and its spread."""
    f = d.figure
    change = (
        "" if d.change is None else f", {'worse' if d.change > 0 else 'better'} by {fmt.rel(abs(d.change))}"
    )
    spread = (
        ""
        if d.base is None or d.cand is None
        else (f", spread ±{fmt.rel(d.spread)}" if d.spread is not None else ", spread not measured")
    )
    better = f"{f.better} is better"
    if is_error_rate(f) and d.change is not None:
        change = f", {'more' if d.change > 0 else 'fewer' if d.change < 0 else 'as many'} failed"
    return (
        f"{d.verdict.upper():<20} {f.group} · {f.figure} · {f.backend}: {_value(d.base)} → {_value(d.cand)} "
        f"({better}{change}{spread})"
    )


def text(deltas: list[Delta], threshold: float, ignore_missing: bool = False) -> str:
    """The gate's printout: what a regression is, one line a figure (regressions first), the figures it could
    not tell from noise (one call each side) with the run that would, then PASS or FAIL with the tally."""
    counts = {v: sum(d.verdict == v for d in deltas) for v in ORDER}
    tally = ", ".join(f"{n} {v}" for v, n in counts.items() if n)
    verdict = "FAIL" if failed(deltas, ignore_missing) else "PASS"
    head = (
        f"regression gate: {len(deltas)} figures; a figure regresses when it is worse beyond both its spread "
        f"and the threshold ({fmt.rel(threshold)})"
    )
    unmeasured = (
        [
            f"{counts[NO_SPREAD]} figures moved beyond the threshold with no spread measured on either side "
            "(one call, one engine start): the gate cannot tell that from noise and does not fail on it; run "
            "both sides with --repeats 3 (and --starts 2) to judge them"
        ]
        if counts[NO_SPREAD]
        else []
    )
    return "\n".join([head, *map(line, deltas), *unmeasured, f"{verdict}: {tally}"]) + "\n"
