"""The SLO targets each run wrote (env.json ``slo_targets``, ``compare.py --slo``), read in one place for
every reader of them in the report: the goodput pair (:func:`slo_of`) and the capacity targets
(``workloads.load.report.capacity.targets_of``).

A run whose targets do not parse (an env.json edited by hand, a run from a build whose ``--slo`` grammar
differed) is passed over for the next run's, never in silence: :attr:`RunTargets.note` names it with its
parse error in one line, for the page to say beside the figures that count against another target.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from llm_call_anatomy.contract.slo import Target, legacy_slo, parse_targets
from llm_call_anatomy.workloads.load.report.levels import DEFAULT_SLO, SLO_SOURCE


@dataclass(frozen=True)
class RunTargets:
    parsed: list[tuple[str, tuple[Target, ...]]]  # (run id, its targets), in run order: the runs that parse
    broken: list[tuple[str, str]]  # (run id, why its slo_targets do not parse, one line)

    @property
    def first(self) -> tuple[Target, ...] | None:
        """The first run's targets that parse; None: no run wrote any (runs from before named targets)."""
        return self.parsed[0][1] if self.parsed else None

    @property
    def note(self) -> str | None:
        """The runs passed over, each with its error, as one line for the page; None where none was."""
        if not self.broken:
            return None
        return "; ".join(
            f"run {run_id}'s env.json slo_targets do not parse ({why}), so its targets are not used"
            for run_id, why in self.broken
        )


def read(envs: dict[str, dict]) -> RunTargets:
    """Every run's ``slo_targets``, parsed; a run with none (missing, null, empty) is neither parsed nor
    broken."""
    parsed, broken = [], []
    for run_id, env in envs.items():
        specs = env.get("slo_targets")
        if not specs:
            continue
        try:
            if not isinstance(specs, list) or not all(isinstance(s, str) for s in specs):
                raise ValueError(f"expected a list of target texts, got {specs!r:.80}")
            parsed.append((run_id, parse_targets(specs)))
        except ValueError as e:
            broken.append((run_id, " ".join(str(e).split())))
    return RunTargets(parsed, broken)


def slo_of(ds: Any, slo: dict[str, float] | None) -> tuple[dict[str, float] | None, str | None]:
    """The goodput target, per request (``ttft_ms``, ``tpot_ms``), and where it came from: the one given to
    the report, else the first run's ``compare.py --slo`` pair, else the first of the runs' named targets
    (env.json ``slo_targets``: the defaults, chat first) that has a TTFT and a TPOT limit, its percentile
    limits applied to each request (vLLM's ``--goodput``), so that goodput counts against a target the page
    names. (None, None) for runs from before the named targets: the Load section's older default pair. A run
    whose targets do not parse is passed over for the next one's and named in the source text, with its error
    (:func:`read`)."""

    def pair(given: dict) -> dict[str, float]:
        # a run made before --slo checked for both keys may hold one: the other comes from the default
        return {**DEFAULT_SLO, **{k: float(v) for k, v in given.items() if k in DEFAULT_SLO}}

    if slo:
        return pair(slo), "set for this report (--slo)"
    given = next((env["slo"] for env in ds.envs.values() if isinstance(env.get("slo"), dict)), None)
    if given:
        return pair(given), "set for the run (compare.py --slo)"
    runs = read(ds.envs)
    passed_over = f"; {runs.note}" if runs.note else ""
    for _, targets in runs.parsed:
        for target in targets:
            if limits := legacy_slo(target):
                return limits, f"the run's first latency target, {target.label()}, per request{passed_over}"
    return (None, f"default: {SLO_SOURCE}{passed_over}") if passed_over else (None, None)
