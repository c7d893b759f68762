"""Which targets a Load section is judged against, and the run that would narrow a bracket (issue 40).

- **Targets**: the report's own ``--slo`` (``python compare.py report RUNS --slo NAME:...``) re-computes every
  capacity cell, bracket, cost, the summary and the sizing from the records against the targets given, for
  every column; without it each column is judged against its own run's targets
  (``capacity.targets_by_column``). :func:`column_targets` gives the columns' targets and the sentence that
  says which on the page.
- **Goodput** counts each column's requests against its own run's pair (:func:`goodput_by_column`: the run's
  ``compare.py --slo`` pair, else its first target with a TTFT and a TPOT limit), or against the report's
  ``--slo`` where one is given: never one run's pair for another run's requests.
- **The level between**: where a target falls between two measured levels farther apart than the search's
  ratio (a re-targeted run was never searched for that target), :func:`between` gives the level at the
  bracket's geometric midpoint and the ``compare.py`` command that measures it: the run's own command line
  (env.json ``argv``) for that backend, with that level alone, no search, the target, and a new ``--out``
  beside the run's. A run's plan fixes its levels and targets, so ``--resume`` of the run itself refuses a
  new level; the new run resumes with ``--resume`` if it is cut, and reports beside the first
  (``python compare.py report RUN NEW``).
"""

from __future__ import annotations

import math
import shlex
from types import SimpleNamespace
from typing import Any

from llm_call_anatomy.contract.capacity import DEFAULT_RATIO
from llm_call_anatomy.contract.options import goodput_pair as pair
from llm_call_anatomy.contract.options import parse_pairs
from llm_call_anatomy.contract.slo import Target
from llm_call_anatomy.reports.stats import num
from llm_call_anatomy.workloads.load.report import capacity
from llm_call_anatomy.workloads.load.report.capacity_cells import row_letter
from llm_call_anatomy.workloads.load.report.targets import slo_of

GIVEN = "given for this report (python compare.py report --slo {}): each run's own targets are not used"
OWN = "each run's own (env.json slo_targets)"


def column_targets(
    envs: dict[str, dict], runs: dict[str, str], given: tuple[Target, ...] | None
) -> tuple[dict[str, tuple[Target, ...]], str]:
    """Each column's targets (``runs``: column -> its run id) and where they came from, as page words."""
    if given:
        return {label: tuple(given) for label in runs}, GIVEN.format(" ".join(t.spec() for t in given))
    return capacity.targets_by_column(envs, runs), OWN


def goodput_pair(given: tuple[Target, ...] | None) -> dict[str, float] | None:
    """The per-request goodput pair of the report's ``--slo`` targets, as ``python compare.py report --slo``
    reads it (``contract.options.goodput_pair``); None where none is given or none has a TTFT or TPOT
    limit."""
    try:
        return pair([t.spec() for t in given]) if given else None
    except ValueError:
        return None


def goodput_by_column(
    envs: dict[str, dict], runs: dict[str, str], given: dict[str, float] | None
) -> dict[str, dict[str, float] | None]:
    """Each column's per-request goodput pair: the report's (``given``) for all, else its own run's (None:
    a run from before named targets, the page's default pair)."""
    if given:  # a limit it lacks comes from the page's default, as for the page's goodput line (slo_of)
        pair, _ = slo_of(SimpleNamespace(envs={}), given)
        return {label: pair for label in runs}
    out = {}
    for label, run_id in runs.items():
        pair, _ = slo_of(SimpleNamespace(envs={run_id: envs.get(run_id) or {}}), None)
        out[label] = pair
    return out


def midpoint(row: dict[str, Any]) -> float | None:
    """The level between a bracket's ends (geometric midpoint; a concurrency rounded, strictly inside), where
    the ends are farther apart than the search's ratio; None where there is none to run."""
    lo, hi = num(row.get("value")), num(row.get("next_up"))
    if row.get("bound") not in ("bracket", "range") or lo is None or hi is None or lo <= 0:
        return None
    if hi / lo <= DEFAULT_RATIO:
        return None
    mid = math.sqrt(lo * hi)
    if row.get("loop") == "closed":
        mid = float(round(mid))
        return mid if lo < mid < hi else None
    return float(f"{mid:.3g}")


def _argv(argv: list[str]) -> list[tuple[str, str | None]]:
    """``--opt value`` / ``--opt=value`` / ``--flag`` pairs, in order."""
    out: list[tuple[str, str | None]] = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a.startswith("--") and "=" in a:
            k, v = a.split("=", 1)
            out.append((k, v))
        elif a.startswith("--") and i + 1 < len(argv) and not argv[i + 1].startswith("--"):
            out.append((a, argv[i + 1]))
            i += 1
        else:
            out.append((a, None))
        i += 1
    return out


def command(
    env: dict, backend: str, row: dict[str, Any], level: float, target: Target, also: tuple[float, ...] = ()
) -> str:
    """The ``compare.py`` command that measures ``level`` of ``row``'s loop for ``backend`` against
    ``target``: the run's own command line (env.json ``argv``) with that backend, that level alone (with
    ``also``: those levels too, so that the new run brackets on its own) and no search, the target, and a
    new ``--out`` beside the run's."""
    closed = row.get("loop") == "closed"
    text = ":".join(f"{x:g}" for x in sorted({*also, level}))
    pairs = [
        (k, v) for k, v in _argv([str(a) for a in env.get("argv") or []]) if k not in ("--resume", "--slo")
    ]
    load = next((v for k, v in pairs if k == "--load" and v), "")
    try:
        fields = parse_pairs(load, "--load") if load else {}
    except ValueError:
        fields = {}
    fields.update({"rates": "", "levels": text} if closed else {"levels": "", "rates": text})
    fields["search_levels"] = "0"
    suffix = f"-{row_letter(row)}{level:g}" if closed else f"-rate{level:g}"  # U: users who think
    out_dir = next((v for k, v in pairs if k == "--out" and v), None) or f"runs/{env.get('run_id', 'run')}"
    kept = [(k, v) for k, v in pairs if k not in ("--load", "--out", "--backend")]
    words = ["python", "compare.py", "--backend", backend]
    for k, v in kept:
        words += [k] if v is None else [k, v]
    words += ["--load", ",".join(f"{k}={v}" for k, v in fields.items())]
    words += ["--slo", target.spec(), "--out", out_dir + suffix]
    return shlex.join(words)


def between(row: dict[str, Any], env: dict, backend: str, target: Target) -> dict[str, Any] | None:
    """``{"level", "command"}`` for a capacity row whose bracket is wider than the search's ratio; None
    otherwise."""
    level = midpoint(row)
    if level is None or target.throughput_only:
        return None
    return {"level": level, "command": command(env, backend, row, level, target)}
