"""Workloads: the kinds of study, one room (folder) each, and the generic pieces every kind uses.

    workloads/<kind>/        a kind's room: kind.py (its spec, planner, scoring), builtin.yaml, report/
    workloads/kinds.py       the registry of kinds, found by their folders
    workloads/catalog.py     the built-ins, reading workload files, building the plan
    workloads/reader.py      the file format's reader (line numbers, files a workload names)
    workloads/spec.py        the fields every kind's spec shares

Nothing is imported here: each name lives in its module (``from llm_call_anatomy.workloads.catalog import
BUILTIN``), so a kind's report half (``workloads.<kind>.report``) is imported without the measuring code.
"""

from __future__ import annotations
