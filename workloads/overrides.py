"""Command-line overrides of workload fields, through each kind's ``Override`` (``workloads.kinds``).

    specs = apply(specs, {"--load": "levels=1:4,users=4", "--json-calls": 8})   # ValueError: one line

An option sets fields of every workload whose kind registers it; the spec is validated again
with them, so a bad value is the same one-line mistake as in a workload file
(``--load: load-sessions: levels.0: Input should be greater than or equal to 1``). The command
line defines the flags; which kind an option belongs to and what it sets is the kind's.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from llm_call_anatomy.workloads import kinds

__all__ = ["apply", "cpu_defaults", "options", "repeats_caps", "with_fields"]


def options() -> list[kinds.Override]:
    """Every registered kind's overrides, in registration order."""
    return [o for name in kinds.names() for o in kinds.kind(name).overrides]


def with_fields(spec: Any, fields: dict[str, Any], option: str) -> Any:
    """``spec`` with ``fields`` set, validated again; ValueError naming the option, workload and field."""
    doc = {**spec.model_dump(exclude_none=True), **fields}
    try:
        return type(spec).model_validate(doc)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in err["loc"])
        raise ValueError(
            f"{option}: {spec.name}: {where + ': ' if where else ''}"
            f"{err['msg'].removeprefix('Value error, ')}"
        ) from exc


def apply_fields(specs: list, option: str, fields: dict[str, Any]) -> list:
    """Every spec whose kind registers ``option`` with ``fields`` set (already parsed)."""
    owners = {name for name in kinds.names() if any(o.option == option for o in kinds.kind(name).overrides)}
    missing = next((o.missing for o in options() if o.option == option and o.missing), "")
    if missing and not any(s.kind in owners for s in specs):
        raise ValueError(missing)
    return [with_fields(s, fields, option) if s.kind in owners else s for s in specs]


def apply(specs: list, values: dict[str, Any]) -> list:
    """Every given option (value not None) applied to the workloads of its kind."""
    for name in kinds.names():
        for o in kinds.kind(name).overrides:
            value = values.get(o.option)
            if value is not None:
                if o.missing and not any(s.kind == name for s in specs):
                    raise ValueError(o.missing)
                fields = o.fields(value)
                specs = [with_fields(s, fields, o.option) if s.kind == name else s for s in specs]
    return specs


def cpu_defaults(specs: list, values: dict[str, Any], builtin: set[str]) -> tuple[list, list[str]]:
    """On a CPU: each option not given set to its ``cpu_default`` on the built-in workloads of its kind.

    Returns the specs and one line per option applied (for the console). A workload file's
    workloads run as written."""
    notes = []
    for name in kinds.names():
        for o in kinds.kind(name).overrides:
            if o.cpu_default is None or values.get(o.option) is not None:
                continue
            chosen = {s.name for s in specs if s.kind == name and s.name in builtin}
            if chosen:
                fields = o.fields(o.cpu_default)
                specs = [with_fields(s, fields, o.option) if s.name in chosen else s for s in specs]
                notes.append(
                    f"{name} workloads at the CPU's scale: {o.option} {o.cpu_default} "
                    f"(pass {o.option} to choose)"
                )
    return specs, notes


def repeats_caps(specs: list, values: dict[str, Any], repeats: int) -> tuple[list, list[str]]:
    """``--repeats R`` given: each option with a ``repeats_field`` that was not given caps that field at R on
    every workload of its kind (a kind whose grid ``repeats`` does not multiply is small when the run is).

    Returns the specs and one line per option applied (for the console)."""
    notes = []
    for name in kinds.names():
        for o in kinds.kind(name).overrides:
            if o.repeats_field is None or values.get(o.option) is not None:
                continue
            capped = {s.name for s in specs if s.kind == name and getattr(s, o.repeats_field, 0) > repeats}
            if capped:
                fields = o.fields(repeats)
                specs = [with_fields(s, fields, o.option) if s.name in capped else s for s in specs]
                notes.append(
                    f"{name} workloads at --repeats {repeats}: {o.option} {repeats} "
                    f"(pass {o.option} to choose)"
                )
    return specs, notes
