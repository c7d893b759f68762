"""The ``sweep`` kind's rows of the page's Summary (``ReportKind.jobs``), built with the summary's
shared rules (:mod:`reports.analysis.summary`: a winner only beyond the noise)."""

from __future__ import annotations

import pandas as pd

from llm_call_anatomy.reports.analysis.summary import by_backend, derived, latency_job, ttft_common
from llm_call_anatomy.reports.model import Job
from llm_call_anatomy.reports.roofline import REPLY_TOKENS


def sweep_jobs(s, rows: pd.DataFrame) -> list[Job | None]:
    """The sweep's summary rows at the prompt lengths every backend ran: TTFT at the shortest, prefill at the
    longest, decode at the middle one, and a derived (unranked) end-to-end reply there."""
    rows = rows.dropna(subset=["prompt_tokens"])
    if rows.empty:
        return []
    common = sorted(
        set.intersection(*(set(g["prompt_tokens"].astype(int)) for _, g in rows.groupby("backend")))
    )
    if not common:
        return []
    lo, mid, hi = common[0], common[len(common) // 2], common[-1]
    at = {n: rows[rows["prompt_tokens"] == n] for n in (lo, mid, hi)}
    e2e = at[mid]["ttft_ms"] + (REPLY_TOKENS - 1) * at[mid]["decode_ms_per_token"]

    def ttft_at(n: int, title: str, subtitle: str) -> Job | None:
        return latency_job(
            f"{title} ({s.name})", subtitle, by_backend(at[n], "ttft_ms"), "ms", ttft_common(at[n])
        )

    return [
        ttft_at(lo, "Many short calls", f"TTFT at the shortest prompt, N={lo}"),
        ttft_at(hi, "Long prompts", f"prefill time (TTFT) at N={hi}"),
        latency_job(
            f"Generating tokens ({s.name})",
            f"decode ms/token at N={mid}",
            by_backend(at[mid], "decode_ms_per_token"),
            "ms/token",
        ),
        derived(
            latency_job(
                f"A {REPLY_TOKENS}-token reply ({s.name})",
                f"derived, end to end at N={mid}: TTFT + {REPLY_TOKENS - 1} × decode",
                by_backend(at[mid], e2e),
                "ms",
                ttft_common(at[mid]),
            )
        ),
    ]
