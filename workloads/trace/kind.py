"""Real traffic: the ``trace`` kind replays a production request trace — its lengths, its prefix reuse and its
timing — at one or more time scales.

- **The trace** (``trace: {path: ...}``, relative to the workload file; ``workloads/trace/reader.py`` reads
  it): Mooncake JSONL (``timestamp`` ms, ``input_length``, ``output_length``, ``hash_ids`` of prefix blocks of
  ``block_size`` tokens, 512 by default), or a JSONL/CSV of timestamp and the two lengths (Azure's
  ``TIMESTAMP, ContextTokens, GeneratedTokens`` read too). A bad row is a mistake with its file and line.
- **The prompts** are token ids (``prompts.py``): the same hash id is the same block of ids in every request,
  different ids never share a prefix by accident, so every engine's prefix cache sees exactly the trace's
  reuse; the last block is cut to the request's ``input_length``. Each request asks for its
  ``output_length`` tokens (``output_cap`` caps it), EOS ignored.
- **The drop rule**: a request with more input tokens than ``max_input_tokens`` is left out; without that
  setting, one whose input + output exceed the model's context (its tokenizer's ``model_max_length``). The
  left-out requests are counted in each level's record (``extra.level.trace.dropped``) and on the page.
- **The window**: the requests with ``start_s ≤ timestamp < start_s + duration_s`` (trace seconds; default
  the whole trace), every ``every_nth`` of them.
- **Timing**: each ``time_scales`` factor k is one open-loop level; request i is submitted ``(timestamp_i -
  start_s) / k`` seconds after the level starts (k = 2 replays the trace twice as fast), by the load
  kind's open loop (``backends.load_loop``: each request records its ``planned_submit_s`` beside its
  ``submit_s``); the level's rate (``load_rate_rps``) is its requests over the scaled window. Each level
  starts with the prefix cache reset and an unrecorded warm-up of ``warmup_requests`` own prompts.

- **The transcript form** (``transcript.py``): chat messages per request with a session id; each request's
  prompt is its session's history and its own messages, rendered by the model's chat template.
- **The capacity search over the time scale** (``search_levels``; ``search.py``): the load kind's open-loop
  search (``contract.capacity``), its rate the window's requests over the scaled span, so the page brackets
  the time scale one GPU holds at each target, and states the GPUs the trace needs at 1x.
- **Mixed traffic**: a row's ``class`` (chat, agent, ...) is judged on its own requests against its own target
  (``contract.traffic_classes``), in the report and in the capacity search (``search_judge``).

The kind's files: ``spec.py`` (the format, ``--trace``), ``reader.py``, ``prompts.py``, ``planner.py``;
this module is the registry's entry (``KIND``) and puts the trace's rows into the spec.
"""

from __future__ import annotations

from typing import Any

from llm_call_anatomy.contract.traffic_classes import judge_for_search
from llm_call_anatomy.workloads.kinds import FileRef, Kind, Override
from llm_call_anatomy.workloads.trace import reader
from llm_call_anatomy.workloads.trace.planner import plan
from llm_call_anatomy.workloads.trace.search import search_groups
from llm_call_anatomy.workloads.trace.spec import TraceSpec, parse_trace
from llm_call_anatomy.workloads.trace.transcript import TranscriptRequest


def with_files(spec: TraceSpec, loaded: Any, ctx: Any) -> list[TraceSpec]:
    """The trace's rows put into the spec (``rows``), the spec validated again with them."""
    if spec.trace is None or loaded is None:
        return [spec]
    doc = spec.model_dump(exclude_none=True, exclude={"trace"})
    if loaded and isinstance(loaded[0], TranscriptRequest):  # the transcript form: messages per request
        doc["requests"] = [r.model_dump(by_alias=True, exclude_none=True) for r in loaded]
    else:
        doc["rows"] = [r.to_list() for r in loaded]
    new = ctx.revalidate(spec, doc)
    return [new.model_copy(update={"trace": spec.trace}) if new is not spec else spec]


KIND = Kind(
    "trace",
    TraceSpec,
    plan,
    runs_as="concurrent",
    timing_only=True,
    files=(FileRef(("trace", "path"), reader=reader.read),),
    with_files=with_files,
    search_groups=search_groups,
    search_judge=judge_for_search,
    overrides=(
        Override(
            "--trace",
            parse_trace,
            missing="--trace: none of this run's workloads is a trace workload (a kind: trace workload "
            "with --workload-file)",
        ),
    ),
    order=60,
)
