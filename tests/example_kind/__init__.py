"""A sixth workload kind, ``brevity``, made only for the tests: its own two files plus two registry lines.

    measuring half   tests/example_kind/workload.py   spec, planner, scoring   (workloads.kinds.REGISTRY)
    report half      tests/example_kind/report.py     analysis, page blocks    (reports.kinds.REGISTRY)

``tests/test_example_kind.py`` registers both (one line in each registry) and runs a workload file
of this kind through the real reader, planner, runner and report. Nothing else in the tree knows it.
"""
