"""The regression gate: a candidate run's figures against a baseline's, per figure, with a verdict.

    python -m reports --baseline RUN_DIR|summary.json --candidate RUN_DIR|summary.json [--threshold-pct 5]

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

Exit codes: 0 no figure regressed; 1 a figure regressed, or a baseline figure is missing from the
candidate (a backend that failed, a workload left out; ``--ignore-missing`` lets that pass);
2 bad input (no such run, no figure in common).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from reports import fmt
from reports.analysis.figures import HIGHER, Figure, from_dict
from reports.runs import ReportError

REGRESSED, IMPROVED, NOISE, THRESHOLD = "regressed", "improved", "within noise", "within threshold"
MISSING, NEW, NOT_COMPARED = "missing in candidate", "only in candidate", "not compared"
ORDER = (REGRESSED, MISSING, IMPROVED, NOISE, THRESHOLD, NOT_COMPARED, NEW)


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


def judge(base: Figure, cand: Figure, threshold: float) -> Delta:
    change, spread = worse_by(base, cand), spread_of(base, cand)
    if change is None:
        return Delta(base, cand, None, spread, NOT_COMPARED)
    bar = max(spread or 0.0, threshold)
    if change > bar:
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
    out += [Delta(None, c, None, None, NEW) for c in cand if c.key not in seen]
    return sorted(out, key=lambda d: ORDER.index(d.verdict))  # stable: the page's order within a verdict


def failed(deltas: list[Delta], ignore_missing: bool = False) -> bool:
    return any(d.verdict == REGRESSED or (d.verdict == MISSING and not ignore_missing) for d in deltas)


# --- reading the two sides ------------------------------------------------------------------------
def figures_of(paths: list[Path], merge_starts: bool = False) -> list[Figure]:
    """The figures of run directories (their report assembled) or of a ``summary.json``."""
    if len(paths) == 1 and paths[0].is_file():
        try:
            data = json.loads(paths[0].read_text(encoding="utf-8"))
            return [from_dict(d) for d in data["figures"]]
        except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as exc:
            raise ReportError(
                f"{paths[0]}: not a summary.json with figures ({type(exc).__name__}: {exc})"
            ) from exc
    from reports import report_of

    return figures(report_of(paths, merge_starts=merge_starts))


def figures(report) -> list[Figure]:
    from reports.analysis.figures import collect

    return collect(report)


# --- the text ---------------------------------------------------------------------------------------
def _value(f: Figure | None) -> str:
    return "–" if f is None else f"{fmt.n(f.value)} {f.unit}".strip()


def line(d: Delta) -> str:
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
    return (
        f"{d.verdict.upper():<20} {f.group} · {f.figure} · {f.backend}: {_value(d.base)} → {_value(d.cand)} "
        f"({better}{change}{spread})"
    )


def text(deltas: list[Delta], threshold: float, ignore_missing: bool = False) -> str:
    counts = {v: sum(d.verdict == v for d in deltas) for v in ORDER}
    tally = ", ".join(f"{n} {v}" for v, n in counts.items() if n)
    verdict = "FAIL" if failed(deltas, ignore_missing) else "PASS"
    head = (
        f"regression gate: {len(deltas)} figures; a figure regresses when it is worse beyond both its spread "
        f"and the threshold ({fmt.rel(threshold)})"
    )
    return "\n".join([head, *map(line, deltas), f"{verdict}: {tally}"]) + "\n"
