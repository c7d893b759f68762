"""The ``json`` kind's room: log lines to a JSON object by free, strict and grammar-constrained prompts.

    kind.py        the spec, the planner, the scoring of a reply (valid, correct)
    builtin.yaml   the built-in log lines and schema
    report/        its section: validity and correctness per mode and temperature, the grammar's cost, claims

Nothing is imported here: the measuring half and the report half (``report/``) are imported apart.
"""
