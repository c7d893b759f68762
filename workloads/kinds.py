"""The lazy registry of workload kinds: the measuring half of each kind, in one place per kind.

A kind is one :class:`Kind` object in its own module (``workloads/<kind>.py``, named
``KIND``): its file-format model (``spec``), its planner (``plan``), how a finished request is
scored into record fields (``score``), whether later engine starts measure it again
(``repeated``), which group runner the harness hands its groups to (``runs_as``), the fields
that name files and what it makes of them once read (``files``, ``with_files``), the
command-line options that override its fields (``overrides``), and the levels its capacity
search adds (``search_groups``). The reader, the planner, the
command line and the runner loop over this registry; none of them names a kind. The report half
of a kind is registered in ``reports.kinds``.

    kind("sweep").plan(spec, renderer, plan, repeats, start=0)
    file_model()      # the pydantic model of a workload file: every registered kind's spec

Adding a kind (``docs/adding-a-kind.md``; ``tests/example_kind`` is one): its module with
``KIND``, one line in :data:`REGISTRY`, its built-in YAML, and its report half (``reports/kinds.py``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Union

from pydantic import BaseModel, Field, create_model, model_validator

from contract.registry import Registry

if TYPE_CHECKING:
    from contract.plan import Group, Step

REGISTRY: dict[str, str] = {
    "conversation": "workloads.conversation:KIND",
    "sweep": "workloads.sweep:KIND",
    "json": "workloads.json_extraction:KIND",
    "template": "workloads.template:KIND",
    "load": "workloads.load:KIND",
}


def _no_score(step: Step, output: Any) -> dict[str, Any]:  # noqa: ARG001 - the default: nothing to score
    return {}


@dataclass(frozen=True)
class FileRef:
    """A field of a kind's spec that names a file, read (relative to the workload file) when the file is
    loaded."""

    loc: tuple[str, ...]  # where the path sits in a workload entry: ("filler_file",), ("transcripts", "path")
    reads: str = (
        "text"  # "text": a non-empty UTF-8 file; "transcripts": JSONL messages (``workloads.transcripts``)
    )
    takes_first: bool = False  # the mapping holding the path may say ``first: K`` (read only the first K)


@dataclass(frozen=True)
class Override:
    """A command-line option that sets fields of every workload of one kind (the flag itself is the CLI's).

    ``fields`` turns the option's value into field overrides (ValueError, one line, on a mistake); the
    spec is validated again with them, as a workload file would be. ``cpu_default``: the option's
    value for the kind's built-in workloads on a CPU when the option is not given (their own scale
    would take hours there). ``missing``: the one-line mistake when the option is given and no workload
    of the run is of the kind (empty: the option is then ignored)."""

    option: str  # "--load"; its argparse dest is the name without the dashes, "-" read as "_"
    fields: Callable[[Any], dict[str, Any]]
    cpu_default: Any = None
    missing: str = ""

    @property
    def dest(self) -> str:
        return self.option.lstrip("-").replace("-", "_")


@dataclass(frozen=True)
class Kind:
    name: str
    spec: type[BaseModel]  # the file format (pydantic; ``kind: Literal[name]``)
    plan: Callable[..., None]  # plan(spec, renderer, out: Plan, repeats, start=0)
    score: Callable[[Step, Any], dict[str, Any]] = _no_score  # (step, RawOutput) -> record fields
    repeated: bool = False  # measured again in engine starts after the first (--starts K)
    runs_as: str = (
        "sequential"  # the harness's group runner: "sequential" (one request at a time) or "concurrent"
    )
    timing_only: bool = (
        False  # measured for timing alone: no per-step log-probs asked (they add work to each step)
    )
    files: tuple[FileRef, ...] = ()  # the fields that name a file (the first one given is read)
    # (spec, what its file held or None, workloads.reader.EntryContext) -> the specs it stands for
    with_files: Callable[[Any, Any, Any], list[Any]] | None = None
    overrides: tuple[Override, ...] = ()  # command-line options that set fields of every workload of the kind
    # the groups of a level the capacity search adds, cut from the plan's pool of the variant (only for a kind
    # whose planner puts a ``search`` in a group's load settings): (the search's settings, the pool's warm-up
    # steps, its timed steps, the variant's block, concurrency, rate_rps, the target searched for) -> groups
    search_groups: Callable[..., list[Group]] | None = None


KINDS: Registry[Kind] = Registry("workload kind", REGISTRY, check_name=True)


def names() -> tuple[str, ...]:
    return KINDS.names()


def kind(name: str) -> Kind:
    """The registered kind (its module imported now); KeyError for an unknown name."""
    return KINDS.get(name)


def repeated_kinds() -> tuple[str, ...]:
    """Kinds measured again in every engine start after the first (``--starts K``)."""
    return tuple(n for n in KINDS if kind(n).repeated)


def file_model() -> type[BaseModel]:
    """``{workloads: [...]}``, each entry one registered kind's spec, told apart by ``kind``."""
    return _file_model(tuple(KINDS.entries.items()))


@functools.cache
def _file_model(entries: tuple[tuple[str, str], ...]) -> type[BaseModel]:  # keyed by the registry's entries
    from workloads.spec import mistake

    specs = tuple(kind(n).spec for n, _ in entries)
    entry = Annotated[Union[specs], Field(discriminator="kind")]  # noqa: UP007 - built from the registry

    def unique_names(self: Any) -> Any:
        seen: set[str] = set()
        for i, w in enumerate(self.workloads):
            if w.name in seen:
                raise mistake(f"workload name {w.name!r} is used twice", ["workloads", i, "name"])
            seen.add(w.name)
        return self

    return create_model(
        "WorkloadFile",
        __config__={"extra": "forbid"},
        __validators__={"_unique_names": model_validator(mode="after")(unique_names)},
        workloads=(list[entry], Field(min_length=1)),
    )
