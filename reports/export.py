"""Exports: what the page shows, as ``summary.json`` and
CSV files, from the same :class:`~reports.model.Report`.

    python compare.py report RUN_DIR... --format html,json,csv      # html is the default, alone

Nothing here computes a figure: the page's tables come from the report's analysis results
(``report.jobs``, ``report.status``, each section's ``data``, the agreement tables, caveats and
claims), and so do these files, so the exports and the page cannot disagree. Written beside the
report's HTML file:

- ``summary.json``: the runs and backends, the summary rows ("which stack for which job", each
  backend's value as the page prints it and, for a latency job, its median with the spread
  within a start and across starts), the backends' status, every workload section's tables by
  key (the load workload's per-level figures are its ``levels`` table), agreement, caveats, the
  checked claims, and the figures the regression gate compares (``reports.gate``);
- ``csv/``: one file per table: ``summary.csv``, ``backends.csv``, ``agreement.csv``,
  ``caveats.csv``, ``claims.csv``, ``figures.csv`` and ``<workload>.<table>.csv`` per section
  (a cell that holds a list or a record is written as JSON; a text cell that starts with ``=``, ``+``,
  ``-``, ``@``, a tab or a carriage return, which a spreadsheet would run as a formula, is prefixed with
  ``'``, OWASP's rule against CSV injection). The folder is written whole: in a temporary folder that
  then replaces ``csv/``, so it holds exactly the last export's tables.

Missing values are empty cells in CSV and ``null`` in JSON ("not reported", never zero).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import json
import math
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from llm_call_anatomy.contract.files import atomic_write_text
from llm_call_anatomy.reports.analysis.figures import FIGURE_FIELDS, collect
from llm_call_anatomy.reports.model import Report
from llm_call_anatomy.reports.runs import ReportError

FORMATS = ("html", "json", "csv")
SUMMARY_JSON = "summary.json"
CSV_DIR = "csv"


def parse_formats(text: str) -> tuple[str, ...]:
    """``"json,csv"`` -> ``("json", "csv")``; a ReportError naming the known formats for anything else."""
    asked = [f.strip().lower() for f in text.split(",") if f.strip()]
    unknown = [f for f in asked if f not in FORMATS]
    if unknown or not asked:
        raise ReportError(
            f"--format: unknown format {', '.join(map(repr, unknown)) or repr(text)}: "
            f"known formats are {', '.join(FORMATS)}"
        )
    return tuple(dict.fromkeys(asked))


# --- plain values ---------------------------------------------------------------------------------
def plain(value: Any) -> Any:
    """JSON-ready: dataclasses and DataFrames as dicts and lists, numpy scalars as Python, NaN as None."""
    if isinstance(value, pd.DataFrame):
        return [plain(r) for r in value.to_dict("records")]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | np.ndarray):
        return [plain(v) for v in value]
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    if value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return str(value)


def frame(value: Any) -> pd.DataFrame | None:
    """A table of a section's data: a DataFrame, or a list
    of records (dataclasses or dicts); None otherwise."""
    if isinstance(value, pd.DataFrame):
        return value
    if (
        isinstance(value, list)
        and value
        and all(isinstance(v, dict) or dataclasses.is_dataclass(v) for v in value)
    ):
        return pd.DataFrame([plain(v) for v in value])
    return None


# --- the page's tables ----------------------------------------------------------------------------
def summary_rows(report: Report) -> pd.DataFrame:
    """The summary table, one row per job and backend, in the page's order (best first within a job)."""
    rows = []
    for j in report.jobs:
        for place, (backend, text) in enumerate(j.values, start=1):
            s = j.stats.get(backend)
            rows.append(
                {
                    "job": j.job,
                    "figure": j.figure,
                    "settings_differ": j.differs,
                    "place": place,
                    "backend": backend,
                    "value": text,
                    "median": s.median if s else None,
                    "unit": j.unit if s else None,
                    "spread_within_start": s.within if s else None,
                    "spread_across_starts": s.across if s else None,
                    "starts": s.starts if s else None,
                    "n": s.n if s else None,
                    "best": j.best,
                    "verdict": j.verdict,
                    "caution": j.caution,
                }
            )
    df = pd.DataFrame(
        rows,
        columns=[
            "job",
            "figure",
            "settings_differ",
            "place",
            "backend",
            "value",
            "median",
            "unit",
            "spread_within_start",
            "spread_across_starts",
            "starts",
            "n",
            "best",
            "verdict",
            "caution",
        ],
    )
    return df.astype({"starts": "Int64", "n": "Int64"})  # whole numbers, empty where the row has no figure


def status_rows(report: Report) -> pd.DataFrame:
    rows = [
        {
            "backend": st.backend,
            "status": st.state,
            "measured": st.measured,
            "failed": st.errors,
            "first_error": st.first_error,
            "skipped": "; ".join(f"{wl}{' / ' + m if m else ''}: {why}" for wl, m, why in st.skipped),
        }
        for st in report.status
    ]
    return pd.DataFrame(rows, columns=["backend", "status", "measured", "failed", "first_error", "skipped"])


def section_tables(report: Report) -> dict[str, dict[str, pd.DataFrame]]:
    """Per workload section (by its name): each of its data's tables, by key, as the page's views get them."""
    out: dict[str, dict[str, pd.DataFrame]] = {}
    for s in report.sections:
        out[s.name] = {k: f for k, v in s.data.items() if (f := frame(v)) is not None}
    return out


def tables(report: Report) -> dict[str, pd.DataFrame]:
    """Every exported table by its file stem (``summary``, ``backends``, ..., ``<workload>.<table>``)."""
    out = {
        "summary": summary_rows(report),
        "backends": status_rows(report),
        "agreement": report.agreement_summary,
        "agreement_cached": report.agreement_cached_summary,
        "caveats": pd.DataFrame([plain(c) for c in report.caveats], columns=["topic", "text"]),
        "claims": pd.DataFrame(
            [_flat_claim(c) for c in report.claims],
            columns=["source", "statement", "theirs", "verdict", "reason", "here"],
        ),
        "figures": pd.DataFrame([plain(f) for f in collect(report)], columns=FIGURE_FIELDS),
    }
    for name, by_key in section_tables(report).items():
        out.update({f"{name}.{key}": df for key, df in by_key.items()})
    return out


def _flat_claim(c: Any) -> dict[str, Any]:
    d = plain(c)
    verdict = d.pop("verdict") or {}
    return {**d, "verdict": verdict.get("word"), "reason": verdict.get("reason")}


# --- files ----------------------------------------------------------------------------------------
def summary(report: Report) -> dict[str, Any]:
    """The contents of ``summary.json``."""
    return {
        "generated": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "runs": {
            run_id: {"model": (env.get("model") or {}).get("label"), "dtype": env.get("dtype")}
            for run_id, env in report.ds.envs.items()
        },
        "backends": report.ds.backends,
        "summary": plain(summary_rows(report)),
        "status": plain(status_rows(report)),
        "workloads": [
            {
                "name": s.name,
                "kind": s.kind,
                "backends": s.backends,
                "notes": s.notes,
                "tables": {k: plain(df) for k, df in section_tables(report).get(s.name, {}).items()},
            }
            for s in report.sections
        ],
        "agreement": plain(report.agreement_summary),
        "agreement_cached": plain(report.agreement_cached_summary),
        "caveats": plain(report.caveats),
        "claims": plain(report.claims),
        "figures": plain(collect(report)),
    }


def csv_name(stem: str) -> str:
    """A safe file name for a table (a workload's name comes from a user's file): never starting with ``-``
    (a shell would read it as an option) or ``.``."""
    return (re.sub(r"[^A-Za-z0-9._-]+", "_", stem).strip("._-") or "table") + ".csv"


FORMULA_START = ("=", "+", "-", "@", "\t", "\r")  # what a spreadsheet may run as a formula (OWASP)


def _cell(value: Any) -> Any:
    """A CSV cell: a list or record as JSON; a text that a spreadsheet would take for a formula prefixed with
    ``'`` (OWASP's CSV-injection rule); numbers as they are."""
    v = plain(value)
    v = json.dumps(v, ensure_ascii=False) if isinstance(v, list | dict) else v
    return "'" + v if isinstance(v, str) and v.startswith(FORMULA_START) else v


def write_table(df: pd.DataFrame, path: Path) -> None:
    df.map(_cell).to_csv(path, index=False) if not df.empty else df.to_csv(path, index=False)


def write_csvs(frames: dict[str, pd.DataFrame], out_dir: Path) -> list[Path]:
    """Every table into ``out_dir/csv/``, whole: written in a temporary folder beside it, which then takes
    its place (an earlier export's files go, none of them left beside the new ones; a failure leaves the
    earlier ``csv/`` as it was). An OSError names the table it could not write."""
    folder = out_dir / CSV_DIR
    tmp = Path(tempfile.mkdtemp(prefix=f".{CSV_DIR}.", dir=out_dir))
    names: list[str] = []
    try:
        for stem, df in frames.items():
            name = csv_name(stem)
            while name in names:  # two workload names that differ only in characters a file name cannot hold
                name = name.removesuffix(".csv") + "_.csv"
            try:
                write_table(df, tmp / name)
            except OSError as exc:
                raise OSError(exc.errno, exc.strerror or str(exc), str(folder / name)) from exc
            names.append(name)
        old = None
        if folder.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{CSV_DIR}-old.", dir=out_dir))
            folder.rename(old / CSV_DIR)
        tmp.rename(folder)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # gone already where it became csv/
    return [folder / name for name in names]


def write(report: Report, out_dir: Path, formats: tuple[str, ...]) -> list[Path]:
    """Write the asked exports (``json``, ``csv``; ``html`` is the page's) into ``out_dir``, each whole or
    not at all; the paths written. An OSError names the file it could not write."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    if "json" in formats:
        path = out_dir / SUMMARY_JSON
        try:
            atomic_write_text(path, json.dumps(summary(report), ensure_ascii=False, indent=1) + "\n")
        except OSError as exc:
            raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from exc
        written.append(path)
    if "csv" in formats:
        written += write_csvs(tables(report), out_dir)
    return written
