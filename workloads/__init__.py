"""Workloads: the kinds of study, one room (folder) each, and the generic pieces every kind uses.

    workloads/<kind>/        a kind's room: kind.py (its spec, planner, scoring), builtin.yaml, report/
    workloads/kinds.py       the registry of kinds, found by their folders
    workloads/catalog.py     the built-ins, reading workload files, building the plan
    workloads/reader.py      the file format's reader (line numbers, files a workload names)
    workloads/spec.py        the fields every kind's spec shares

This face imports nothing until a name is asked for (PEP 562), so a kind's report half
(``workloads.<kind>.report``) is imported without the measuring code.
"""

from __future__ import annotations

import importlib
from typing import Any

_NAMES = {
    "BUILTIN": "llm_call_anatomy.workloads.catalog",
    "VARIANTS": "llm_call_anatomy.workloads.catalog",
    "WorkloadFileError": "llm_call_anatomy.workloads.reader",
    "build_plan": "llm_call_anatomy.workloads.catalog",
    "builtin_file": "llm_call_anatomy.workloads.catalog",
    "file_hash": "llm_call_anatomy.workloads.reader",
    "hashes": "llm_call_anatomy.workloads.reader",
    "read_builtin": "llm_call_anatomy.workloads.catalog",
    "read_workload_file": "llm_call_anatomy.workloads.reader",
    "read_workloads": "llm_call_anatomy.workloads.catalog",
}
__all__ = sorted(_NAMES)


def __getattr__(name: str) -> Any:
    if name in _NAMES:
        return getattr(importlib.import_module(_NAMES[name]), name)
    raise AttributeError(f"module 'workloads' has no attribute {name!r}")
