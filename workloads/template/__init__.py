"""The ``template`` kind's room: short questions in several prompt formats.

    kind.py        the spec, the planner, the scoring (clean answers)
    builtin.yaml   five questions in three formats
    report/        its section: clean answers, attention on special tokens, claims

Nothing is imported here: the measuring half and the report half (``report/``) are imported apart.
"""
