"""The groups of backends that ran the same requests (``capacity.mix_classes``), as the Load
section names and draws them: a group that ran other requests than a variant's main group (the H200's HF mix,
fewer turns a session) gets summary rows, capacity-table rows and chart panels of its own, so that it is
compared only with rows of its own mix.
"""

from __future__ import annotations

import pandas as pd


def mix_label(classes: dict, w: str, m: str, backends) -> str:
    """'' for the variant's main group of backends (the most that ran the same requests), else what the
    row's title says of its own group: "; other requests: hf-cb, hf-server"."""
    groups = classes.get((w, m)) or [[]]
    mine = list(dict.fromkeys(backends))
    return "" if not mine or set(mine) & set(groups[0]) else f"; other requests: {', '.join(mine)}"


def variants(df, classes: dict | None) -> pd.Series:
    """Per row of ``df`` (backend, workload, mode): "workload · mode", with its group's :func:`mix_label`
    where its backend ran other requests than the variant's main group (so that a chart draws that group in
    a panel of its own)."""

    def note(b: str, w: str, m: str) -> str:
        grp = next((g for g in (classes or {}).get((w, m), []) if b in g), None)
        return mix_label(classes, w, m, grp) if grp else ""

    notes = [note(b, w, m) for b, w, m in zip(df["backend"], df["workload"], df["mode"], strict=True)]
    return df["workload"] + " · " + df["mode"] + pd.Series(notes, index=df.index, dtype=object)


def by_class(classes: dict, w: str, m: str, g):
    """``g``'s rows per group of backends that ran the same requests (every backend a group of its own when
    the variant has no steady rows)."""
    groups = classes.get((w, m)) or [[b] for b in dict.fromkeys(g["backend"])]
    known = {b for grp in groups for b in grp}
    groups = groups + [[b] for b in dict.fromkeys(g["backend"]) if b not in known]
    for grp in groups:
        h = g[g["backend"].isin(grp)]
        if len(h):
            yield h
