"""The ``sweep`` kind's room: prompts of exactly N tokens, prefill and decode against N.

    kind.py        the spec and the planner
    builtin.yaml   N = 64 ... 2,048
    report/        its section: per-length figures, fits, the roofline, charts, summary rows, claims

Nothing is imported here: the measuring half and the report half (``report/``) are imported apart.
"""
