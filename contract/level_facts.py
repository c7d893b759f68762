"""A load level's facts: what the level's own record (``rep`` None) keeps in ``extra.level``.

    facts = LevelFacts.from_record(row)  # a level record read back as a dict (or from_dict(extra["level"]))
    facts.kv_cache_usage_peak, facts.searched_for, facts.arrival

The harness writes them (``harness.load_runner.level_facts_of``) from the level it ran: the load it planned
and how it went, and what the planner states beside it (a replayed trace's shape); the level's clock and
client processes (``backends.load_loop``, ``backends.load_shards``); the engine's own figures over the level
(``Backend.load_stats``: its ``*_total`` counters as differences, its ``*_now`` gauges as peaks), the
server's latency histograms (``server_timings``) and the GPU's telemetry (``backends.telemetry``). The
capacity search (``harness.load_search``, :mod:`contract.capacity`), the load and trace reports
(``workloads/load/report/``, ``workloads/trace/report/``) and the run's closing summary
(``harness.run_summary``) read them.

:meth:`LevelFacts.to_dict` is what goes to JSON, the keys of the untyped dict it replaces: the load's own
facts (:data:`ALWAYS`) are written whatever their value (None where they do not apply), the others only where
the level had them (an engine that reports no KV-cache usage writes no ``kv_cache_usage_peak``). A
data-parallel server's per-replica figures (``replica{R}_<figure>``) are written flat, as the server's are.
:meth:`LevelFacts.from_dict` reads any run's: a key missing (an older run, an engine that did not report it)
is None, a key it does not name is kept in ``other`` and written back; a named key whose value its field
cannot hold (a string for a number) is a damaged record, :class:`~contract.records.DamagedRecordError` naming
the run and the level where the reader gives them (``where``: :func:`~contract.records.record_place`). Values
are kept as recorded (a reader takes numbers through ``reports.stats.num``). :meth:`LevelFacts.from_engine`
is the measuring side's constructor (``backends.load_level``): strict, an engine fact the type does not name
is an :class:`UnknownFactError` (a new figure is a new field here, not a stray key in every record).
"""

from __future__ import annotations

import numbers
import re
import types
from dataclasses import dataclass, field, fields, replace
from typing import Any, Union, get_args, get_origin, get_type_hints

from llm_call_anatomy.contract.records import DamagedRecordError, record_place

REPLICA_KEY = re.compile(r"^replica\d+_")  # a data-parallel replica's own figure: replica{R}_<figure>


@dataclass(frozen=True)
class LevelFacts:
    """One load level's facts, every key of ``extra.level`` a field (None: not recorded; see the module
    docstring for which are always written)."""

    # -- the load the level ran and how it went (harness.load_runner): always written ------------------------
    requests_planned: int | None = None  # the requests the level planned (its steps)
    requests_started: int | None = None  # those started (fewer: ``seconds`` ran out, or a client died)
    batches_requests: bool | None = None  # the backend batches requests in flight (else one at a time)
    served_as: str | None = None  # in words: "batched by the engine", "one at a time, queued (FIFO)"
    think_time_s: float | None = None  # a user's mean think between an answer and the next turn (0: none)
    think: str | None = None  # the think time's distribution: "fixed" or "exponential"
    # users who think: "stationary" (each at a turn drawn evenly over its session when the level starts) or
    # None (every user at its first turn: a level recorded before, or users_start: fresh)
    users_start: str | None = None
    session_turns: float | None = None  # users who think: the turns of the level's sessions, mean (planned)
    seconds: float | None = None  # no request started after this many seconds (None: no such bound)
    duration_s: float | None = None  # open loop: arrivals drawn for this long (None: one a session)
    arrival: str | None = None  # open loop: the arrival process (contract.arrivals; None: a closed loop)
    burstiness: float | None = None  # open loop: gamma arrivals' shape (1: Poisson; None: a closed loop)
    searched_for: str | None = None  # the target whose capacity search added the level (None: planned)
    extended: int | None = None  # an undecided level run again for this many times its window (None: not)
    search_ceiling: float | None = None  # the capacity search's stated maximum level (None: no search)
    search_ratio: float | None = None  # the search's bracket ratio (None: no search, or its default)
    # the engine's own limit on requests running at once, below the stated maximum, where the runner knew it
    # (Backend.max_running): a closed-loop search goes no higher; and the setting's name (max_num_seqs...)
    search_engine_limit: int | None = None
    search_engine_limit_name: str | None = None
    users: int | None = None  # sessions that submitted (one a request without a user id): level_flags
    in_flight_mean: float | None = None  # requests in flight over the steady window, time-weighted mean
    in_flight_p90: float | None = None  # requests in flight over the steady window, time-weighted p90
    arrivals_per_s: float | None = None  # requests submitted in the steady window ÷ its length
    # -- what the level's planner states beside its load (Group.load["facts"]), where it states it ---------
    trace: dict[str, Any] | None = None  # a replayed trace: its shape, what it left out, the time scale
    # -- the level's clock and its client (backends.load_loop, backends.load_shards) -------------------------
    wall_s: float | None = None  # the level's wall time, from its origin to the end of its last request
    client_procs: int | None = None  # client processes that drove it (0: this process)
    origin_perf_counter: float | None = None  # client processes: the level's origin (this process's clock)
    client: str | None = None  # client processes: the client they ran and its event loop, in words
    client_cpu_share: list[float | None] | None = None  # each client's CPU ÷ wall time (None: one died)
    client_busy_max: float | None = None  # the busiest client's share (written with client_cpu_share)
    client_limited: bool | None = None  # the busiest client was busy past load_shards.BUSY_LIMIT
    client_failed: str | None = None  # client processes that died: the level is incomplete (--resume)
    # -- the engine's own figures over the level (Backend.load_stats, load_level.sample_pause_s apart) ------
    gauge_samples: int | None = None  # Backend.load_stats reads over the level, the first and last included
    gauge_sample_s: float | None = None  # their wall time, seconds (a server: its /metrics scrapes)
    kv_cache_usage_peak: float | None = None  # KV-cache usage at its peak (0-1)
    requests_running_peak: float | None = None  # requests the engine ran at once, at the peak
    requests_waiting_peak: float | None = None  # requests waiting in the engine's queue, at the peak
    prefix_cache_hit_rate_peak: float | None = None  # the engine's prefix-cache hit rate gauge (SGLang), peak
    preemptions: float | None = None  # requests preempted over the level (a counter's difference)
    prefix_cache_queries: float | None = None  # prompt tokens looked up in the prefix cache over the level
    prefix_cache_hits: float | None = None  # of those, tokens found there
    engine_step_s: float | None = None  # vLLM stepped in process: seconds inside its step() over the level
    engine_steps: float | None = None  # vLLM stepped in process: step() calls over the level
    server_timings: dict[str, Any] | None = None  # the server's latency histograms over the level, as figures
    replica_figures: dict[str, Any] = field(default_factory=dict)  # replica{R}_<figure> -> value, flat
    # -- the GPU over the level (backends.telemetry) ---------------------------------------------------------
    gpu_telemetry: str | None = None  # why none was measured ("not measured: ...")
    gpu_samples: int | None = None  # NVML samples taken
    gpu_index: int | None = None  # the GPU sampled (the first visible one)
    gpu_power_w_mean: float | None = None  # power draw, mean (W)
    gpu_power_w_peak: float | None = None  # power draw, peak (W)
    gpu_util_pct_mean: float | None = None  # utilisation, mean (%)
    gpu_memory_used_peak_bytes: float | None = None  # memory used, peak (bytes)
    gpu_energy_j: float | None = None  # energy over the level (J)
    gpu_energy_source: str | None = None  # "nvml-counter" (its difference) or "power-integral"
    # [t_s, J] pairs: t_s from the level's origin on the records' clock (their submit_s), J since the first
    # pair (the counter, else the power integral, as gpu_energy_source says): energy over any window of the
    # level (contract.level_energy); None: a run from before it was recorded
    gpu_energy_series: list[list[float]] | None = None
    gpu_idle_w: float | None = None  # the idle floor: power with no request in flight, before the level (W)
    gpu_idle_s: float | None = None  # the idle floor's window (s)
    # -- not keys of extra.level -----------------------------------------------------------------------------
    level_error: str | None = None  # the level record's own ``error`` (every request failed, a client died)
    other: dict[str, Any] = field(default_factory=dict)  # keys this type does not name, kept as read

    # -- reading and writing ---------------------------------------------------------------------------------
    @classmethod
    def from_dict(cls, d: dict[str, Any] | None, where: str | None = None) -> LevelFacts:
        """A level record's ``extra.level`` as written by any run: a missing key is None, a replica's figure
        goes to ``replica_figures``, a key not named here to ``other``. A named key with a value of the wrong
        type, or an ``extra.level`` that is no object, raises :class:`DamagedRecordError` naming ``where``
        (the run and the level: :func:`record_place`)."""
        if d is not None and not isinstance(d, dict):
            raise DamagedRecordError(
                f"{where or 'a level record'}: a damaged level record: extra.level is "
                f"{type(d).__name__} {_shown(d)}, not an object"
            )
        known: dict[str, Any] = {}
        replicas: dict[str, Any] = {}
        other: dict[str, Any] = {}
        for k, v in (d or {}).items():
            if k in NAMED:
                if v is not None and not _fits(v, HINTS[k]):
                    raise DamagedRecordError(
                        f"{where or 'a level record'}: a damaged level record: extra.level.{k} is "
                        f"{type(v).__name__} {_shown(v)}, not {TYPE_TEXT[k]}"
                    )
                known[k] = v
            elif REPLICA_KEY.match(k):
                replicas[k] = v
            else:
                other[k] = v
        return cls(**known, replica_figures=replicas, other=other)

    @classmethod
    def from_engine(cls, d: dict[str, Any], source: str = "the load level") -> LevelFacts:
        """What the measuring side found over a level (``backends.load_level``: its clock and client, the
        engine's figures, the GPU's), strictly: every key a named field or a replica's figure, else
        :class:`UnknownFactError` naming the keys and ``source`` (the backend); a value of the wrong type is a
        :class:`DamagedRecordError` as on read."""
        unknown = sorted(k for k in d if k not in NAMED and not REPLICA_KEY.match(k))
        if unknown:
            raise UnknownFactError(
                f"{source} reported level facts that contract.level_facts.LevelFacts does not name: "
                f"{', '.join(unknown)} (a new figure needs a field there, and the readers that show it)"
            )
        return cls.from_dict(d, where=source)

    @classmethod
    def from_record(cls, row: dict[str, Any]) -> LevelFacts:
        """A level record read back as a dict: its ``extra.level``, and its ``error`` as ``level_error`` (a
        damaged one names the record: :func:`record_place`)."""
        facts = cls.from_dict((row.get("extra") or {}).get("level"), where=record_place(row))
        error = row.get("error")
        if not error or error != error:  # NaN: a record read through pandas
            return facts
        return replace(facts, level_error=error)

    @classmethod
    def of(cls, facts: LevelFacts | dict[str, Any] | None) -> LevelFacts:
        """Facts from whatever a caller holds: these facts, an ``extra.level`` dict, or None (no facts)."""
        return facts if isinstance(facts, LevelFacts) else cls.from_dict(facts)

    def updated(self, d: dict[str, Any]) -> LevelFacts:
        """These facts with ``d``'s keys written over them (as :meth:`from_dict` reads a key)."""
        return replace(LevelFacts.from_dict({**self.to_dict(), **d}), level_error=self.level_error)

    def to_dict(self) -> dict[str, Any]:
        """``extra.level`` as JSON takes it: :data:`ALWAYS` whatever their value, the others where not None
        (``client_busy_max`` with ``client_cpu_share``), the replicas' figures and ``other`` flat."""
        out: dict[str, Any] = {}
        for f in fields(self):
            k, v = f.name, getattr(self, f.name)
            if k in NOT_WRITTEN:
                continue
            beside = WRITTEN_WITH.get(k)
            if v is not None or k in ALWAYS or (beside is not None and getattr(self, beside) is not None):
                out[k] = v
        return {**out, **self.replica_figures, **self.other}


# the load's own facts: the harness writes each of them for every level, None where it does not apply
ALWAYS = frozenset(
    {
        "requests_planned",
        "requests_started",
        "batches_requests",
        "served_as",
        "think_time_s",
        "think",
        "seconds",
        "duration_s",
        "arrival",
        "burstiness",
        "searched_for",
        "extended",
        "search_ceiling",
        "search_ratio",
        "users",
        "in_flight_mean",
        "in_flight_p90",
        "arrivals_per_s",
        "wall_s",
        "client_procs",
    }
)
WRITTEN_WITH = {"client_busy_max": "client_cpu_share"}  # written, None and all, wherever the other one is
NOT_WRITTEN = frozenset({"level_error", "replica_figures", "other"})  # not keys of extra.level by these names
NAMED = frozenset(f.name for f in fields(LevelFacts)) - NOT_WRITTEN  # the keys of extra.level it names
HINTS = {k: v for k, v in get_type_hints(LevelFacts).items() if k in NAMED}  # each key's field type
TYPE_TEXT = {f.name: str(f.type).removesuffix(" | None") for f in fields(LevelFacts) if f.name in NAMED}


class UnknownFactError(ValueError):
    """The measuring side reported a level fact :class:`LevelFacts` does not name (one line: the keys)."""


def _fits(value: Any, hint: Any) -> bool:
    """Whether a value read from JSON fits a field's type: an int where a float goes (JSON's ``5``), never a
    bool where a number goes; a list's and an object's items checked as deep as the type says."""
    origin, args = get_origin(hint), get_args(hint)
    if hint is Any:
        return True
    if origin in (Union, types.UnionType):
        return any(_fits(value, a) for a in args)
    if hint is type(None):
        return value is None
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, numbers.Integral) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, numbers.Real) and not isinstance(value, bool)
    if hint is str:
        return isinstance(value, str)
    if origin is list:
        return isinstance(value, list) and all(_fits(x, args[0]) for x in value)
    if origin is dict:
        return isinstance(value, dict) and all(_fits(x, args[1]) for x in value.values())
    raise TypeError(f"LevelFacts: no check for a field of type {hint!r}")  # a new field's type: add it here


def _shown(value: Any, width: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= width else text[: width - 1] + "…"
