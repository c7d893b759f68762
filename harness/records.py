"""Records on disk: appended to ``runs/<id>/records.jsonl`` and flushed, one at a time, and read back.

The record itself (:class:`Record`, :class:`RecordKey`) is the contract between measuring and the
report and lives in ``contract.records``. A crash loses nothing already
written; ``--resume`` reads the file back and skips what is done. When a case was run twice (a
resumed conversation repeat), the last record of a key wins; a load level run again keeps its latest
attempt only (``contract.records.latest_attempts``).
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from llm_call_anatomy.contract.records import (
    RECORDS,
    Record,
    RecordKey,
    latest_attempts,
)
from llm_call_anatomy.harness.rundir import cut_torn_tail
from llm_call_anatomy.harness.secrets import redact

__all__ = ["RecordWriter", "done_keys", "failed_keys", "read_records"]


class RecordWriter:
    """Appends records to a JSONL file, flushing and fsyncing each one.

    A torn last line (a crash in the middle of a write) is cut off, with a warning, before the
    first record is appended: otherwise the new record would be glued to it and lost too.
    """

    def __init__(self, run_dir: str | Path) -> None:
        self.path = Path(run_dir) / RECORDS
        self.path.parent.mkdir(parents=True, exist_ok=True)
        cut = cut_torn_tail(self.path)
        if cut:
            print(
                f"{self.path}: cut a torn last line ({cut} bytes, a record a crash left half-written; "
                "its case is run again)",
                file=sys.stderr,
            )
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def write(self, record: Record) -> None:
        """One ``write`` of the complete line, then fsync; on failure (a full disk) the file is cut
        back to where it was, so a record is on disk whole or not at all, and the error is raised."""
        data = (redact(json.dumps(asdict(record), ensure_ascii=False)) + "\n").encode("utf-8")
        start = os.fstat(self._fd).st_size
        try:
            done = 0
            while done < len(data):
                done += os.write(self._fd, data[done:])
            os.fsync(self._fd)
        except OSError:
            os.ftruncate(self._fd, start)
            raise

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> RecordWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_records(run_dir: str | Path) -> list[dict[str, Any]]:
    """All records of a run as dicts, the last one per key kept, a load level's latest attempt only
    (a torn last line is ignored)."""
    path = Path(run_dir) / RECORDS
    if not path.exists():
        return []
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # a line cut short by a crash
    latest: dict[tuple, dict[str, Any]] = {}
    for row in latest_attempts(rows):
        key = RecordKey.of_row(row)
        latest.pop(key, None)
        latest[key] = row
    return list(latest.values())


def done_keys(run_dir: str | Path, backend: str) -> set[tuple]:
    """Keys of the cases this backend already measured (not skipped, not failed)."""
    return {
        RecordKey.of_row(r).without_backend()  # = Step.key()
        for r in read_records(run_dir)
        if r["backend"] == backend and not r.get("skipped") and not r.get("error")
    }


def failed_keys(run_dir: str | Path, backend: str) -> set[tuple]:
    """Keys of the cases whose latest record is an error (``--resume`` redoes them)."""
    return {
        RecordKey.of_row(r).without_backend()
        for r in read_records(run_dir)
        if r["backend"] == backend and r.get("error")
    }
