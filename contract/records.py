"""Records: one JSON object per request, the contract between measuring and the report.

The harness appends them to ``runs/<id>/records.jsonl`` (``harness.records.RecordWriter``, flushed
as they come); the report reads them back as dicts. :class:`RecordKey` is what identifies one
measurement, the one definition every reader and writer uses: when a case was recorded twice (a
resumed conversation repeat), the last record of a key wins. A load level is run as a whole: every
record of one run of it carries its attempt (``extra.level_attempt``), and a level that was run
again keeps only its latest attempt's records (:func:`latest_attempts`), so a redone
``seconds``-bounded level drops what the earlier attempt had for requests the redo did not reach.
:func:`num` is how every reader takes a record's number (None for missing, NaN or a bool).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Any, NamedTuple

RECORDS = "records.jsonl"


class RecordKey(NamedTuple):
    """What identifies one measurement; old runs without ``engine_start`` read as start 0."""

    backend: str | None
    engine_start: int
    workload: str | None
    mode: str | None
    case: str | None
    rep: int | None
    turn: int | None
    temperature: float | None

    @classmethod
    def of(cls, item: Any, backend: str | None = None) -> RecordKey:
        """The key of a :class:`Record` or a plan step (a step has no backend: ``backend`` stands in)."""
        return cls(getattr(item, "backend", backend), *(getattr(item, k) for k in cls._fields[1:]))

    @classmethod
    def of_row(cls, row: dict[str, Any]) -> RecordKey:
        """The key of a record read back as a dict."""
        return cls(*((row.get(k) or 0) if k == "engine_start" else row.get(k) for k in cls._fields))

    def without_backend(self) -> tuple:
        """(engine_start, workload, mode, case, rep, turn, temperature): one backend's case,
        ``Step.key()``."""
        return tuple(self)[1:]

    def of_level(self) -> RecordKey:
        """The key of a load level's own record: the level's case, no rep, turn or temperature."""
        return self._replace(rep=None, turn=None, temperature=None)


KEY_FIELDS = RecordKey._fields


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
    step_logprobs: list[list[list]] | None = (
        None  # greedy calls: per step, top-2 [token_id, logprob], best first
    )
    attention_special_share: list[float] | None = None
    prefix_break: dict[str, Any] | None = None
    random_weights: bool | None = None
    # -- load (many requests in flight; backends.load_loop) --
    # times in s from the level's start, one monotonic clock
    user: int | None = None  # the session (user) the request belongs to
    load_concurrency: int | None = None  # the level: closed-loop requests in flight
    load_rate_rps: float | None = None  # ... or open-loop Poisson arrivals per second
    planned_submit_s: float | None = (
        None  # when the load's plan said to submit it (arrival, or answer + think)
    )
    submit_s: float | None = None
    first_token_s: float | None = None
    finish_s: float | None = None
    token_times_s: list[float] | None = None  # each output token's arrival
    chunk_times_s: list[float] | None = (
        None  # each streamed chunk's arrival (a chunk may carry several tokens)
    )
    queue_ms: float | None = None  # waiting for a queued backend's turn (one request at a time)
    # -- one call taken apart (docs/explanation/anatomy.md): stages the engine's and server's clocks miss --
    template_ms: float | None = None  # the chat template rendered to text (the harness, at plan time)
    tokenize_ms: float | None = None  # the prompt's text tokenized (the harness, at plan time)
    last_token_ms: float | None = None  # submit -> the last token available, at the caller (TokenClock)
    detokenize_ms: float | None = None  # output ids -> text where the adapter decodes them (TokenClock span)
    # a streamed answer assembled once its stream ended (TokenClock span)
    response_parse_ms: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def key(self) -> RecordKey:
        return RecordKey.of(self)


FIELD_NAMES = {f.name for f in fields(Record)}


def row_key(row: dict[str, Any]) -> RecordKey:
    """The key of a record read back as a dict (:meth:`RecordKey.of_row`)."""
    return RecordKey.of_row(row)


# --- load levels run more than once (a resume redoes a level with a failed request, whole) --------------
ATTEMPT = "level_attempt"  # extra field: which run of its load level a record belongs to


def level_of(row: dict[str, Any]) -> tuple | None:
    """The load level a record belongs to (its requests and its level record: a concurrency or an arrival
    rate), None for other records."""
    if row.get("skipped") or (row.get("load_concurrency") is None and row.get("load_rate_rps") is None):
        return None
    return (
        row.get("backend"),
        row.get("engine_start") or 0,
        row.get("workload"),
        row.get("mode"),
        row.get("case"),
    )


def attempt_of(row: dict[str, Any]) -> str | None:
    extra = row.get("extra")
    return extra.get(ATTEMPT) if isinstance(extra, dict) else None


def latest_attempts(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` (in file order) without the records of a load level's earlier attempts: a level's current
    attempt is the one its last-written record carries (records of old runs, with none, are all kept).
    Every reader applies it before keeping the last record of a key."""
    current: dict[tuple, str] = {}
    for row in rows:
        level, attempt = level_of(row), attempt_of(row)
        if level is not None and attempt is not None:
            current[level] = attempt
    return [r for r in rows if (a := attempt_of(r)) is None or current.get(level_of(r), a) == a]


# --- a record that cannot be read -----------------------------------------------------------------------
class DamagedRecordError(ValueError):
    """A record whose field holds a value its type cannot (a string where a number goes, a list for an
    object): the message names the run and the record (:func:`record_place`) and the field, in one line.
    ``python compare.py report`` says it on stderr and exits 2."""


def record_place(row: dict[str, Any]) -> str:
    """Where a record read back as a dict belongs, for a message: ``run R, level BACKEND WORKLOAD/MODE CASE``
    (a load level's record), else ``run R, record BACKEND WORKLOAD/MODE CASE``, with its engine start where
    it is not the first. A row read through pandas says NaN where JSON said null: the same."""

    def given(key: str) -> Any:
        value = row.get(key)
        return None if value is None or value != value else value  # NaN: pandas' missing

    level = given("load_concurrency") is not None or given("load_rate_rps") is not None
    what = "level" if level and given("rep") is None else "record"
    start = given("engine_start") or 0
    where = " ".join(str(given(k) or "?") for k in ("backend", "workload"))
    return f"run {given('run_id') or '?'}, {what} {where}/{given('mode') or '?'} {given('case') or '?'}" + (
        f" (engine start {start})" if start else ""
    )


def num(value: object) -> float | None:
    """A record's number: a float, or None for missing, NaN, a bool or what does not read as one."""
    if value is None or isinstance(value, bool):
        return None
    try:
        x = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return None if math.isnan(x) else x
