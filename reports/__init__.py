"""The report: one offline HTML page built from run directories (``records.jsonl`` + ``env.json``).

    from reports import build
    build(["runs/a100", "runs/h200"], "report.html")     # -> Path("report.html")

    python -m reports RUN_DIR [RUN_DIR ...] [-o report.html] [--bandwidth-gbps X] [--tflops Y] [--drop RUN:BACKEND]

It never talks to a backend, so old runs can be rebuilt and runs made in different
environments merged. ``load`` reads the runs, ``analysis`` computes the figures (pure
functions, unit-tested), ``assemble`` runs them per workload, ``charts`` and ``page`` render.
"""

from __future__ import annotations

import sys
from pathlib import Path

__all__ = ["build"]


def build(run_dirs: list[str | Path], out_path: str | Path, *, bandwidth_gbps: float | None = None,
          tflops: float | None = None, drop: list[tuple[str, str]] | tuple = (), copy_gbps: float | None = None,
          merge_starts: bool = False, slo: dict[str, float] | None = None) -> Path:
    """Write the report for ``run_dirs`` to ``out_path`` and return its path."""
    from reports.assemble import assemble
    from reports.load import ReportError, load
    from reports.page import render

    ds = load(list(run_dirs), drop=drop, merge_starts=merge_starts)
    for problem in ds.problems:
        print(f"warning: {problem}", file=sys.stderr)
    html = render(assemble(ds, bandwidth_gbps=bandwidth_gbps, tflops=tflops, copy_gbps=copy_gbps, slo=slo))
    out = Path(out_path)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(html, encoding="utf-8")
    except OSError as exc:
        raise ReportError(f"cannot write {out}: {exc.strerror or exc}") from exc
    return out
