"""SGLang adapter: one in-process ``sglang.Engine`` (RadixAttention, XGrammar), requests as token ids.

One engine per process (it takes minutes to start on the GPU), radix cache on, page size 1:
- ``full`` mode: ``flush_cache()`` before every request (the base class calls
  :meth:`reset_cache` outside the timed region); a flush the scheduler refuses is retried until
  it succeeds, else the request fails: a silently warm cache would corrupt the figures.
- ``cached`` conversation: flushed once per repeat by the runner, then the radix tree serves the
  shared prefix. It matches token by token, at most ``len(prompt) - 1`` tokens (the last prompt
  token is always computed, ``Req._compute_max_prefix_len``), so ``cached_tokens`` should equal
  ``min(shared_prefix_tokens, prompt_tokens - 1)``. It can differ when ``page_size`` > 1 (matches
  round down to pages), when the previous turn's generated tokens happen to continue the shared
  prefix, or after an eviction under memory pressure.
- ``flush_cache()`` also drops SGLang's compiled grammars (``GrammarManager.clear`` -> xgrammar
  ``clear_cache``), which HF and vLLM keep: after a flush a constrained request compiles its schema
  again, between its arrival and its queue entry, so that compile is part of its TTFT (on the H200
  this was within the noise for the built-in schema; a large user schema may show it).
- :meth:`start` sends one request down each path the study takes (greedy, sampled, top-k
  logprobs, grammar, prefix reuse), then flushes: SGLang compiles kernels on first use, and the
  plan's warm-ups (greedy, no logprobs) do not reach every path.

Timing: every request is streamed (``stream=True``, as ``Engine.generate(..., stream=True)`` does)
and the clock ticks as each chunk reaches this process (``in-process-stream``): TTFT and decode at
the caller, the definition every backend shares (``backends.base.TTFT_DEFINITION``). SGLang 0.5.17
streams one chunk per token, each carrying all output ids so far (recorded on the H200:
``tests/fixtures/sglang/meta_info.json``, case ``stream``). With ``enable_metrics`` (needs
``prometheus_client``) the last chunk's ``meta_info`` also carries the scheduler's per-request
timestamps (see :mod:`backends.sglang.meta`), kept beside as the engine's own figures: engine TTFT =
request received by the tokenizer manager -> first token sampled on the scheduler, engine decode =
first token -> request finished, over the tokens after the first.
``SGLangOptions(timing="engine")`` (``settings.options``) forces ``enable_metrics`` on, ``"stream"`` off; the
``max_tokens-differential`` is a last resort if no chunk arrives with tokens.
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib.util
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from llm_call_anatomy.backends.base import Backend, BackendUnavailable, TokenClock, install_hint
from llm_call_anatomy.backends.sglang import facts
from llm_call_anatomy.backends.sglang.config import (
    SGLangOptions,
    build_sampling_params,
    engine_kwargs,
    grammar_enabled,
    logprob_kwargs,
)
from llm_call_anatomy.backends.sglang.meta import flush_succeeded, to_raw_output
from llm_call_anatomy.contract.adapter import Capabilities, RawOutput, Request

FLUSH_TIMEOUT_S = 30.0  # the scheduler refuses to flush until it is fully idle
WARMUP_IDS = list(range(100, 164))  # any ids a vocabulary has; the answers are thrown away
WARMUP_SCHEMA = '{"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}'


def fa3_missing() -> bool:
    """True when sgl_kernel is installed without its FlashAttention-3 library (the offline bundle's
    first part alone), where SGLang's default attention backend on Hopper would fail to load."""
    spec = importlib.util.find_spec("sgl_kernel")
    places = list(spec.submodule_search_locations or []) if spec else []
    return bool(places) and not any(Path(p, "flash_ops.abi3.so").exists() for p in places)


def import_sglang() -> Any:
    try:
        import sglang
    except ImportError as exc:
        raise BackendUnavailable(
            f"sglang is not installed here ({exc.name or exc}){install_hint('sglang', exc)}"
        ) from exc
    return sglang


class SGLangBackend(Backend):
    name = "sglang"
    capabilities = Capabilities(
        prefix_cache=True,
        reports_cached_tokens=True,
        resets_cache=True,
        grammar=True,
        logprobs=True,
        load=True,
        batches_requests=True,
    )
    clock_source = "in-process-stream"
    differential_timing = True  # used only when neither the engine's stamps nor stream ticks exist
    options_type = SGLangOptions
    raw_call = "Engine.generate(..., stream=True) on the same input_ids, stamped per chunk"
    batch_call = "Engine.generate(input_ids=list of id lists)"

    def __init__(self, settings) -> None:
        super().__init__(settings)
        self._stats_lock = threading.Lock()
        self.sglang = import_sglang()
        if settings.device != "cuda":
            raise BackendUnavailable(
                f"sglang runs on a CUDA GPU in this study (this run is on {settings.device})"
            )
        timing = self.options.timing
        has_prometheus = importlib.util.find_spec("prometheus_client") is not None
        self.use_metrics = timing == "engine" or (timing == "auto" and has_prometheus)
        self.kwargs = {
            **engine_kwargs(settings, enable_metrics=self.use_metrics),
            **settings.engine_args,
        }  # --engine-arg
        self.notes: list[str] = []
        if "attention_backend" not in self.kwargs and fa3_missing():
            self.kwargs["attention_backend"] = "triton"
            self.notes.append("sgl_kernel has no FlashAttention-3 here: attention_backend='triton'")
        self.engine: Any = None
        self.effective: dict[str, Any] = {}
        self.config_source: str | None = None
        self.direct = True  # submit GenerateReqInput ourselves: the prompt ids are echoed back
        self.last_response: dict[str, Any] | None = None  # the raw answer, for fixtures and debugging
        self.flushes = 0
        self.warmup_s: float | None = None
        self.flush_refusals = 0  # flush_cache() answers "not idle yet", retried

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        self.engine = self.sglang.Engine(**self.kwargs)
        self.effective, self.config_source = self._read_config()
        if not grammar_enabled(self.effective):
            self.capabilities = dataclasses.replace(self.capabilities, grammar=False)
        started = time.perf_counter()
        self._warm_up()
        self.warmup_s = time.perf_counter() - started

    def _warm_up(self) -> None:
        """One request down each path (see the module docstring); on the H200 the first sampled and
        the first logprobs request were 0.1-0.2 s slower than the next ones without it."""
        greedy = {"max_new_tokens": 4, "temperature": 0.0}
        sampled = {"max_new_tokens": 4, "temperature": 0.7, "top_p": 0.95}
        paths = [
            {"sampling_params": greedy},
            {"sampling_params": sampled},
            {
                "sampling_params": greedy,
                "return_logprob": True,
                "top_logprobs_num": 10,
                "logprob_start_len": -1,
            },
            {"input_ids": WARMUP_IDS + WARMUP_IDS[:8], "sampling_params": greedy},  # reuses the prefix
        ]
        if self.capabilities.grammar:
            paths += [{"sampling_params": {**greedy, "max_new_tokens": 8, "json_schema": WARMUP_SCHEMA}}]
            paths += [{"sampling_params": {**sampled, "max_new_tokens": 8, "json_schema": WARMUP_SCHEMA}}]
        for fields in paths:
            for _ in self._submit({"input_ids": WARMUP_IDS, **fields}, stream=True):  # as the timed requests
                pass
        self.reset_cache()
        self.flushes = 0

    def close(self) -> None:
        engine, self.engine = self.engine, None
        if engine is not None:
            engine.shutdown()

    def version(self) -> str | None:
        return getattr(self.sglang, "__version__", None)

    def kv_cache_tokens(self) -> tuple[int | None, str]:
        tokens = self.effective.get("max_total_num_tokens")
        if isinstance(tokens, int) and not isinstance(tokens, bool):
            return tokens, f"max_total_num_tokens ({self.config_source})"
        return None, "max_total_num_tokens not in the server info"

    def max_running(self) -> tuple[int | None, str]:
        """``max_running_requests`` as the engine resolved it (None where SGLang sizes it itself, unsaid)."""
        found = self.effective.get("max_running_requests")
        if isinstance(found, int) and not isinstance(found, bool) and found > 0:
            return found, "max_running_requests"
        return None, "max_running_requests not in the server info"

    def _read_config(self) -> tuple[dict[str, Any], str]:
        """Effective settings: the scheduler's resolved config first, then what we constructed."""
        return facts.read_config(self.engine, self.notes)

    def environment(self) -> dict[str, Any]:
        """env.json's engine facts (:func:`backends.sglang.facts.describe`)."""
        return facts.describe(self)

    # -- cache ---------------------------------------------------------------------------------
    def reset_cache(self) -> None:
        if self.engine is None:
            return
        deadline = time.monotonic() + FLUSH_TIMEOUT_S
        while True:
            ok, why = flush_succeeded(self.engine.flush_cache())
            if ok:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"sglang flush_cache() did not empty the radix cache: {why}")
            self.flush_refusals += 1
            time.sleep(0.005)
        self.flushes += 1

    # -- one request ---------------------------------------------------------------------------
    def _generate(self, request: Request, clock: TokenClock) -> RawOutput:
        if request.want_attentions:
            raise BackendUnavailable("sglang does not return attention weights")
        params = build_sampling_params(request)
        fields = {"input_ids": list(request.prompt_ids), "sampling_params": params, **logprob_kwargs(request)}
        response = self._collect(fields, clock)
        self.last_response = response
        return to_raw_output(
            response,
            request.prompt_ids,
            top_k=request.top_logprobs,
            decode=self._decode,
            constrained=request.json_schema is not None,
            step_k=request.step_logprobs,
        )

    def _collect(self, fields: dict[str, Any], clock: TokenClock) -> dict[str, Any]:
        """Stream one request, ticking the clock per chunk (chunks carry all output ids so far).
        The step-0 candidates are taken from the first chunk that has any, so they are position 0
        whether a chunk's ``output_top_logprobs`` holds all positions so far or only its own."""
        seen, last, first_top = 0, None, None
        for chunk in self._submit(fields, stream=True):
            n = len(chunk.get("output_ids") or [])
            if n > seen:
                clock.tick(n - seen)
                seen = n
            top = (chunk.get("meta_info") or {}).get("output_top_logprobs")
            if first_top is None and top:
                first_top = top
            last = chunk
        if last is None:
            raise RuntimeError("sglang streamed no output")
        meta = dict(last.get("meta_info") or {})
        if first_top is not None:
            meta["output_top_logprobs"] = first_top
        return {**last, "meta_info": meta, "output_ids": list(last.get("output_ids") or [])}

    def _submit(self, fields: dict[str, Any], stream: bool) -> Iterator[dict[str, Any]]:
        """Run ``fields`` as ``Engine.generate`` does, with the prompt echo and candidate texts on;
        falls back to the public ``Engine.generate`` if this SGLang's request type differs."""
        if self.direct:
            try:
                from sglang.srt.managers.io_struct import GenerateReqInput

                obj = GenerateReqInput(
                    **fields, stream=stream, return_prompt_token_ids=True, return_text_in_logprobs=True
                )
                agen = self.engine.tokenizer_manager.generate_request(obj, None)
            except (ImportError, TypeError, AttributeError) as exc:
                self.direct = False
                self.notes.append(f"GenerateReqInput path unavailable, using Engine.generate: {exc}")
            else:
                return self._drain(agen, stream)
        out = self.engine.generate(**fields, stream=stream)
        return out if stream else iter([out])

    def _drain(self, agen: Any, stream: bool) -> Iterator[dict[str, Any]]:
        loop = self.engine.loop
        if not stream:
            return iter([loop.run_until_complete(agen.__anext__())])

        def chunks() -> Iterator[dict[str, Any]]:
            while True:
                try:
                    yield loop.run_until_complete(agen.__anext__())
                except StopAsyncIteration:
                    return

        return chunks()

    def _decode(self, ids: list[int]) -> str:
        tokenizer = getattr(getattr(self.engine, "tokenizer_manager", None), "tokenizer", None)
        if tokenizer is None:
            return ""
        try:
            return tokenizer.decode(ids)
        except Exception:  # noqa: BLE001 - a candidate's text is informative only
            return ""

    # -- under load ---------------------------------------------------------------------------------
    def run_async(self, coroutine):
        """A load level runs on the engine's own event loop, where its tokenizer manager lives."""
        return self.engine.loop.run_until_complete(coroutine)

    async def stream(self, request: Request, clock: TokenClock) -> RawOutput:
        """One request among many: ``Engine.async_generate(..., stream=True)`` (through the same
        ``GenerateReqInput`` path as :meth:`_submit`, which also echoes the prompt ids), the clock
        ticking per chunk; the scheduler batches every request in flight."""
        params = build_sampling_params(request)
        fields = {"input_ids": list(request.prompt_ids), "sampling_params": params, **logprob_kwargs(request)}
        rid = None  # the engine's request id, for the abort below
        if self.direct:
            from sglang.srt.managers.io_struct import GenerateReqInput

            rid = f"lca-{uuid.uuid4().hex}"
            obj = GenerateReqInput(
                **fields, rid=rid, stream=True, return_prompt_token_ids=True, return_text_in_logprobs=True
            )
            chunks = self.engine.tokenizer_manager.generate_request(obj, None)
        else:
            chunks = await self.engine.async_generate(**fields, stream=True)
        seen, last = 0, None
        try:
            async for chunk in chunks:
                n = len(chunk.get("output_ids") or [])
                if n > seen:
                    clock.tick(n - seen)
                    seen = n
                last = chunk
                rid = rid or (chunk.get("meta_info") or {}).get("id")
        except asyncio.CancelledError:
            # --request-timeout (backends.load_loop): cancelling the stream alone leaves the request
            # running in the scheduler; TokenizerManager.abort_request(rid) frees its slot (a request
            # that timed out before its first chunk on the async_generate path has no id to abort)
            if rid:
                self.engine.tokenizer_manager.abort_request(rid)
            raise
        if last is None:
            raise RuntimeError("sglang streamed no output")
        response = {**last, "output_ids": list(last.get("output_ids") or [])}
        return to_raw_output(
            response,
            request.prompt_ids,
            top_k=request.top_logprobs,
            decode=self._decode,
            constrained=request.json_schema is not None,
        )

    def load_stats(self) -> dict[str, float]:
        """SGLang's scheduler figures under load: its load snapshot (what ``/v1/loads`` serves; SGLang
        0.5.17's ``tokenizer_manager.load_snapshot_reader``), else ``get_server_info()``'s internal state
        (older versions). Called from the sampler's thread and at the level's end: one lock, the reader is a
        socket."""
        names = {
            "token_usage": "kv_cache_usage_now",
            "num_running_reqs": "requests_running_now",
            "num_queue_reqs": "requests_waiting_now",
            "num_waiting_reqs": "requests_waiting_now",
            "cache_hit_rate": "prefix_cache_hit_rate_now",
        }
        reader = getattr(getattr(self.engine, "tokenizer_manager", None), "load_snapshot_reader", None)
        try:
            if reader is not None:
                with self._stats_lock:
                    snaps = reader.read_all()
                state = {k: getattr(snaps[0], k, None) for k in names} if snaps else {}
            else:
                # no snapshot reader: the older internal state (not from a running loop: it runs one
                # itself)
                info = self.engine.get_server_info()
                states = info.get("internal_states") if isinstance(info, dict) else None
                state = (
                    states[0] if isinstance(states, list) and states and isinstance(states[0], dict) else {}
                )
        except Exception:  # noqa: BLE001 - nothing reported
            return {}
        return {names[k]: float(v) for k, v in state.items() if k in names and isinstance(v, int | float)}

    # -- the engine called directly (benchmarks/) ---------------------------------------------
    def raw_generate_timed(self, prompt_ids: list[int], max_new_tokens: int) -> tuple[Any, Any, float]:
        """The public ``Engine.generate(..., stream=True)`` on the ids (greedy, EOS ignored), timed as the
        adapter times it (all at the caller): what :meth:`generate` costs on top of it."""
        params = {"max_new_tokens": max_new_tokens, "temperature": 0.0, "ignore_eos": True}
        clock = TokenClock(lambda: None)
        seen = 0
        for chunk in self.engine.generate(input_ids=prompt_ids, sampling_params=params, stream=True):
            n = len(chunk.get("output_ids") or [])
            if n > seen:
                clock.tick(n - seen)
                seen = n
        return clock.ttft_ms(), clock.decode_ms_per_token(), (time.perf_counter() - clock.start) * 1e3

    def engine_batch(self, prompts: list[list[int]], request: Request) -> list[int]:
        """``Engine.generate`` on every prompt's ids at once, with the adapter's own sampling parameters."""
        outs = self.engine.generate(
            input_ids=[list(p) for p in prompts], sampling_params=build_sampling_params(request)
        )
        outs = outs if isinstance(outs, list) else [outs]  # a batch answers a list of dicts, one per prompt
        return [
            len(o.get("output_ids") or []) or int((o.get("meta_info") or {}).get("completion_tokens") or 0)
            for o in outs
        ]
