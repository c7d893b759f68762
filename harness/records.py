"""Records: one JSON object per request, appended to ``runs/<id>/records.jsonl`` and flushed.

This is the contract between measuring and the report. A crash loses nothing already written;
``--resume`` reads the file back and skips what is done. When a case was run twice (a resumed
conversation repeat), the last record of a key wins.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from harness.rundir import cut_torn_tail
from harness.secrets import redact

RECORDS = "records.jsonl"


@dataclass
class Record:
    # -- the contract fields (keep these names) --
    run_id: str
    backend: str
    engine_start: int = 0  # which engine start (a fresh child process, --starts K) made it; part of the key
    backend_version: str | None = None
    model: str | None = None
    workload: str | None = None
    mode: str | None = None
    case: str | None = None
    rep: int | None = None
    turn: int | None = None
    temperature: float | None = None
    prompt_tokens: int | None = None
    shared_prefix_tokens: int | None = None
    cached_tokens: int | None = None
    computed_tokens: int | None = None
    ttft_ms: float | None = None
    decode_ms_per_token: float | None = None
    output_tokens: int | None = None
    first_token_id: int | None = None
    output_text: str | None = None
    valid_json: bool | None = None
    clean: bool | None = None
    timing_source: str | None = None  # how ttft_ms / decode_ms_per_token were taken (the caller's clock)
    engine_ttft_ms: float | None = None  # the engine's own TTFT for the request, beside the common one
    engine_decode_ms_per_token: float | None = None  # the engine's own decode figure
    error: str | None = None
    skipped: str | None = None
    # -- more raw facts the analysis uses --
    kind: str | None = None
    e2e_ms: float | None = None
    cache_state: str | None = None
    finish_reason: str | None = None
    output_token_ids: list[int] | None = None
    prompt_ids_match: bool | None = None
    correct: bool | None = None
    grammar: bool | None = None  # json: decoding was constrained to the schema
    top_candidates: list[dict[str, Any]] | None = None
    step_logprobs: list[list[list]] | None = None  # greedy calls: per step, top-2 [token_id, logprob], best first
    attention_special_share: list[float] | None = None
    prefix_break: dict[str, Any] | None = None
    random_weights: bool | None = None
    # -- load (many requests in flight; backends.load_loop): times in s from the level's start, one monotonic clock --
    user: int | None = None  # the session (user) the request belongs to
    load_concurrency: int | None = None  # the level: closed-loop requests in flight
    load_rate_rps: float | None = None  # ... or open-loop Poisson arrivals per second
    submit_s: float | None = None
    first_token_s: float | None = None
    finish_s: float | None = None
    token_times_s: list[float] | None = None  # each output token's arrival
    queue_ms: float | None = None  # waiting for a queued backend's turn (one request at a time)
    extra: dict[str, Any] = field(default_factory=dict)

    def key(self) -> tuple:
        return tuple(getattr(self, k) for k in KEY_FIELDS)


# What identifies one measurement; old runs without engine_start read as start 0.
KEY_FIELDS = ("backend", "engine_start", "workload", "mode", "case", "rep", "turn", "temperature")


def row_key(row: dict[str, Any]) -> tuple:
    """The key of a record read back as a dict (see KEY_FIELDS)."""
    return tuple((row.get(k) or 0) if k == "engine_start" else row.get(k) for k in KEY_FIELDS)


FIELD_NAMES = {f.name for f in fields(Record)}


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
            print(f"{self.path}: cut a torn last line ({cut} bytes, a record a crash left half-written; "
                  "its case is run again)", file=sys.stderr)
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
    """All records of a run as dicts, the last one per key kept (a torn last line is ignored)."""
    path = Path(run_dir) / RECORDS
    if not path.exists():
        return []
    latest: dict[tuple, dict[str, Any]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line cut short by a crash
        key = row_key(row)
        latest.pop(key, None)
        latest[key] = row
    return list(latest.values())


def done_keys(run_dir: str | Path, backend: str) -> set[tuple]:
    """Keys of the cases this backend already measured (not skipped, not failed)."""
    return {
        row_key(r)[1:]  # (engine_start, workload, mode, case, rep, turn, temperature) = Step.key()
        for r in read_records(run_dir)
        if r["backend"] == backend and not r.get("skipped") and not r.get("error")
    }
