"""The ``conversation`` kind's room: a multi-turn chat, re-prefilled against prefix reuse.

    kind.py        the spec, the planner (full and cached modes per turn), transcripts
    lint.py        the seed's Rule 1 as a lint: each turn's prompt extends the previous one
    builtin.yaml   the 10-turn DevOps chat
    report/        its section: analysis, page blocks, summary rows, the seed's claims and token figures

Nothing is imported here: the measuring half and the report half (``report/``) are imported apart.
"""
