"""One call, taken apart: where the time of one representative call goes, stage by stage, per backend.

Read from the records only (docs/explanation/anatomy.md says which layer's clock stamps each figure). A call's
stages, in the order the call goes through them:

- before the call (the harness renders prompts ahead, outside the call's clock): ``chat template``
  (``template_ms``) and ``tokenize`` (``tokenize_ms``);
- inside the call's end-to-end (``e2e_ms``, the caller's clock from submit to the answer in hand):
  ``intake`` (the engine's TTFT less its queue and prefill: arrival in the engine to being queued),
  ``queue`` (queued -> scheduled), ``prefill`` (scheduled -> first token), ``decode`` (first -> last
  token), each by the engine's own clock (in process, ``extra.engine_*``) or its server's ``/metrics``
  (``extra.server_*``); where no engine clock is recorded, prefill and decode come from the caller's
  clock (``ttft_ms``; ``last_token_ms - ttft_ms``); then ``detokenize`` where the adapter decodes
  (``detokenize_ms``) and ``response parse`` where a streamed answer is assembled after its stream ended
  (``response_parse_ms``);
- ``unaccounted``: the end-to-end less the stages measured inside it, its own stage, never spread over the
  others (request build and send, HTTP and SSE framing, a server's own tokenizer and detokenizer, the
  response parse; negative where clocks of different layers overlap).

A stage a record cannot give is ``not measured`` with the reason. The representative call
(:func:`representative`) is chosen by a rule that names no workload kind.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from llm_call_anatomy.contract.level_facts import LevelFacts
from llm_call_anatomy.contract.level_flags import level_kind, level_name
from llm_call_anatomy.reports.stats import num

UNACCOUNTED = "unaccounted"
CALLER = "caller's token clock"
BEFORE = ("chat template", "tokenize")  # before the call's clock starts
INSIDE = (
    "intake",
    "queue",
    "prefill",
    "decode",
    "detokenize",
    "response parse",
)  # inside the call's end-to-end
STAGES = (*BEFORE, *INSIDE, UNACCOUNTED)
LEVEL = 32  # the load level taken apart: C=32 where every backend ran it, else the largest below it
LOADED_RULE = (
    f"under load, the closed-loop level every backend ran at C={LEVEL} requests in flight (else the largest "
    "C below it, else the smallest), one variant of it; on each backend, its request with the median "
    "end-to-end"
)
RULE = (
    "the representative call of a workload: among its single requests (no load level) at its lowest "
    "temperature, the variant (mode, case, turn) every backend ran whose median prompt length is the middle "
    "one; on each backend, that variant's call with the median end-to-end (the lower of two middles)"
)


@dataclass(frozen=True)
class Stage:
    name: str
    ms: float | None  # None: not measured (``why`` says why)
    clock: str  # which layer's clock measured it
    why: str = ""

    @property
    def measured(self) -> bool:
        return self.ms is not None


@dataclass(frozen=True)
class Call:
    """One backend's representative call of one workload, taken apart."""

    workload: str
    backend: str
    label: str  # which call: mode, case, turn, repeat
    prompt_tokens: int | None
    output_tokens: int | None
    e2e_ms: float
    stages: tuple[Stage, ...]

    ttft_ms: float | None = None  # the caller's TTFT, to place the unaccounted part around the first token
    level: str | None = None  # under load: the level as shown ("C=32"; "U=256" users who think); None: single
    load: str | None = None  # under load, in words ("C=32 requests in flight"; "U=256 users, think 30 s ...")

    def stage(self, name: str) -> Stage:
        return next(s for s in self.stages if s.name == name)

    def unaccounted_before_first_token_ms(self) -> float | None:
        """The part of ``unaccounted`` before the first token reached the caller (its TTFT less the stages
        measured before the first token); the rest came after. None: no caller TTFT or no unaccounted, or the
        prefill is itself the caller's TTFT (nothing to split)."""
        if self.ttft_ms is None or self.stage(UNACCOUNTED).ms is None:
            return None
        if self.stage("prefill").clock.startswith(CALLER):  # the prefill is the caller's TTFT: no split
            return None
        return self.ttft_ms - sum(self.stage(n).ms or 0.0 for n in ("intake", "queue", "prefill"))


def _extra(row: dict[str, Any], key: str) -> float | None:
    extra = row.get("extra")
    return num(extra.get(key)) if isinstance(extra, dict) else None


def _engine_figures(row: dict[str, Any]) -> tuple[str | None, dict[str, float | None]]:
    """(whose clock, {queue, prefill, ttft, decode_ms_per_token}): the engine's own per-request stamps in
    process, else its server's /metrics for the request, else (None, {})."""
    for prefix, clock in (("engine", "engine's own request stamps"), ("server", "server /metrics")):
        queue, prefill = _extra(row, f"{prefix}_queue_ms"), _extra(row, f"{prefix}_prefill_ms")
        ttft = _extra(row, f"{prefix}_ttft_ms") if prefix == "server" else None
        if queue is not None or prefill is not None:
            return clock, {
                "queue": queue,
                "prefill": prefill,
                "ttft": ttft if ttft is not None else num(row.get("engine_ttft_ms")),
                "decode": num(row.get("engine_decode_ms_per_token")),
            }
    return None, {}


def stages_of(row: dict[str, Any]) -> tuple[Stage, ...]:
    """The stages of one record (see the module); the inside ones and ``unaccounted`` add up to ``e2e_ms``."""
    e2e = num(row.get("e2e_ms"))
    out: list[Stage] = []
    template, tokenize = num(row.get("template_ms")), num(row.get("tokenize_ms"))
    harness = "harness, at plan time (median of 3)"
    if template is None:
        why = "the prompt was built from token ids" if tokenize is not None else "not timed in this run"
        out.append(Stage("chat template", None, harness, why))
    else:
        out.append(Stage("chat template", template, harness))
    out.append(Stage("tokenize", tokenize, harness, "" if tokenize is not None else "not timed in this run"))

    clock, engine = _engine_figures(row)
    none = "the records carry no engine or server request stamps"
    n = num(row.get("output_tokens"))
    if clock is None:
        ttft, last, held = num(row.get("ttft_ms")), _last_token_ms(row), num(row.get("queue_ms"))
        turn = ttft - held if ttft is not None and held is not None else ttft
        out += [
            Stage("intake", None, "", none),
            Stage(
                "queue",
                held,
                "load loop: waiting for a queued backend's turn (caller's clock)",
                "" if held is not None else none,
            ),
            Stage(
                "prefill",
                turn,
                CALLER + (" (its turn -> first token)" if held is not None else " (submit -> first token)"),
                "" if turn is not None else "no token was ticked",
            ),
            Stage(
                "decode",
                last - ttft if last is not None and ttft is not None else None,
                CALLER + " (first -> last token)",
                "" if last is not None and ttft is not None else "no last-token time in the record",
            ),
        ]
    else:
        queue, prefill, ttft, per_token = (engine[k] for k in ("queue", "prefill", "ttft", "decode"))
        intake = ttft - queue - prefill if None not in (ttft, queue, prefill) else None
        decode = per_token * (n - 1) if per_token is not None and n is not None and n > 1 else None
        out += [
            Stage(
                "intake",
                intake,
                clock + " (TTFT - queue - prefill)",
                "" if intake is not None else "no engine TTFT, queue and prefill all recorded",
            ),
            Stage("queue", queue, clock, "" if queue is not None else "no queue time recorded"),
            Stage("prefill", prefill, clock, "" if prefill is not None else "no prefill time recorded"),
            Stage("decode", decode, clock, "" if decode is not None else "no engine decode time recorded"),
        ]
    detok = num(row.get("detokenize_ms"))
    out.append(
        Stage(
            "detokenize",
            detok,
            "adapter span on the caller's clock",
            "" if detok is not None else "done inside the engine or server, which reports no time for it",
        )
    )
    parse = num(row.get("response_parse_ms"))
    out.append(
        Stage(
            "response parse",
            parse,
            "adapter span on the caller's clock",
            "" if parse is not None else "no streamed response to assemble (or a run before it was timed)",
        )
    )
    inside = sum(s.ms for s in out if s.name in INSIDE and s.ms is not None)
    out.append(
        Stage(
            UNACCOUNTED,
            None if e2e is None else e2e - inside,
            "caller's end-to-end less the stages inside it",
            "" if e2e is not None else "no end-to-end in the record",
        )
    )
    return tuple(out)


def _last_token_ms(row: dict[str, Any]) -> float | None:
    """Submit -> the last token at the caller: the record's ``last_token_ms``, or under load its last token's
    arrival less its submit (``token_times_s``, one clock)."""
    last = num(row.get("last_token_ms"))
    times, submit = row.get("token_times_s"), num(row.get("submit_s"))
    if last is None and isinstance(times, list) and times and submit is not None:
        last = (times[-1] - submit) * 1e3
    return last


def _singles(measured: pd.DataFrame) -> pd.DataFrame:
    df = measured
    for col in ("load_concurrency", "load_rate_rps"):
        if col in df:
            df = df[df[col].isna()]
    df = df[df["e2e_ms"].notna()] if "e2e_ms" in df else df.iloc[0:0]
    if df.empty:
        return df
    temps = df["temperature"].fillna(0.0)
    return df[temps == temps.min()]


def _variant(row: pd.Series) -> tuple[str, str, str]:
    return tuple("" if v is None or v != v else str(v) for v in (row["mode"], row["case"], row["turn"]))


def representative(rows: pd.DataFrame, backends: list[str]) -> dict[str, dict[str, Any]]:
    """Per backend, the record dict of the workload's representative call (:data:`RULE`); {} if none."""
    rows = _singles(rows)
    if rows.empty:
        return {}
    rows = rows.assign(_variant=[_variant(r) for _, r in rows.iterrows()])
    present = [b for b in backends if b in set(rows["backend"])]
    common = set.intersection(*(set(rows[rows["backend"] == b]["_variant"]) for b in present))
    if not common:
        return {}
    lengths = {v: rows[rows["_variant"] == v]["prompt_tokens"].median() for v in common}
    ordered = sorted(common, key=lambda v: (lengths[v] if lengths[v] == lengths[v] else 0, v))
    chosen = ordered[(len(ordered) - 1) // 2]
    out = {}
    for b in present:
        calls = rows[(rows["backend"] == b) & (rows["_variant"] == chosen)].sort_values("e2e_ms")
        out[b] = calls.iloc[(len(calls) - 1) // 2].drop(labels="_variant").to_dict()
    return out


def representative_loaded(
    rows: pd.DataFrame, backends: list[str], level: int = LEVEL
) -> dict[str, dict[str, Any]]:
    """Per backend, the record dict of the workload's representative request under load
    (:data:`LOADED_RULE`); {} where the workload has no closed-loop level every backend ran."""
    if "load_concurrency" not in rows:
        return {}
    rows = rows[rows["load_concurrency"].notna() & rows["rep"].notna() & rows["e2e_ms"].notna()]
    present = [b for b in backends if b in set(rows["backend"])]
    if not present:
        return {}
    variants = [
        {
            (int(c), str(m), str(k))
            for c, m, k in rows[rows["backend"] == b][["load_concurrency", "mode", "case"]].values
        }
        for b in present
    ]
    common = sorted(set.intersection(*variants))
    if not common:
        return {}
    at_most = [v for v in common if v[0] <= level]
    chosen = max(at_most, key=lambda v: v[0]) if at_most else common[0]
    out = {}
    for b in present:
        mine = rows[
            (rows["backend"] == b)
            & (rows["load_concurrency"] == chosen[0])
            & (rows["mode"].astype(str) == chosen[1])
            & (rows["case"].astype(str) == chosen[2])
        ].sort_values("e2e_ms")
        out[b] = mine.iloc[(len(mine) - 1) // 2].to_dict()
    return out


def _label(row: dict[str, Any], level: str | None = None) -> str:
    """The call named: its mode, case (under load: its ``level`` as shown), turn and repeat (whole numbers as
    such)."""
    parts = []
    for k in ("mode", "case", "turn", "rep"):
        v = level if k == "case" and level else row.get(k)
        if v is None or v != v:
            continue
        parts.append(f"{k} {int(v) if isinstance(v, float) and v == int(v) else v}")
    return ", ".join(parts)


def _call(
    workload: str, backend: str, row: dict[str, Any], level: str | None = None, load: str | None = None
) -> Call:
    return Call(
        workload,
        backend,
        _label(row, level),
        int(row["prompt_tokens"]) if num(row.get("prompt_tokens")) is not None else None,
        int(row["output_tokens"]) if num(row.get("output_tokens")) is not None else None,
        float(row["e2e_ms"]),
        stages_of(row),
        num(row.get("ttft_ms")),
        level,
        load,
    )


def level_facts_of(rows: pd.DataFrame, row: dict[str, Any]) -> LevelFacts:
    """The facts (``extra.level``) of the level a request under load ran in: its level record's (the same
    backend, variant and case, no repeat; the first engine start's where several ran it); none without one."""
    if "rep" not in rows or "extra" not in rows:
        return LevelFacts()
    mine = rows[
        rows["rep"].isna()
        & (rows["backend"] == row["backend"])
        & (rows["mode"].astype(str) == str(row["mode"]))
        & (rows["case"].astype(str) == str(row["case"]))
    ]
    found = (e["level"] for e in mine["extra"] if isinstance(e, dict) and isinstance(e.get("level"), dict))
    return LevelFacts.of(next(found, None))


def loaded_level(rows: pd.DataFrame, row: dict[str, Any]) -> tuple[str, str]:
    """A request under load's level as shown (``contract.level_flags.level_name``: ``C=32``; ``U=256`` where
    its users think) and in words: ``C=32 requests in flight``, or for users who think the level's kind
    (``level_kind``: ``U=256 users, think 30 s (exponential)``: far fewer requests in flight than users)."""
    c = int(row["load_concurrency"])
    facts = level_facts_of(rows, row)
    name = level_name(f"C={c}", facts.think_time_s)
    return name, (level_kind(c, None, facts) if name != f"C={c}" else f"{name} requests in flight")


def calls(measured: pd.DataFrame, backends: list[str]) -> list[Call]:
    """Every workload's representative call on each backend, taken apart, in workload then backend order: one
    request at a time, then under load where the workload has load levels."""
    out = []
    for workload in dict.fromkeys(w for w in measured["workload"] if isinstance(w, str)):
        rows = measured[measured["workload"] == workload]
        out += [_call(workload, b, row) for b, row in representative(rows, backends).items()]
        for b, row in representative_loaded(rows, backends).items():
            out.append(_call(workload, b, row, *loaded_level(rows, row)))
    return out
