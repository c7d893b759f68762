"""The command line's load options: ``--load`` (overrides for every load workload) and ``--slo``.

    --load levels=1:4,users=4,requests=8,turns=3,output_tokens=16
    --slo chat:ttft_p90_ms=500,tpot_p90_ms=50 --slo batch:

``--load`` is the load kind's override (``workloads.load.KIND.overrides``): its values go through
the workload file's own validation (``workloads.overrides``), so a level of 0 or a concurrency
above the users is the same one-line mistake as in a file. Lists are written with ``:``
(``levels=1:8:32``; ``rates=`` for none). ``--slo`` (repeatable) names the latency targets the
capacity search and the report judge levels against (``contract.slo``; defaults:
``contract.slo.DEFAULT_SPECS``, justified in ``docs/capacity.md``). The names here are re-exports
for the tests and the benchmarks; the definitions live with the kind and in ``contract.options``.
"""

from __future__ import annotations

from typing import Any

from contract.options import parse_pairs, parse_slo
from workloads.load import CPU_LOAD, FIXED_FIELDS, LIST_FIELDS, parse_load
from workloads.overrides import apply_fields

__all__ = ["CPU_LOAD", "FIXED_FIELDS", "LIST_FIELDS", "apply_load", "parse_load", "parse_pairs", "parse_slo"]


def apply_load(specs: list, overrides: dict[str, Any]) -> list:
    """Every load spec (every kind that takes ``--load``) with the overrides, validated again; ValueError (one line)."""
    return apply_fields(specs, "--load", overrides)
