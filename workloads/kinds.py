"""The lazy registry of workload kinds: the measuring half of each kind, found by its folder.

A kind is a room, one folder ``workloads/<kind>/`` holding everything the kind is: ``kind.py`` (its
:class:`Kind`, named ``KIND``: the file-format model ``spec``, the planner ``plan``, how a finished request
is scored into record fields ``score``, whether later engine starts measure it again ``repeated``, which
group runner the harness hands its groups to ``runs_as``, the fields that name files and what it makes
of them once read ``files``/``with_files``, the command-line options that override its fields
``overrides``, the levels its capacity search adds ``search_groups`` and how it judges them
``search_judge``, its lint ``lint``), its built-in workload ``builtin.yaml``, and its report half
``report/`` (registered in ``reports.kinds``). The registry is every folder of the ``workloads`` package
that holds a ``kind.py`` (``contract.registry.discover_rooms``), in the kinds' ``order``; the reader, the
planner, the command line and the runner loop over it, and none of them names a kind.

    kind("sweep").plan(spec, renderer, plan, repeats, start=0)
    file_model()      # the pydantic model of a workload file: every registered kind's spec

Adding a kind (``docs/guides/adding-a-kind.md``; ``tests/example_kind`` is one): its folder, and nothing else.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Union

from pydantic import BaseModel, Field, create_model, model_validator

from llm_call_anatomy.contract.registry import Registry, discover_rooms
from llm_call_anatomy.workloads.spec import mistake

if TYPE_CHECKING:
    from llm_call_anatomy.contract.plan import Group, Step

# name -> "workloads.<name>.kind:KIND", filled by rediscover() (below) from the rooms on disk
REGISTRY: dict[str, str] = {}


def _no_score(step: Step, output: Any) -> dict[str, Any]:  # the default: nothing to score
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
    # a reader of the kind's own, used instead of ``reads``: (path, first) -> (content, [(line, mistake)])
    reader: Callable[[Path, int | None], tuple[Any, list]] | None = None


@dataclass(frozen=True)
class Override:
    """A command-line option that sets fields of every workload of one kind (the flag itself is the CLI's).

    ``fields`` turns the option's value into field overrides (ValueError, one line, on a mistake); the
    spec is validated again with them, as a workload file would be. ``cpu_default``: the option's
    value for the kind's built-in workloads on a CPU when the option is not given (their own scale
    would take hours there). ``missing``: the one-line mistake when the option is given and no workload
    of the run is of the kind (empty: the option is then ignored). ``repeats_field``: the spec's field that
    counts the kind's own repeats (a grid that ``repeats`` does not multiply); when ``--repeats R`` is given
    and this option is not, every workload of the kind runs at most R of them (``--repeats 1`` is a small
    run for every workload)."""

    option: str  # "--load"; its argparse dest is the name without the dashes, "-" read as "_"
    fields: Callable[[Any], dict[str, Any]]
    cpu_default: Any = None
    missing: str = ""
    repeats_field: str | None = None

    @property
    def dest(self) -> str:
        return self.option.lstrip("-").replace("-", "_")


@dataclass(frozen=True)
class Lint:
    """A kind's check of its workloads before anything runs (``--lint-only``, and every run's plan).

    ``check(spec, renderer)`` -> the findings for one workload (a list; env.json keeps each one's fields);
    ``report(specs, found)`` -> (the lines to print, exit code: 0 clean, 1 a mistake the workload can mend),
    for the kind's workloads and their findings by workload name (empty: none of the run's)."""

    check: Callable[[Any, Any], list[Any]]
    report: Callable[[list[Any], dict[str, list[Any]]], tuple[list[str], int]]


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
    # how the capacity search judges a level for a target (None: ``contract.capacity.judge`` on every
    # request): (target, the level's request rows, its facts, its LevelStats) -> Verdict (a class's alone)
    search_judge: Callable[..., Any] | None = None
    # a check of a workload before anything runs (``--lint-only`` and the run's plan): (spec, renderer) ->
    # findings, each with ``real`` (a break the workload can mend) and ``describe`` lines (``workloads.lint``)
    lint: Callable[[Any, Any], Any] | None = None
    order: int = (
        100  # where the kind stands among the built-ins (what a run without --workloads runs, in order)
    )


KINDS: Registry[Kind] = Registry("workload kind", REGISTRY, check_name=True)


def rediscover() -> tuple[str, ...]:
    """Read the rooms again (a plugin, or a test, added a directory to ``workloads.__path__``): the
    registry then holds every room with a ``kind.py``; in the kinds' ``order`` (then by name) from the first
    time the names are asked for (:func:`_in_order`: the order is each ``KIND``'s, so reading it imports the
    kinds, which is never done while one of them is being imported)."""
    global _ordered
    REGISTRY.clear()
    REGISTRY.update(discover_rooms("llm_call_anatomy.workloads", "kind"))
    _ordered = False
    return names()


_ordered = False


def _in_order() -> None:
    global _ordered
    if _ordered:
        return
    _ordered = True
    found = dict(REGISTRY)

    def order(name: str) -> tuple[int, str]:
        module, _, attr = found[name].partition(":")
        return getattr(importlib.import_module(module), attr).order, name

    REGISTRY.clear()
    REGISTRY.update({n: found[n] for n in sorted(found, key=order)})


def names() -> tuple[str, ...]:
    _in_order()
    return KINDS.names()


def kind(name: str) -> Kind:
    """The registered kind (its module imported now); KeyError for an unknown name."""
    return KINDS.get(name)


def room(name: str) -> Path:
    """The folder of kind ``name`` (KeyError for an unknown name)."""
    module = KINDS.entries[name].partition(":")[0] if name in KINDS else None
    if module is None:
        raise KeyError(f"unknown workload kind {name!r} (registered: {', '.join(KINDS.names()) or 'none'})")
    return Path(importlib.import_module(module).__file__).parent


def repeated_kinds() -> tuple[str, ...]:
    """Kinds measured again in every engine start after the first (``--starts K``)."""
    return tuple(n for n in names() if kind(n).repeated)


def file_model() -> type[BaseModel]:
    """``{workloads: [...]}``, each entry one registered kind's spec, told apart by ``kind``."""
    _in_order()
    return _file_model(tuple(KINDS.entries.items()))


@functools.cache
def _file_model(entries: tuple[tuple[str, str], ...]) -> type[BaseModel]:  # keyed by the registry's entries

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


REGISTRY.update(
    discover_rooms("llm_call_anatomy.workloads", "kind")
)  # by name; in order once asked (names())
