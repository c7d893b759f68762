"""Agreement: at temperature 0, do the backends produce the same tokens for the same prompt?

Every T=0 call is matched across backends by (workload, mode, case, turn, engine start, repeat); each backend
is compared with the first one in column order (the reference), token id by token id. The first
divergence index is the number of leading tokens they share (``None`` when identical).
"""

from __future__ import annotations

import pandas as pd

from harness.chat import common_prefix_len

KEY = ["workload", "mode", "case", "turn", "engine_start", "rep"]


def _ids(value: object) -> list[int] | None:
    return [int(i) for i in value] if isinstance(value, list) else None


def per_case(df: pd.DataFrame, backends: list[str]) -> pd.DataFrame:
    """One row per (case, backend other than the reference): identical?, first divergence index."""
    greedy = df[df["temperature"].eq(0) & df["output_token_ids"].map(lambda v: isinstance(v, list))]
    if "engine_start" not in greedy:
        greedy = greedy.assign(engine_start=0)
    present = [b for b in backends if b in set(greedy["backend"])]
    if len(present) < 2:
        return pd.DataFrame(columns=[*KEY, "backend", "reference", "identical", "first_divergence", "tokens"])
    ref, others = present[0], present[1:]
    keys = [tuple(None if pd.isna(v) else v for v in row) for row in greedy[KEY].itertuples(index=False)]
    keyed = greedy.assign(_k=keys)
    base = {k: _ids(v) for k, v in zip(keyed[keyed["backend"] == ref]["_k"], keyed[keyed["backend"] == ref]["output_token_ids"], strict=True)}
    rows = []
    for backend in others:
        mine = keyed[keyed["backend"] == backend]
        for k, ids in zip(mine["_k"], mine["output_token_ids"], strict=True):
            if k not in base or base[k] is None:
                continue
            a, b = base[k], _ids(ids) or []
            same = a == b
            rows.append({**dict(zip(KEY, k, strict=True)), "backend": backend, "reference": ref,
                         "identical": same, "first_divergence": None if same else common_prefix_len(a, b),
                         "tokens": min(len(a), len(b))})
    return pd.DataFrame(rows, columns=[*KEY, "backend", "reference", "identical", "first_divergence", "tokens"])


def summary(cases: pd.DataFrame) -> pd.DataFrame:
    """Per workload and backend pair: cases compared, identical, share, median first divergence."""
    rows = []
    for (workload, backend, ref), g in cases.groupby(["workload", "backend", "reference"], sort=False):
        div = g["first_divergence"].dropna()
        rows.append({"workload": workload, "backend": backend, "reference": ref, "cases": len(g),
                     "identical": int(g["identical"].sum()), "share": float(g["identical"].mean()),
                     "median_divergence": float(div.median()) if len(div) else None})
    return pd.DataFrame(rows, columns=["workload", "backend", "reference", "cases", "identical", "share", "median_divergence"])
