"""The lazy registry of workload kinds: the measuring half of each kind, in one place per kind.

A kind is one :class:`Kind` object in its own module (``workloads/<kind>.py``, named
``KIND``): its file-format model (``spec``), its planner (``plan``), how a finished request is
scored into record fields (``score``), whether later engine starts measure it again
(``repeated``) and, for kinds whose requests run concurrently, which step runner the harness
hands a group to (``runs_as``). The loader, the planner and the runner loop over this registry;
none of them names a kind. The report half of a kind is registered in ``reports.kinds``.

    kind("sweep").plan(spec, renderer, plan, repeats, start=0)
    file_model()      # the pydantic model of a workload file: every registered kind's spec

Adding a kind: its module with ``KIND``, one line in :data:`REGISTRY`, its built-in YAML, and
its report half (``reports/kinds.py``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Union

from pydantic import BaseModel, Field, create_model, model_validator

from contract.registry import Registry

if TYPE_CHECKING:
    from contract.plan import Step

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
class Kind:
    name: str
    spec: type[BaseModel]  # the file format (pydantic; ``kind: Literal[name]``)
    plan: Callable[..., None]  # plan(spec, renderer, out: Plan, repeats, start=0)
    score: Callable[[Step, Any], dict[str, Any]] = _no_score  # (step, RawOutput) -> record fields
    repeated: bool = False  # measured again in engine starts after the first (--starts K)
    runs_as: str = "sequential"  # "sequential": one request at a time; "load": the group is one load level
    timing_only: bool = False  # measured for timing alone: no per-step log-probs asked (they add work to each step)


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
