"""Read run directories (``records.jsonl`` + ``env.json`` only) into one table of records.

Runs made in different environments can be merged: each run keeps its own env.json, and a backend name that
appears in more than one run is labelled ``name (run_id)`` so its columns stay apart, unless
``merge_starts`` is set: then runs of one backend made with the same setup (plan, model config, backend
version, prefix caching as the engine ran it, a variant's settings) are one column, each run's engine starts
counted as starts of it (a run with no ``engine_start`` in its records is one start). Every record gets a
``start`` label (``run_id#engine_start``) and ``ttft_common``: False where ``ttft_ms`` is the engine's
internal figure (old runs, ``timing_source`` ``engine-metrics``), not the caller's. Backends are ordered as
they first appear. ``drop`` leaves one run's records of one backend out (``("h200-hf", "hf")``: run
directory name, backend; superseded by a later run). Nothing here talks to a backend.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import pandas as pd

from llm_call_anatomy.contract.columns import base_of
from llm_call_anatomy.contract.files import backend_env_blocks
from llm_call_anatomy.contract.records import RECORDS, Record, RecordKey, latest_attempts

COLUMNS = [f.name for f in fields(Record)]
NEW_FIELDS = (
    "engine_start",
    "engine_ttft_ms",
    "engine_decode_ms_per_token",
)  # issue 14; absent from old runs
ENGINE_INTERNAL = "engine-metrics"  # old runs: ttft_ms was the engine's own figure
# The JSON types each record field may hold (besides null), from the Record dataclass's annotations.
_TYPES = {
    "str": (str,),
    "int": (int,),
    "float": (int, float),
    "bool": (bool,),
    "list": (list,),
    "dict": (dict,),
}
FIELD_TYPES = {f.name: _TYPES[str(f.type).split("[")[0].split(" ")[0]] for f in fields(Record)}


class ReportError(ValueError):
    """A run directory that cannot be reported on (one line for the user)."""


class DiskFull(ReportError):
    """The report or an export could not be written for want of space (exit 1, as elsewhere)."""


@dataclass
class Dataset:
    records: pd.DataFrame  # one row per record; ``backend`` is the column label, ``backend_name`` the adapter
    envs: dict[str, dict[str, Any]]  # run_id -> env.json
    backends: list[str]  # column labels, in order of appearance
    sources: dict[str, tuple[str, str]] = field(default_factory=dict)  # label -> (run_id, backend name)
    members: dict[str, list[tuple[str, str]]] = field(
        default_factory=dict
    )  # label -> every (run_id, name) merged in it
    problems: list[str] = field(
        default_factory=list
    )  # bad lines left out, one line per file (stderr and the page)

    def start_envs(self, label: str) -> list[dict[str, Any]]:
        """One dict per engine start of a column: env.json's
        ``starts`` entries, or the backend block (old runs)."""
        out = []
        for run_id, name in self.members.get(label) or [self.sources.get(label, ("", label))]:
            block = ((self.envs.get(run_id) or {}).get("backends") or {}).get(name) or {}
            starts = [s for s in block.get("starts") or [] if isinstance(s, dict)]
            out += [{**s, "run_id": run_id} for s in starts] or (
                [{**block, "engine_start": 0, "run_id": run_id}] if block else []
            )
        return out

    def env_of(self, label: str) -> dict[str, Any]:
        """The backend's block of env.json (``process``, ``engine``, ``packages``... or ``skipped``)."""
        run_id, name = self.sources.get(label, (None, label))
        env = self.envs.get(run_id or "", {})
        return (env.get("backends") or {}).get(name) or {}

    def run_env_of(self, label: str) -> dict[str, Any]:
        run_id, _ = self.sources.get(label, (None, label))
        return self.envs.get(run_id or "", {})

    def planned_levels(self) -> dict[str, list[tuple[str, str, str]]]:
        """Per column label, the load levels its run planned, as (workload, mode, case) in plan order
        (env.json ``planned_levels``; absent in old runs: none)."""
        out: dict[str, list[tuple[str, str, str]]] = {}
        for label in self.backends:
            plan = self.run_env_of(label).get("planned_levels") or {}
            out[label] = [(w, m, c) for w, levels in plan.items() for m, c in levels]
        return out

    def measured(self) -> pd.DataFrame:
        """Records that carry a measurement (neither skipped nor failed)."""
        df = self.records
        return df[df["skipped"].isna() & df["error"].isna()]


def read_env(run_dir: Path) -> dict[str, Any]:
    """The run's env.json, with each ``env/<backend>.json`` that it lacks: compare.py merges a backend's
    block into env.json after the backend's child ends, so a run stopped during a child (a deadline's
    SIGTERM) left env.json without that backend's engine facts (its server URL, KV pool, start-up) while
    its child had written them. env.json's own block wins where both exist; a block that does not parse
    is left out (the records still read)."""
    path = run_dir / "env.json"
    if not path.is_file():
        return {}
    try:
        env = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ReportError(f"{path}: not valid JSON ({exc.msg})") from exc
    if not isinstance(env, dict):
        raise ReportError(f"{path}: not a JSON object")
    own = env.get("backends") if isinstance(env.get("backends"), dict) else {}
    found = {b: block for b, block in backend_env_blocks(run_dir, strict=False).items() if b not in own}
    backends = {**own, **found}
    return {**env, "backends": backends} if backends or "backends" in env else env


def _wrong_type(row: dict[str, Any]) -> bool:
    for name, value in row.items():
        types = FIELD_TYPES.get(name)
        if value is None or types is None:
            continue
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            return True
    return not isinstance(row.get("backend"), str)


def records_file(run_dir: Path) -> Path | None:
    """The run's records: ``records.jsonl``, or ``records.jsonl.gz`` (a committed example's large load
    records, gzip'd as they were written); None when there is neither."""
    for name in (RECORDS, RECORDS + ".gz"):
        if (run_dir / name).is_file():
            return run_dir / name
    return None


def read_checked(path: Path) -> tuple[list[dict[str, Any]], list[int]]:
    """The records of a records.jsonl (the last one per key kept, a load level's latest attempt only) and
    the numbers of the lines left out: not UTF-8, not JSON, not an object, no backend, or a field of the
    wrong type. Blank lines are skipped."""
    rows: list[dict[str, Any]] = []
    bad: list[int] = []
    data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    for n, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            row = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            bad.append(n)
            continue
        if not isinstance(row, dict) or _wrong_type(row):
            bad.append(n)
            continue
        rows.append(row)
    latest: dict[tuple, dict[str, Any]] = {}
    for row in latest_attempts(rows):
        key = RecordKey.of_row(row)
        latest.pop(key, None)
        latest[key] = row
    return list(latest.values()), bad


def bad_lines_note(path: Path, bad: list[int]) -> str:
    shown = ", ".join(map(str, bad[:20])) + (f" and {len(bad) - 20} more" if len(bad) > 20 else "")
    return (
        f"{path}: {len(bad)} bad line{'s' if len(bad) > 1 else ''} left out (not a whole record, or a field "
        f"of the wrong type): line{'s' if len(bad) > 1 else ''} {shown}"
    )


def setup_of(env: dict[str, Any], name: str) -> tuple:
    """What must match for two runs of a backend to count as starts of one setup."""
    block = (env.get("backends") or {}).get(name) or {}
    engine = base_of(name).split("-")[0]  # a base@variant column: its base's package
    version = (block.get("packages") or {}).get(engine) or (block.get("engine") or {}).get(engine)
    # the prefix cache as the engine ran it (a started server reports it), else as asked: caching on and off
    # are two setups, never two starts of one
    ran = ((block.get("engine") or {}).get("scheduler") or {}).get("prefix_caching")
    caching = ran if ran is not None else env.get("prefix_caching")
    model_hash = (env.get("model") or {}).get("config_hash")
    # a variant's settings as given: two runs of one column name with other settings are two setups
    settings = json.dumps(((env.get("variants") or {}).get(name) or {}).get("settings"), sort_keys=True)
    return (env.get("plan_hash"), model_hash, env.get("dtype"), version, caching, settings)


def read_runs(
    run_dirs: list[str | Path], drop: list[tuple[str, str]] | tuple = (), merge_starts: bool = False
) -> Dataset:
    """The records and env.json of every run directory as one :class:`Dataset` (labels, ``drop`` and
    ``merge_starts`` as the module says); ReportError (one line) for a folder with no records or a bad
    ``--drop``."""
    rows: list[dict[str, Any]] = []
    envs: dict[str, dict[str, Any]] = {}
    dropped: set[tuple[str, str]] = set()
    problems: list[str] = []
    for raw in run_dirs:
        run_dir = Path(raw)
        records = records_file(run_dir)
        if records is None:
            raise ReportError(f"{run_dir}: no {RECORDS} (is this a run directory?)")
        env = read_env(run_dir)
        run_id = str(env.get("run_id") or run_dir.name)
        if run_id in envs:  # two runs with the same id (e.g. one renamed after the fact): its folder's name
            run_id = run_dir.name
        while run_id in envs:  # ... or, failing that, a prime
            run_id += "'"
        envs[run_id] = env
        found, bad = read_checked(records)
        if bad:
            problems.append(bad_lines_note(records, bad))
        for row in found:
            key = (run_dir.name, row.get("backend"))
            if key in drop:
                dropped.add(key)
                continue
            rows.append(
                {
                    **{c: row.get(c) for c in COLUMNS},
                    **{c: row.get(c) for c in NEW_FIELDS},
                    "run_id": run_id,
                    "backend_name": row.get("backend"),
                }
            )
    unmatched = [f"{run}:{name}" for run, name in drop if (run, name) not in dropped]
    if unmatched:
        raise ReportError(f"--drop {', '.join(unmatched)}: no such records (RUN is a run directory's name)")
    if not rows:
        raise ReportError(
            "the run directories hold no records" + (f" ({'; '.join(problems)})" if problems else "")
        )
    df = pd.DataFrame(rows, columns=[*COLUMNS, *[c for c in NEW_FIELDS if c not in COLUMNS], "backend_name"])
    df["extra"] = df["extra"].map(lambda e: e if isinstance(e, dict) else {})
    df["engine_start"] = [
        int(s) if pd.notna(s) else 0 for s in pd.to_numeric(df["engine_start"], errors="coerce")
    ]
    df["start"] = [f"{r}#{s}" for r, s in zip(df["run_id"], df["engine_start"], strict=True)]
    df["ttft_common"] = df["timing_source"] != ENGINE_INTERNAL
    pairs = list(dict.fromkeys(zip(df["run_id"], df["backend_name"], strict=True)))
    names = [name for _, name in pairs]
    if merge_starts:  # one column per backend and setup: its runs' engine starts are that column's starts
        groups: dict[tuple[str, tuple], list[str]] = {}
        for run, name in pairs:
            groups.setdefault((name, setup_of(envs[run], name)), []).append(run)
        setups = [name for name, _ in groups]
        labels = {}
        for (name, setup), runs in groups.items():
            label = name if setups.count(name) == 1 else f"{name} ({runs[0]})"
            labels.update({(run, name): label for run in runs})
            if label != name:  # a backend run with another setup (another plan): a column of its own
                problems.append(
                    f"--merge-starts: {name}'s runs {', '.join(runs)} have a setup of their own (plan hash, "
                    f"model config hash, dtype, version, prefix caching: {setup}): merged as the column "
                    f"{label!r}"
                )
    else:
        labels = {(run, name): (name if names.count(name) == 1 else f"{name} ({run})") for run, name in pairs}
    df["backend"] = [labels[(r, n)] for r, n in zip(df["run_id"], df["backend_name"], strict=True)]
    sources: dict[str, tuple[str, str]] = {}
    members: dict[str, list[tuple[str, str]]] = {}
    for key, label in labels.items():
        sources.setdefault(label, key)  # merged starts: the first run's env.json describes the column
        members.setdefault(label, []).append(key)
    return Dataset(
        records=df,
        envs=envs,
        backends=list(dict.fromkeys(labels.values())),
        sources=sources,
        members=members,
        problems=problems,
    )
