"""Read run directories (``records.jsonl`` + ``env.json`` only) into one table of records.

Runs made in different environments can be merged: each run keeps its own env.json, and a
backend name that appears in more than one run is labelled ``name (run_id)`` so its columns
stay apart. Backends are ordered as they first appear. ``drop`` leaves one run's records of one
backend out (``("h200-hf", "hf")``: run directory name, backend; superseded by a later run). Nothing here talks to a backend.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import pandas as pd

from harness.records import RECORDS, Record, read_records

COLUMNS = [f.name for f in fields(Record)]


class ReportError(ValueError):
    """A run directory that cannot be reported on (one line for the user)."""


@dataclass
class Dataset:
    records: pd.DataFrame  # one row per record; ``backend`` is the column label, ``backend_name`` the adapter
    envs: dict[str, dict[str, Any]]  # run_id -> env.json
    backends: list[str]  # column labels, in order of appearance
    sources: dict[str, tuple[str, str]] = field(default_factory=dict)  # label -> (run_id, backend name)

    def env_of(self, label: str) -> dict[str, Any]:
        """The backend's block of env.json (``process``, ``engine``, ``packages``... or ``skipped``)."""
        run_id, name = self.sources.get(label, (None, label))
        env = self.envs.get(run_id or "", {})
        return (env.get("backends") or {}).get(name) or {}

    def run_env_of(self, label: str) -> dict[str, Any]:
        run_id, _ = self.sources.get(label, (None, label))
        return self.envs.get(run_id or "", {})

    def measured(self) -> pd.DataFrame:
        """Records that carry a measurement (neither skipped nor failed)."""
        df = self.records
        return df[df["skipped"].isna() & df["error"].isna()]


def read_env(run_dir: Path) -> dict[str, Any]:
    path = run_dir / "env.json"
    if not path.is_file():
        return {}
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ReportError(f"{path}: not valid JSON ({exc.msg})") from exc


def load(run_dirs: list[str | Path], drop: list[tuple[str, str]] | tuple = ()) -> Dataset:
    rows: list[dict[str, Any]] = []
    envs: dict[str, dict[str, Any]] = {}
    dropped: set[tuple[str, str]] = set()
    for raw in run_dirs:
        run_dir = Path(raw)
        if not (run_dir / RECORDS).is_file():
            raise ReportError(f"{run_dir}: no {RECORDS} (is this a run directory?)")
        env = read_env(run_dir)
        run_id = str(env.get("run_id") or run_dir.name)
        if run_id in envs:  # two runs with the same id (e.g. one renamed after the fact): its folder's name
            run_id = run_dir.name
        while run_id in envs:  # ... or, failing that, a prime
            run_id += "'"
        envs[run_id] = env
        for row in read_records(run_dir):
            key = (run_dir.name, row.get("backend"))
            if key in drop:
                dropped.add(key)
                continue
            rows.append({**{c: row.get(c) for c in COLUMNS}, "run_id": run_id, "backend_name": row.get("backend")})
    unmatched = [f"{run}:{name}" for run, name in drop if (run, name) not in dropped]
    if unmatched:
        raise ReportError(f"--drop {', '.join(unmatched)}: no such records (RUN is a run directory's name)")
    if not rows:
        raise ReportError("the run directories hold no records")
    df = pd.DataFrame(rows, columns=[*COLUMNS, "backend_name"])
    df["extra"] = df["extra"].map(lambda e: e if isinstance(e, dict) else {})
    pairs = list(dict.fromkeys(zip(df["run_id"], df["backend_name"], strict=True)))
    names = [name for _, name in pairs]
    labels = {(run, name): (name if names.count(name) == 1 else f"{name} ({run})") for run, name in pairs}
    df["backend"] = [labels[(r, n)] for r, n in zip(df["run_id"], df["backend_name"], strict=True)]
    sources = {label: key for key, label in labels.items()}
    return Dataset(records=df, envs=envs, backends=list(labels.values()), sources=sources)
