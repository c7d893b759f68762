"""The trace kind's file format: :class:`TraceSpec` (a ``kind: trace`` entry of a workload file), its window
over the trace, and ``--trace``'s values parsed into field overrides.

    - name: chat-trace
      kind: trace
      trace: {path: mooncake-conversation.jsonl.gz}   # relative to the workload file
      block_size: 512          # tokens a hash id stands for (Mooncake 512, Alibaba's 16)
      time_scales: [1, 2, 4]   # each a level: the trace replayed k times faster
      start_s: 600             # the window, in the trace's own seconds
      duration_s: 60
      every_nth: 1             # keep every n-th request of the window

What the fields mean is told in ``workloads/trace/kind.py``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from llm_call_anatomy.contract.options import parse_pairs
from llm_call_anatomy.contract.slo import parse_targets
from llm_call_anatomy.workloads.spec import _Strict, mistake
from llm_call_anatomy.workloads.trace.transcript import TranscriptRequest, resolve

DEFAULT_BLOCK_SIZE = 512  # Mooncake's block of hash ids
MAX_SCALE = 1000.0  # the fastest replay a level or the search may ask for
MAX_REQUESTS = 100_000  # a window's requests are planned ahead, prompts and all
LIST_FIELDS = ("time_scales",)
FIXED_FIELDS = (
    "name",
    "kind",
    "trace",
    "rows",
    "requests",
)  # what --trace cannot set for every trace workload at once


class TraceFile(_Strict):
    path: str = Field(
        min_length=1, description="the trace (JSONL or CSV, may be gzip'd); relative to the file"
    )


class TraceSpec(_Strict):
    name: str = Field(min_length=1)
    kind: Literal["trace"]
    trace: TraceFile | None = Field(None, description="the trace file (what rows are read from)")
    rows: list[list[Any]] | None = Field(
        None, description="the trace's rows inline: [timestamp ms, input, output, hash ids, line]"
    )
    requests: list[TranscriptRequest] | None = Field(
        None, description="the transcript form inline: chat messages per request, with a session id"
    )
    block_size: int = Field(DEFAULT_BLOCK_SIZE, ge=1, le=65536, description="tokens a hash id stands for")
    time_scales: list[Annotated[float, Field(gt=0, le=MAX_SCALE)]] = Field(
        [1.0], min_length=1, description="each a level: the trace's timestamps divided by k (k x faster)"
    )
    start_s: float = Field(0.0, ge=0, description="the window's start, in the trace's seconds")
    duration_s: float | None = Field(
        None, gt=0, description="the window's length, in the trace's seconds (default: to the end)"
    )
    every_nth: int = Field(1, ge=1, description="keep every n-th request of the window")
    max_input_tokens: int | None = Field(
        None, ge=1, description="drop requests with more input tokens (default: the model's context)"
    )
    output_cap: int | None = Field(
        None, ge=1, description="ask at most this many output tokens of a request (default: the trace's)"
    )
    warmup_requests: int = Field(2, ge=0, description="unrecorded requests before each level (own prompts)")
    class_targets: dict[str, str] | None = Field(
        None,
        description="each traffic class's target, by name (default: the target named as the class, if any)",
    )
    # the search over the time scale (contract.capacity, run by the harness after the last planned scale)
    search_levels: int = Field(0, ge=0, le=32, description="time scales the capacity search may add (0: off)")
    search_max_scale: float | None = Field(
        None, gt=0, le=MAX_SCALE, description=f"the fastest replay the search may try (default {MAX_SCALE:g})"
    )
    search_ratio: float = Field(
        1.25,
        gt=1,
        le=16,
        description="the search bisects until [last pass, first miss] is no wider than this",
    )
    search_targets: list[str] | None = Field(
        None, description="the targets searched for, in --slo syntax (default: --slo's, else the defaults)"
    )

    @model_validator(mode="after")
    def _consistent(self) -> TraceSpec:
        if self.trace is None and self.rows is None and self.requests is None:
            raise mistake("give the trace file (trace: {path: ...}), its rows or its requests", ["trace"])
        if self.rows is not None and self.requests is not None:
            raise mistake("give rows (lengths and hash ids) or requests (messages), not both", ["requests"])
        if self.requests is not None:  # each request with its session's history (a file's: again, the same)
            resolved, bad = resolve(self.requests)
            if bad:
                i, msg = bad[0]
                raise mistake(msg, ["requests", i])
            self.requests = resolved
        if self.trace is None:  # inline rows (a file's rows were checked by its reader, line by line)
            for i, r in enumerate(self.rows or []):
                ok = len(r) in (4, 5, 6) and all(isinstance(x, int | float) and x >= 0 for x in r[:3])
                ok = ok and (len(r) < 6 or r[5] is None or (isinstance(r[5], str) and r[5].strip() != ""))
                if not ok or r[1] < 1 or r[2] < 1 or not isinstance(r[3], list):
                    raise mistake(
                        "a row is [timestamp ms, input tokens ≥ 1, output tokens ≥ 1, [hash ids]] (then its "
                        "line, its class)",
                        ["rows", i],
                    )
        if self.search_targets is not None:
            try:
                parse_targets(self.search_targets)
            except ValueError as exc:
                raise mistake(str(exc), ["search_targets"]) from None
        if self.search_max_scale is not None and self.search_max_scale < max(self.time_scales):
            raise mistake(
                f"search_max_scale {self.search_max_scale:g} is below the fastest time scale planned",
                ["search_max_scale"],
            )
        twice = next((v for i, v in enumerate(self.time_scales) if v in self.time_scales[:i]), None)
        if twice is not None:
            raise mistake(f"time_scales: {twice:g} is given twice: each is one level", ["time_scales"])
        labels = [scale_label(k) for k in self.time_scales]
        if len(set(labels)) != len(labels):
            raise mistake("two time scales print alike: give values that differ in 4 digits", ["time_scales"])
        return self


def scale_label(k: float) -> str:
    """A level's case: ``x2`` (the trace twice as fast)."""
    return f"x{k:.4g}"


def parse_trace(text: str) -> dict[str, Any]:
    """``--trace`` as field overrides (lists split at ``:``)."""
    out: dict[str, Any] = {}
    for key, value in parse_pairs(text, "--trace").items():
        if key in FIXED_FIELDS:
            raise ValueError(f"--trace {key}=...: set it in the workload file")
        out[key] = [v for v in value.split(":") if v] if key in LIST_FIELDS else value
    return out
