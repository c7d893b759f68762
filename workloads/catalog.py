"""The catalogue of workloads: the built-in studies (each kind room's ``builtin.yaml``), user files in the
same format, and the plan they make.

A room may also ship named variants of its built-in, one file each: ``builtin-<variant>.yaml`` is the
built-in ``<kind>-<variant>`` (the conversation room's ``builtin-long.yaml`` is ``conversation-long``).
A variant runs only when ``--workloads`` names it: ``--workloads <kind>`` (and a run without
``--workloads``) means the room's ``builtin.yaml`` alone, so the default run stays what it was
while a room keeps a second size or shape of its study beside it. A file per variant, rather than
a second workload in ``builtin.yaml``, because everything in a built-in file runs when its name is
given (the load room's two workloads are halves of one study; a variant is an alternative).

    specs = read_workloads(["conversation", "sweep"], ["my_study.yaml"])   # checked, or WorkloadFileError
    plan = build_plan(specs, renderer, repeats=5, starts=2)   # every request, as token ids

The package's face (``workloads/__init__.py``) hands these names on, so ``from workloads import
read_workloads`` reads as before.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from llm_call_anatomy.contract.chat import Renderer
from llm_call_anatomy.contract.plan import Plan
from llm_call_anatomy.workloads.kinds import kind, names, room
from llm_call_anatomy.workloads.reader import WorkloadFileError, file_hash, hashes, read_workload_file
from llm_call_anatomy.workloads.spec import WorkloadSpec

__all__ = [
    "BUILTIN",
    "VARIANTS",
    "builtin_file",
    "WorkloadFileError",
    "build_plan",
    "file_hash",
    "hashes",
    "read_builtin",
    "read_workload_file",
    "read_workloads",
]


def _variant_files() -> dict[str, Path]:
    """``<kind>-<variant>`` -> the room's ``builtin-<variant>.yaml``, in the kinds' order."""
    found: dict[str, Path] = {}
    for n in names():
        for path in sorted(room(n).glob("builtin-*.yaml")):
            found[f"{n}-{path.stem.removeprefix('builtin-')}"] = path
    return found


_VARIANTS = _variant_files()


def builtin_file(name: str) -> Path:
    """The built-in workload file of ``name``: ``builtin.yaml`` in the kind's room, or a variant's file."""
    if name in _VARIANTS:
        return _VARIANTS[name]
    return room(name) / "builtin.yaml"


# What runs when no workload is named: every registered kind that ships a built-in file, in the kinds'
# order (``load`` is the many-users study).
BUILTIN: tuple[str, ...] = tuple(n for n in names() if (room(n) / "builtin.yaml").is_file())
# The named variants: built-ins that run only when ``--workloads`` names them.
VARIANTS: tuple[str, ...] = tuple(_VARIANTS)


def read_builtin(names: Iterable[str]) -> list[WorkloadSpec]:
    specs: list[WorkloadSpec] = []
    for name in names:
        if name not in BUILTIN and name not in VARIANTS:
            known = ", ".join(BUILTIN) + (f"; variants: {', '.join(VARIANTS)}" if VARIANTS else "")
            raise WorkloadFileError(f"unknown workload {name!r} (built-in: {known})")
        specs += read_workload_file(builtin_file(name))
    return specs


def read_workloads(builtin: Iterable[str], files: Iterable[str | Path]) -> list[WorkloadSpec]:
    """Built-ins by name, then every file; one WorkloadFileError listing the mistakes of all files."""
    specs, errors = read_builtin(builtin), []
    for path in files:
        try:
            specs += read_workload_file(path)
        except WorkloadFileError as exc:
            errors.append(str(exc))
    if errors:
        raise WorkloadFileError("\n".join(errors))
    names = [s.name for s in specs]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise WorkloadFileError(
            f"workload name(s) declared twice: {', '.join(twice)} (records are keyed by the name)"
        )
    return specs


def build_plan(specs: Iterable[WorkloadSpec], renderer: Renderer, repeats: int, starts: int = 1) -> Plan:
    """Every request of every engine start: start 0 runs every workload, later starts the kinds in
    registered as ``repeated`` (each step says its start in ``Step.engine_start``)."""
    specs = list(specs)
    plan = Plan()
    for start in range(starts):
        for spec in specs:
            if start and not kind(spec.kind).repeated:
                continue
            first = len(plan.groups)
            kind(spec.kind).plan(spec, renderer, plan, repeats, start=start)
            for group in plan.groups[first:]:
                for step in group.steps:
                    step.engine_start = start
    return plan
