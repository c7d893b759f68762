"""The trace kind's file reader: a request trace as rows of (timestamp, input length, output length, prefix
blocks), from any of the forms a production trace comes in.

    rows, bad = read(Path("mooncake-conversation.jsonl.gz"), None)   # bad: [(line, mistake)], empty if clean

Forms, told apart by the file's first data line (a ``.gz`` file is read through gzip):

- **Mooncake JSONL** (kvcache-ai/Mooncake ``FAST25-release/traces``): one JSON object a line,
  ``timestamp`` (ms from the trace's start), ``input_length``, ``output_length`` and ``hash_ids`` (the ids of
  the request's fixed-size prefix blocks, in order; the block size is the workload's ``block_size``);
- **lengths JSONL**: the same without ``hash_ids`` (no prefix is shared);
- any row may name its traffic class (``class``: chat, agent, ...; each class is judged against its own
  target on the page);
- **transcript JSONL** (a line's object has ``messages``): chat messages per request with a session id, for
  users' own logs (``workloads/trace/transcript.py``: the requests come back as ``TranscriptRequest``, each
  with its session's history before its own messages);
- **CSV** with a header: a timestamp column and the two lengths, named as above or as Azure's LLM inference
  traces name them (``TIMESTAMP, ContextTokens, GeneratedTokens``; a timestamp that is not a number is read
  as a date-time, and every timestamp is then counted from the first row's).

A row that cannot be used is a mistake with its line (``FILE:LINE``, the reader's exit 2); rows come back
sorted by timestamp, each keeping its line.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from llm_call_anatomy.workloads.trace import transcript

MAX_BYTES = 512 * 1024 * 1024  # a trace is read whole (the two Mooncake traces are ~20 MB unpacked)
# column name (lower case) -> field, for the CSV and lengths forms
ALIASES = {
    "timestamp": "timestamp",
    "time": "timestamp",
    "arrival_time": "timestamp",
    "input_length": "input_length",
    "contexttokens": "input_length",
    "input_tokens": "input_length",
    "prompt_tokens": "input_length",
    "output_length": "output_length",
    "generatedtokens": "output_length",
    "output_tokens": "output_length",
    "completion_tokens": "output_length",
    "hash_ids": "hash_ids",
    "class": "class",
    "traffic_class": "class",
}
NEEDED = ("timestamp", "input_length", "output_length")


@dataclass(frozen=True)
class TraceRow:
    timestamp_ms: float  # from the trace's start
    input_length: int
    output_length: int
    hash_ids: tuple[int, ...] = ()  # prefix block ids, in order (empty: nothing shared)
    line: int = 0  # in the trace file
    # the transcript form's, once rendered (``workloads/trace/planner.py``): the prompt's token ids (None:
    # built from hash ids), its session and its traffic class
    ids: tuple[int, ...] | None = None
    session: str | None = None
    traffic_class: str | None = None

    def to_list(self) -> list[Any]:
        """The compact form a workload spec holds (``TraceSpec.rows``)."""
        out = [self.timestamp_ms, self.input_length, self.output_length, list(self.hash_ids), self.line]
        return [*out, self.traffic_class] if self.traffic_class is not None else out


def _text(path: Path) -> str:
    with open(path, "rb") as f:
        head = f.read(2)
    opener = gzip.open if head == b"\x1f\x8b" else open
    with opener(path, "rb") as f:
        data = f.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise ValueError(f"the trace is larger than {MAX_BYTES // 2**20} MiB unpacked")
    return data.decode("utf-8")


def _count(value: Any, name: str, least: int) -> int:
    if isinstance(value, bool) or value is None:
        raise ValueError(f"{name} must be a whole number, not {value!r}")
    try:
        n = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a whole number, not {value!r}") from None
    if n != int(n) or n < least:
        raise ValueError(f"{name} must be a whole number ≥ {least}, not {value!r}")
    return int(n)


def _time(value: Any) -> float:
    if isinstance(value, bool) or value is None or value == "":
        raise ValueError(f"timestamp must be a number of ms (or a date-time in a CSV), not {value!r}")
    try:
        t = float(value)
    except (TypeError, ValueError):
        try:
            return datetime.fromisoformat(str(value).strip()).timestamp() * 1e3
        except ValueError:
            raise ValueError(f"timestamp {value!r} is neither a number of ms nor a date-time") from None
    if not (t >= 0 and t < float("inf")):
        raise ValueError(f"timestamp must be a finite number of ms ≥ 0, not {value!r}")
    return t


def _row(fields: dict[str, Any], line: int) -> TraceRow:
    got = {ALIASES[k.strip().lower()]: v for k, v in fields.items() if k and k.strip().lower() in ALIASES}
    missing = [k for k in NEEDED if k not in got]
    if missing:
        raise ValueError(f"no {', '.join(missing)} (give timestamp, input_length, output_length)")
    hashes = got.get("hash_ids") or []
    if isinstance(hashes, str):
        hashes = json.loads(hashes)
    if not isinstance(hashes, list) or not all(
        isinstance(h, int) and not isinstance(h, bool) for h in hashes
    ):
        raise ValueError("hash_ids must be a list of whole numbers")
    klass = got.get("class")
    if klass is not None and not (isinstance(klass, str | int) and str(klass).strip()):
        raise ValueError(f"class must be a name (chat, agent, ...), not {klass!r}")
    return TraceRow(
        _time(got["timestamp"]),
        _count(got["input_length"], "input_length", 1),
        _count(got["output_length"], "output_length", 1),
        tuple(hashes),
        line,
        traffic_class=str(klass).strip() if klass not in (None, "") else None,
    )


def _transcript(lines: list[str]) -> tuple[list[transcript.TranscriptRequest], list[tuple[int, str]]]:
    """The transcript form's requests, each with its session's history (``transcript.resolve``)."""
    found: list[transcript.TranscriptRequest] = []
    bad: list[tuple[int, str]] = []
    for n, x in enumerate(lines, 1):
        if not x.strip():
            continue
        try:
            try:
                obj = json.loads(x)
            except json.JSONDecodeError as exc:
                raise ValueError(f"not JSON: {exc.msg} (column {exc.colno})") from None
            if not isinstance(obj, dict):
                raise ValueError("each line must be one JSON object")
            found.append(transcript.parse(obj, n))
        except ValueError as exc:
            bad.append((n, str(exc)))
    if found and min(r.timestamp for r in found) > 1e11:  # date-times: counted from the first request's
        t0 = min(r.timestamp for r in found)
        found = [r.model_copy(update={"timestamp": r.timestamp - t0}) for r in found]
    resolved, wrong = transcript.resolve(found)
    bad += [(found[i].line or 0, msg) for i, msg in wrong]
    return resolved, sorted(bad)


def _is_transcript(first: str) -> bool:
    try:
        obj = json.loads(first)
    except ValueError:
        return False
    return isinstance(obj, dict) and "messages" in obj


# ``first`` is not used: the FileRef reader's signature
def read(path: Path, first: int | None = None) -> tuple[list[Any], list[tuple[int, str]]]:
    """The trace's rows (``TraceRow``; the transcript form's ``TranscriptRequest``), sorted by timestamp, and
    its mistakes as (line, message)."""
    text = _text(path)
    lines = text.splitlines()
    start = next((i for i, x in enumerate(lines) if x.strip()), None)
    if start is None:
        raise ValueError("the trace is empty")
    rows: list[TraceRow] = []
    bad: list[tuple[int, str]] = []
    if _is_transcript(lines[start]):
        requests, bad = _transcript(lines)
        if not requests and not bad:
            bad.append((start + 1, "no requests in the trace"))
        return requests, bad[:20]
    if lines[start].lstrip().startswith("{"):
        for n, x in enumerate(lines, 1):
            if not x.strip():
                continue
            try:
                obj = json.loads(x)
                if not isinstance(obj, dict):
                    raise ValueError("each line must be one JSON object")
                rows.append(_row(obj, n))
            except (ValueError, TypeError) as exc:
                bad.append((n, str(exc)))
    else:
        reader = csv.DictReader(io.StringIO("\n".join(lines[start:])))
        for n, rec in enumerate(reader, start + 2):
            try:
                rows.append(_row({k: v for k, v in rec.items() if k is not None}, n))
            except (ValueError, TypeError) as exc:
                bad.append((n, str(exc)))
        if rows and rows[0].timestamp_ms > 1e11:  # date-times: counted from the first row's
            t0 = min(r.timestamp_ms for r in rows)
            rows = [replace(r, timestamp_ms=r.timestamp_ms - t0) for r in rows]
    if not rows and not bad:
        bad.append((start + 1, "no requests in the trace"))
    return sorted(rows, key=lambda r: (r.timestamp_ms, r.line)), bad[:20]
