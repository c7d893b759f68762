"""The analysis: pure functions from the records table to the figures the page shows.

One module per kind of workload (``conversation``, ``sweep``, ``json_extraction``,
``template``), plus ``agreement`` (same tokens across backends at T=0), ``status`` (who ran,
who was skipped and why), ``caveats`` and ``summary`` (sentences derived from those figures).
Every function takes a pandas DataFrame of records (the columns of ``harness.records.Record``)
and returns DataFrames or small dataclasses; nothing here reads files or renders HTML.
"""
