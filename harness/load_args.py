"""The command line's load options: ``--load`` (overrides for every load workload) and ``--slo``.

    --load levels=1:4,users=4,requests=8,turns=3,output_tokens=16
    --slo chat:ttft_p90_ms=500,tpot_p90_ms=50 --slo batch:

``--load`` values go through the workload file's own validation (``workloads.load.LoadSpec``), so
a level of 0 or a concurrency above the users is the same one-line mistake as in a file. Lists are
written with ``:`` (``levels=1:8:32``; ``rates=`` for none). ``--slo`` (repeatable) names the latency
targets the capacity search and the report judge levels against (``contract.slo``; defaults:
``contract.slo.DEFAULT_SPECS``, justified in ``docs/capacity.md``).
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from contract.options import parse_pairs, parse_slo

__all__ = ["CPU_LOAD", "LIST_FIELDS", "apply_load", "parse_load", "parse_pairs", "parse_slo"]

# What a load workload runs on a CPU when --load says nothing (the built-in's levels up to 128, with
# 128 ten-turn sessions, would take hours there): levels 1 and 4, four two-turn sessions, four 192-token
# fixed-shape requests (0 or 160 shared) per level, 8 output tokens; no capacity search (four requests
# a level leave no steady state to judge).
CPU_LOAD = "levels=1:4,search_levels=0,users=4,requests=4,max_turns=2,rates=,output_tokens=8,prompt_tokens=192,shared_prefix_tokens=0:160"
LIST_FIELDS = ("levels", "rates", "shared_prefix_tokens")
FIXED_FIELDS = ("name", "kind")  # what --load cannot set for every load workload at once


def parse_load(text: str) -> dict[str, Any]:
    """``--load`` as field overrides (lists split at ``:``)."""
    out: dict[str, Any] = {}
    for key, value in parse_pairs(text, "--load").items():
        if key in FIXED_FIELDS:
            raise ValueError(f"--load {key}=...: sets every load workload's {key} at once (two loads would share one "
                             f"{key}); set it in a workload file")
        out[key] = [v for v in value.split(":") if v] if key in LIST_FIELDS else value
    return out


def apply_load(specs: list, overrides: dict[str, Any]) -> list:
    """Every load spec with the overrides, validated again; ValueError (one line) on a mistake."""
    from workloads.load import LoadSpec

    if not any(spec.kind == "load" for spec in specs):
        raise ValueError("--load: none of this run's workloads is a load workload (add --workloads load, or a "
                         "kind: load workload with --workload-file)")
    out = []
    for spec in specs:
        if spec.kind != "load":
            out.append(spec)
            continue
        doc = {**spec.model_dump(exclude_none=True), **overrides}
        try:
            out.append(LoadSpec.model_validate(doc))
        except ValidationError as exc:
            err = exc.errors(include_url=False)[0]
            where = ".".join(str(p) for p in err["loc"])
            raise ValueError(f"--load: {spec.name}: {where + ': ' if where else ''}{err['msg'].removeprefix('Value error, ')}") from exc
    return out

