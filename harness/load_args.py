"""The command line's load options: ``--load`` (overrides for every load workload) and ``--slo``.

    --load levels=1:4,users=4,requests=8,turns=3,output_tokens=16
    --slo ttft_ms=2000,tpot_ms=100

``--load`` is the load kind's override (``workloads.load.KIND.overrides``): its values go through
the workload file's own validation (``workloads.overrides``), so a level of 0 or a concurrency
above the users is the same one-line mistake as in a file. Lists are written with ``:``
(``levels=1:8:32``; ``rates=`` for none). ``--slo`` sets the goodput target the report counts
requests against (defaults: ``reports.load_slo.DEFAULT_SLO``). The names here are re-exports for
the tests and the benchmarks; the definitions live with the kind and in ``contract.options``.
"""

from __future__ import annotations

from typing import Any

from contract.options import SLO_KEYS, parse_pairs, parse_slo
from workloads.load import CPU_LOAD, LIST_FIELDS, parse_load
from workloads.overrides import apply_fields

__all__ = ["CPU_LOAD", "LIST_FIELDS", "SLO_KEYS", "apply_load", "parse_load", "parse_pairs", "parse_slo"]


def apply_load(specs: list, overrides: dict[str, Any]) -> list:
    """Every load spec (every kind that takes ``--load``) with the overrides, validated again; ValueError (one line)."""
    return apply_fields(specs, "--load", overrides)
