"""Reading SGLang's answers: one ``generate`` return value (``text``, ``output_ids``,
``meta_info``) into a :class:`RawOutput`. Pure functions, tested in CI on answers recorded on the
GPU (``tests/fixtures/sglang/meta_info.json``, written by ``benchmarks/record_sglang_fixtures.py``).

``meta_info`` in SGLang 0.5.17 (``sglang/srt/managers/tokenizer_manager.py``,
``_handle_batch_output``): always ``id``, ``finish_reason`` (a dict: ``{"type": "stop" |
"length" | "abort", ...}``), ``prompt_tokens``, ``completion_tokens``, ``cached_tokens`` (radix
hits, counted once per request: ``schedule_batch.py`` ``req.cached_tokens += pre_len -
already_computed``), ``cached_tokens_details`` (when > 0), ``reasoning_tokens``,
``num_retractions``, ``weight_version``; ``e2e_latency`` (seconds, tokenizer side) once
finished; ``output_top_logprobs`` (per output position a list of ``(logprob, token_id, text)``,
text None unless ``return_text_in_logprobs``) with ``return_logprob``.

With ``enable_metrics`` the scheduler's per-request timestamps are added
(``observability/req_time_stats.py``): ``forward_entry_time`` and ``prefill_finished_time``
(wall-clock seconds; the latter is stamped when the first sampled token reaches the scheduler's
CPU, ``batch_result_processor.py``), ``queue_time`` (seconds), and on the tokenizer side
``request_received_ts``, ``api_server_dispatch_finish_ts``, ``request_finished_ts``,
``decode_throughput``. All are ``time.perf_counter()`` values of one machine shifted by the same
offset, so their differences are exact. From them:

    engine TTFT   = prefill_finished_time - request_received_ts
    engine decode = (request_finished_ts - prefill_finished_time) / (completion_tokens - 1)

``decode_throughput`` is not used: the tokenizer's first-token stamp is the first *output
message*, which for a non-streamed request comes every 50 tokens (SGLANG_FORCE_STREAM_INTERVAL),
not at the first token.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from llm_call_anatomy.contract.adapter import RawOutput, TokenCandidate


@dataclass
class MetaFacts:
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    engine_ttft_ms: float | None = None
    engine_decode_ms_per_token: float | None = None
    top_candidates: list[TokenCandidate] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class EngineAbort(RuntimeError):
    """SGLang finished the request with ``finish_reason.type == "abort"``."""


def _num(value: Any) -> float | None:
    """A finite number, or None (missing, zero stamps count as missing where noted by callers)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else None


def _ms(start: float | None, end: float | None) -> float | None:
    """``end - start`` in ms, when both stamps were set (> 0) and in order."""
    if start is None or end is None or start <= 0 or end <= 0 or end < start:
        return None
    return (end - start) * 1e3


def finish_reason(meta: dict[str, Any]) -> tuple[str | None, Any]:
    """(``"stop"`` | ``"length"`` | ..., what matched); raises :class:`EngineAbort` on an abort."""
    reason = meta.get("finish_reason")
    if isinstance(reason, dict):
        kind = reason.get("type")
        if kind == "abort":
            raise EngineAbort(f"sglang aborted the request: {reason.get('message')}")
        return (str(kind) if kind is not None else None), reason.get("matched")
    if isinstance(reason, str):
        return reason, None
    return None, None


def engine_timing(
    meta: dict[str, Any], completion_tokens: int | None
) -> tuple[float | None, float | None, dict]:
    """(TTFT ms, decode ms per token after the first, detail) from the ``enable_metrics`` stamps."""
    received = _num(meta.get("request_received_ts"))
    first = _num(meta.get("prefill_finished_time"))
    finished = _num(meta.get("request_finished_ts"))
    ttft = _ms(received, first)
    decode = None
    if ttft is not None and completion_tokens is not None and completion_tokens > 1:
        span = _ms(first, finished)
        decode = None if span is None else span / (completion_tokens - 1)
    detail: dict[str, Any] = {}
    queue = _num(meta.get("queue_time"))
    if queue is not None and queue >= 0:
        detail["engine_queue_ms"] = queue * 1e3
    prefill = _ms(_num(meta.get("forward_entry_time")), first)
    if prefill is not None:
        detail["engine_prefill_ms"] = prefill  # forward entry -> first token on the scheduler's CPU
    dispatch = _ms(received, _num(meta.get("api_server_dispatch_finish_ts")))
    if dispatch is not None:
        detail["engine_dispatch_ms"] = dispatch
    return ttft, decode, detail


def top_candidates(
    meta: dict[str, Any], k: int, decode: Callable[[list[int]], str] | None = None
) -> list[TokenCandidate] | None:
    """The step-0 top-k from ``output_top_logprobs[0]`` (entries ``(logprob, token_id, text)``)."""
    if k <= 0:
        return None
    rows = meta.get("output_top_logprobs")
    if not isinstance(rows, list | tuple) or not rows or not isinstance(rows[0], list | tuple):
        return None
    out = []
    for entry in rows[0][:k]:
        if not isinstance(entry, list | tuple) or len(entry) < 2 or _int(entry[1]) is None:
            continue
        token_id = int(entry[1])
        text = entry[2] if len(entry) > 2 and isinstance(entry[2], str) else None
        if text is None:
            text = decode([token_id]) if decode else ""
        out.append(TokenCandidate(token_id=token_id, text=text, logprob=_num(entry[0])))
    return out or None


def step_logprobs(meta: dict[str, Any], k: int) -> list[list[list]] | None:
    """Per output position, the top-k ``[token_id, logprob]`` from ``output_top_logprobs``."""
    rows = meta.get("output_top_logprobs")
    if k <= 0 or not isinstance(rows, list | tuple) or not rows:
        return None
    out = []
    for row in rows:
        entries = row if isinstance(row, list | tuple) else []
        pairs = [
            [int(e[1]), _num(e[0])]
            for e in entries
            if isinstance(e, list | tuple) and len(e) >= 2 and _int(e[1]) is not None
        ]
        out.append(sorted(pairs, key=lambda p: -(p[1] if p[1] is not None else -math.inf))[:k])
    return out


def parse_meta_info(
    meta: dict[str, Any], *, top_k: int = 0, decode: Callable[[list[int]], str] | None = None
) -> MetaFacts:
    """Everything the harness uses from one finished request's ``meta_info``."""
    if not isinstance(meta, dict):
        raise TypeError(f"meta_info is {type(meta).__name__}, not a dict")
    reason, matched = finish_reason(meta)
    completion = _int(meta.get("completion_tokens"))
    ttft, decode, detail = engine_timing(meta, completion)
    extra: dict[str, Any] = dict(detail)
    e2e = _num(meta.get("e2e_latency"))
    if e2e is not None:
        extra["engine_e2e_ms"] = e2e * 1e3
    if matched is not None:
        extra["finish_matched"] = matched if isinstance(matched, int | str) else str(matched)
    details = meta.get("cached_tokens_details")
    if isinstance(details, dict):
        extra["cached_tokens_details"] = {str(k): v for k, v in details.items() if isinstance(v, int | str)}
    retractions = _int(meta.get("num_retractions"))
    if retractions:
        extra["num_retractions"] = retractions
    return MetaFacts(
        finish_reason=reason,
        prompt_tokens=_int(meta.get("prompt_tokens")),
        completion_tokens=completion,
        cached_tokens=_int(meta.get("cached_tokens")),
        engine_ttft_ms=ttft,
        engine_decode_ms_per_token=decode,
        top_candidates=top_candidates(meta, top_k, decode),
        extra=extra,
    )


def to_raw_output(
    response: dict[str, Any],
    prompt_ids: list[int],
    *,
    top_k: int = 0,
    decode: Callable[[list[int]], str] | None = None,
    constrained: bool = False,
    step_k: int = 0,
) -> RawOutput:
    """One ``generate`` return value (``text``, ``output_ids``, ``meta_info``[, ``prompt_token_ids``])."""
    facts = parse_meta_info(response.get("meta_info") or {}, top_k=top_k, decode=decode)
    token_ids = [int(t) for t in response.get("output_ids") or []]
    extra = dict(facts.extra)
    if facts.prompt_tokens is not None:
        extra["prompt_tokens_reported"] = facts.prompt_tokens
        extra["prompt_tokens_match"] = facts.prompt_tokens == len(prompt_ids)
    if facts.completion_tokens is not None and facts.completion_tokens != len(token_ids):
        extra["completion_tokens_reported"] = facts.completion_tokens
    if constrained and facts.top_candidates:
        extra["candidates_after_grammar_mask"] = True  # SGLang masks the logits before the logprobs
    echoed = response.get("prompt_token_ids")
    text = response.get("text")
    return RawOutput(
        token_ids=token_ids,
        text=text if isinstance(text, str) else (decode(token_ids) if decode else ""),
        finish_reason=facts.finish_reason,
        cached_tokens=facts.cached_tokens,
        prompt_ids_used=[int(t) for t in echoed] if isinstance(echoed, list | tuple) else None,
        engine_ttft_ms=facts.engine_ttft_ms,
        engine_decode_ms_per_token=facts.engine_decode_ms_per_token,
        top_candidates=facts.top_candidates,
        step_logprobs=step_logprobs(response.get("meta_info") or {}, step_k),
        extra=extra,
    )


def flush_succeeded(result: Any) -> tuple[bool, str]:
    """(flushed?, why not) from ``Engine.flush_cache()``: a ``FlushCacheReqOutput(success, message)``
    in 0.5.17 (``io_struct.py``); the scheduler refuses while a request is still in flight."""
    if isinstance(result, bool):
        return result, "" if result else "flush_cache() returned False"
    if isinstance(result, dict):
        success, message = result.get("success"), result.get("message")
    else:
        success, message = getattr(result, "success", None), getattr(result, "message", None)
    if isinstance(success, bool):
        return success, str(message or ("" if success else "success=False"))
    return False, f"unrecognised flush_cache() answer: {result!r}"
