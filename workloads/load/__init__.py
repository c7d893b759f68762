"""The ``load`` kind's room: many users at once, closed loop or open loop, and the capacity search.

    kind.py        the registry's entry (KIND); what the kind is, in its docstring
    spec.py        the format and ``--load``
    prompts.py     the token ids of each user's requests
    planner.py     the plan's groups (levels, warm-ups, the search's pool)
    search.py      the groups of a level the capacity search adds
    builtin.yaml   the built-in many-users study
    report/        its section: levels, capacity, caching, targets, tables, charts

Nothing is imported here: the measuring half and the report half (``report/``) are imported apart.
"""
