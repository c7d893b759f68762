"""The ``conversation`` kind's rows of the page's Summary (``ReportKind.jobs``), built with the summary's
shared rules (:mod:`reports.analysis.summary`: a winner only beyond the noise)."""

from __future__ import annotations

import pandas as pd

from llm_call_anatomy.reports.analysis.summary import by_backend, latency_job
from llm_call_anatomy.reports.model import Job


def conversation_jobs(s, rows: pd.DataFrame) -> list[Job | None]:
    """The summary row of a conversation: each backend's TTFT summed over the turns of every complete repeat,
    in cached mode where the backend ran it (else full), ranked by the summary's winner rule. Empty where no
    repeat has a TTFT for every turn."""
    turns = rows["turn"].nunique()
    sums = []
    for (b, mode, start, _rep), g in rows.groupby(["backend", "mode", "start", "rep"], sort=False):
        if g["turn"].nunique() == turns and g["ttft_ms"].notna().all():
            sums.append(
                {
                    "backend": b,
                    "mode": mode,
                    "start": start,
                    "ttft": g["ttft_ms"].sum(),
                    "common": g["ttft_common"].all(),
                }
            )
    if not sums:
        return []
    df = pd.DataFrame(sums)
    pick = {
        b: ("cached" if (g["mode"] == "cached").any() else "full")
        for b, g in df.groupby("backend", sort=False)
    }
    df = df[[pick[b] == m for b, m in zip(df["backend"], df["mode"], strict=True)]]
    stats = by_backend(df, "ttft")
    common = {b: bool(g["common"].all()) for b, g in df.groupby("backend", sort=False)}
    return [
        latency_job(
            f"Multi-turn chat ({s.name})",
            f"summed TTFT over {turns} turns, prefix reuse where the backend has it",
            stats,
            "ms",
            common,
        )
    ]
