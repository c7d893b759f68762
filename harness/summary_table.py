"""The page's Summary in the terminal at a run's end: job, backend, value, verdict, as ``vllm bench serve``,
GuideLLM and AIPerf end.

The rows are the report's own (``reports.export.summary_rows``: the analysis behind the page's Summary
table, computed from the run's records and env.json, never read back from the HTML), handed over by
``harness/backend_runs.py`` once the report is built; so the terminal and the page cannot disagree. No
report (``--no-report``, or the report extra not installed): no table, and the run says how to build it.

One job a block, as the page's table reads: the job and its verdict on one line (a caution, such as random
weights or a derived figure, in brackets after it), then a line a backend with its value, best first; where
the compared columns differ in settings (dtype, endpoint, KV pool...), a line saying so comes first. Every
line fits the terminal's width (80 columns when the output is no terminal): a line that would not is cut
at its end (``…``); a backend's value is never wrapped inside.
"""

from __future__ import annotations

import shutil

TITLE = "summary (the report's: which stack for which job, a winner only beyond noise)"


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(0, width - 1)] + "…"


def blocks(rows: list[dict]) -> list[tuple[str, list[tuple[str, str]]]]:
    """(the job's line, [(backend, value)...]) a job, in the rows' order (the page's: best first)."""
    out: list[tuple[str, list[tuple[str, str]]]] = []
    last = None
    for r in rows:
        job = str(r.get("job") or "")
        if job != last:
            verdict = str(r.get("verdict") or "")
            head = f"{job}: {verdict}" if verdict else job
            if r.get("caution"):
                head += f" [{r['caution']}]"
            if r.get("settings_differ"):  # before the ranking it qualifies
                head = f"{job}: {r['settings_differ']}\n{head}"
            out.append((head, []))
            last = job
        out[-1][1].append((str(r.get("backend") or ""), str(r.get("value") or "")))
    return out


def summary_table(rows: list[dict], width: int | None = None) -> list[str]:
    """The Summary's lines, a title first, each at most ``width`` characters (the terminal's; 80 where there
    is none); no lines when the report has no summary row."""
    if not rows:
        return []
    width = width or shutil.get_terminal_size((80, 24)).columns
    name = max(len(str(r.get("backend") or "")) for r in rows)
    lines = [TITLE]
    for head, values in blocks(rows):
        lines += head.split("\n")
        lines += [f"  {backend.ljust(name)}  {value}" for backend, value in values]
    return [_cut(line, width) for line in lines]
