"""A folder of kind rooms outside the tree's ``workloads/``, made only for the tests: one room, ``brevity/``.

    tests/example_kind/brevity/kind.py     the measuring half: spec, planner, scoring (its ``KIND``)
    tests/example_kind/brevity/report.py   the report half: analysis, page blocks (its ``KIND``)

``tests/test_example_kind.py`` puts this folder on the ``workloads`` package's path, as a plugin would, and
the registries find the room by its folder: no registry line. A workload file of this kind then goes
through the real reader, planner, runner and report. Nothing else in the tree knows it.
"""
