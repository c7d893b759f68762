"""One lazy registry for every extension point: backends, the measuring kinds, the report kinds.

A registry maps names to ``"module:attribute"`` strings and imports a module only when its entry
is asked for, so listing the names (``--help``, a usage check, the built-in list) costs nothing and
an engine that is not installed here fails only when it is chosen:

    BACKENDS = Registry("backend", {"hf": "backends.hf:HFBackend", ...})
    BACKENDS.names()          # ("hf", ...), in registration order
    BACKENDS.get("hf")        # the class, imported now (KeyError for a name not registered)

``entries`` is the plain dict behind the registry: a test (or a plugin) adds an entry by adding a
key (``monkeypatch.setitem(registry.entries, name, target)``), removes it the same way, and the
next ``get`` sees it. The module is imported once (``sys.modules``) but its attribute is read at
every ``get``, so an entry pointed elsewhere, or an attribute replaced in its module
(``monkeypatch.setattr(module, "EchoBackend", ...)``), is what the next ``get`` returns. ``check_name``: the
imported object's ``name`` attribute must equal its key (a kind object says which kind it is; a typo in the
table fails loudly instead of shadowing a kind).

:func:`discover_rooms` builds such a table from folders: a workload kind is one folder (a "room") of the
``workloads`` package, found by the file it holds, so adding a kind edits no table.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Generic, TypeVar

T = TypeVar("T")

__all__ = ["Registry", "discover_rooms"]


class Registry(Generic[T]):
    """Names to ``module:attribute`` strings, imported on first use."""

    def __init__(self, what: str, entries: dict[str, str], *, check_name: bool = False) -> None:
        self.what = what  # "backend", "workload kind": for error messages
        self.entries = entries
        self.check_name = check_name

    def names(self) -> tuple[str, ...]:
        return tuple(self.entries)

    def __contains__(self, name: object) -> bool:
        return name in self.entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.entries)

    def get(self, name: str) -> T:
        """The registered object, its module imported now; KeyError naming the choices for an unknown name.

        An ImportError of the module propagates (the caller says what it means: a backend not
        installed here, a plugin's missing dependency)."""
        if name not in self.entries:
            raise KeyError(f"unknown {self.what} {name!r} (registered: {', '.join(self.entries) or 'none'})")
        target = self.entries[name]
        module_name, sep, attr = target.partition(":")
        if not sep or not attr:
            raise ValueError(f"{self.what} {name!r}: registry entry {target!r} is not 'module:attribute'")
        found = getattr(importlib.import_module(module_name), attr)
        if self.check_name and getattr(found, "name", None) != name:
            raise RuntimeError(
                f"{target} registers {self.what} {getattr(found, 'name', None)!r}, not {name!r}"
            )
        return found

    def find(self, name: str) -> T | None:
        """The registered object, or None for a name not registered."""
        return self.get(name) if name in self.entries else None

    def all(self) -> list[T]:
        """Every registered object, in registration order (imports them all)."""
        return [self.get(n) for n in self.entries]


def discover_rooms(package: str, module: str, attribute: str = "KIND") -> dict[str, str]:
    """Every room of ``package`` that holds ``module`` (a file ``module.py`` or a folder ``module/``): the
    room's folder name -> ``"package.room.module:attribute"``, by name.

    The rooms are the sub-folders (with an ``__init__.py``) of every directory on the package's ``__path__``,
    read without importing the package where it is not imported yet; where two directories hold a room of
    one name, the first on the path wins. A plugin (or a test) adds a directory to the package's
    ``__path__`` and its rooms are found the next time this is called."""
    loaded = sys.modules.get(package)
    if loaded is not None and hasattr(loaded, "__path__"):
        search = list(loaded.__path__)
    else:
        spec = importlib.util.find_spec(package)
        search = list(spec.submodule_search_locations or []) if spec else []
    found: dict[str, str] = {}
    for directory in search:
        base = Path(directory)
        if not base.is_dir():
            continue
        for room in sorted(base.iterdir()):
            if not (room.name.isidentifier() and (room / "__init__.py").is_file()):
                continue
            if (room / f"{module}.py").is_file() or (room / module / "__init__.py").is_file():
                found.setdefault(room.name, f"{package}.{room.name}.{module}:{attribute}")
    return dict(sorted(found.items()))
