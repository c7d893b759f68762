"""The SLO targets each run wrote (env.json ``slo_targets``, ``compare.py --slo``), read in one place for
every reader of them in the report: the goodput pair (``reports.assemble.slo_of``) and the capacity
targets (``reports.analysis.capacity.targets_of``).

A run whose targets do not parse (an env.json edited by hand, a run from a build whose ``--slo`` grammar
differed) is passed over for the next run's, never in silence: :attr:`RunTargets.note` names it with its
parse error in one line, for the page to say beside the figures that count against another target.
"""

from __future__ import annotations

from dataclasses import dataclass

from contract.slo import Target, parse_targets


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
