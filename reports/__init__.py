"""The report: one offline HTML page built from run directories (``records.jsonl`` + ``env.json``).

    from llm_call_anatomy.reports import build
    build(["runs/a100", "runs/h200"], "report.html")     # -> Path("report.html")

    python compare.py report RUN_DIR [RUN_DIR ...] [-o report.html] [--format html,json,csv]
        [--bandwidth-gbps X] [--tflops Y] [--drop RUN:BACKEND]
    # the regression gate (reports.gate):
    python compare.py report --baseline RUN_DIR --candidate RUN_DIR [--threshold-pct 5]

It never talks to a backend, so old runs can be rebuilt and runs made in different
environments merged. ``runs`` reads the runs, ``analysis`` computes the figures (pure
functions, unit-tested), ``assemble`` runs them per workload, ``charts`` and ``page`` render,
``export`` writes the same report's tables as JSON and CSV.
"""

from __future__ import annotations

import errno
import sys
from pathlib import Path

from llm_call_anatomy.contract.files import atomic_write_text
from llm_call_anatomy.contract.price import GpuPrice

__all__ = ["build", "report_of", "write"]


def report_of(
    run_dirs: list[str | Path],
    *,
    bandwidth_gbps: float | None = None,
    tflops: float | None = None,
    drop: list[tuple[str, str]] | tuple = (),
    copy_gbps: float | None = None,
    merge_starts: bool = False,
    slo: dict[str, float] | None = None,
    gpu_hour_usd: GpuPrice | float | None = None,  # a number: one price (contract.price)
    targets: tuple | None = None,
    size: object = None,
):
    """The assembled :class:`~reports.model.Report` of
    ``run_dirs``: what the page and the exports are made of."""
    # late, here and in write(): every ``reports.X`` import runs this file first, and the assembly, the page
    # and the exports import most of the package (reports.gate takes report_of from here)
    from llm_call_anatomy.reports.assemble import assemble
    from llm_call_anatomy.reports.runs import read_runs

    ds = read_runs(list(run_dirs), drop=drop, merge_starts=merge_starts)
    for problem in ds.problems:
        print(f"warning: {problem}", file=sys.stderr)
    return assemble(
        ds,
        bandwidth_gbps=bandwidth_gbps,
        tflops=tflops,
        copy_gbps=copy_gbps,
        slo=slo,
        gpu_hour_usd=gpu_hour_usd,
        targets=targets,
        size=size,
    )


def build(
    run_dirs: list[str | Path],
    out_path: str | Path,
    *,
    bandwidth_gbps: float | None = None,
    tflops: float | None = None,
    drop: list[tuple[str, str]] | tuple = (),
    copy_gbps: float | None = None,
    merge_starts: bool = False,
    slo: dict[str, float] | None = None,
    formats: tuple[str, ...] = ("html",),
    gpu_hour_usd: GpuPrice | float | None = None,  # a number: one price (contract.price)
    targets: tuple | None = None,
    size: object = None,
) -> Path:
    """Write the report for ``run_dirs`` to ``out_path`` and return its path; ``formats`` beyond ``html``
    (``json``, ``csv``: ``reports.export``) are written beside it, from the same report."""
    report = report_of(
        run_dirs,
        bandwidth_gbps=bandwidth_gbps,
        tflops=tflops,
        drop=drop,
        copy_gbps=copy_gbps,
        merge_starts=merge_starts,
        slo=slo,
        gpu_hour_usd=gpu_hour_usd,
        targets=targets,
        size=size,
    )
    out = Path(out_path)
    write(report, out, formats)
    return out


def write(report, out: Path, formats: tuple[str, ...]) -> list[Path]:
    """The page (``html`` in ``formats``) at ``out`` and the exports beside it; every path written. The page
    is written whole or not at all (a full disk leaves an older page as it was)."""
    from llm_call_anatomy.reports import export
    from llm_call_anatomy.reports.page import render
    from llm_call_anatomy.reports.runs import DiskFull, ReportError

    written = []
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        if "html" in formats:
            atomic_write_text(out, render(report))
            written.append(out)
        written += export.write(report, out.parent, formats)
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise DiskFull(
                f"cannot write {exc.filename or out}: the disk is full ({exc.strerror or exc}); "
                "what an earlier report wrote there is kept whole"
            ) from exc
        raise ReportError(f"cannot write {exc.filename or out}: {exc.strerror or exc}") from exc
    return written
