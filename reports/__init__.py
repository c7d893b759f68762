"""The report: one offline HTML page built from run directories (``records.jsonl`` + ``env.json``).

    from reports import build
    build(["runs/a100", "runs/h200"], "report.html")     # -> Path("report.html")

    python -m reports RUN_DIR [RUN_DIR ...] [-o report.html] [--bandwidth-gbps X] [--tflops Y] [--drop RUN:BACKEND]

It never talks to a backend, so old runs can be rebuilt and runs made in different
environments merged. ``load`` reads the runs, ``analysis`` computes the figures (pure
functions, unit-tested), ``assemble`` runs them per workload, ``charts`` and ``page`` render.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["build"]


def build(run_dirs: list[str | Path], out_path: str | Path, *, bandwidth_gbps: float | None = None,
          tflops: float | None = None, drop: list[tuple[str, str]] | tuple = (), copy_gbps: float | None = None,
          merge_starts: bool = False) -> Path:
    """Write the report for ``run_dirs`` to ``out_path`` and return its path."""
    from reports.assemble import assemble
    from reports.load import load
    from reports.page import render

    report = assemble(load(list(run_dirs), drop=drop, merge_starts=merge_starts), bandwidth_gbps=bandwidth_gbps,
                      tflops=tflops, copy_gbps=copy_gbps)
    out = Path(out_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(report), encoding="utf-8")
    return out
