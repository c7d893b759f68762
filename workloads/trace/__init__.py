"""The ``trace`` kind's room: a production request trace replayed at its own timestamps, time-scaled.

    kind.py        the registry's entry (KIND); what the kind is, in its docstring
    spec.py        the format and ``--trace``
    reader.py      the trace file: Mooncake JSONL, a lengths JSONL or CSV (Azure's columns too), a transcript
    transcript.py  the transcript form: chat messages per request with a session id, each session's history
    prompts.py     a block of token ids per hash id, and what a prefix cache can reuse
    planner.py     the window, the drop rule, one open-loop level per time scale, the search's pool
    search.py      the levels the capacity search over the time scale adds
    report/        its section: the trace's shape, latency and throughput per time scale, verdicts

Nothing is imported here: the measuring half and the report half (``report/``) are imported apart.
"""
