"""The analysis: pure functions from the records table to the figures the page shows.

The figures common to every kind: ``agreement`` (same tokens across backends at T=0), ``status`` (who
ran, who was skipped and why), ``caveats``, ``summary`` (the winner rules and deployment facts) and
``claims`` (the seed's claims, each kind's in its room); each kind's own analysis is in its room
(``workloads/<kind>/report/``).
Every function takes a pandas DataFrame of records (the columns of ``contract.records.Record``)
and returns DataFrames or small dataclasses; nothing here reads files or renders HTML.
"""
