"""``hf-cb``: transformers' own answer to many users, its continuous-batching manager, in process.

``model.init_continuous_batching()`` gives a ``ContinuousBatchingManager``: a background thread
that schedules every request in flight into one forward per step over a paged KV cache, with
block sharing for common prefixes (transformers' prefix cache). Requests are added with
``add_request(..., streaming=True)`` and their tokens come back through
``register_result_handler`` on this event loop, so the load loop stamps each token as the manager
hands it over. This is the load column of HF; the batch-1 workloads are ``hf``'s (they skip here).

Configuration, as transformers' documentation recommends for speed: ``sdpa`` attention (the
manager makes it paged; a flash-attention build would be its first choice, but none is installed
in the GPU image and none can be fetched offline), the manager's own sizing of the KV cache on a
GPU (``max_memory_percent`` of free memory) and its own default for CUDA graphs (off for sdpa,
whose attention needs a mask). ``LCA_HF_CB="attn=eager,use_cuda_graph=true,num_blocks=512,..."``
overrides any of them (fields of ``ContinuousBatchingConfig``; ``attn`` is the attention
implementation), and so do ``--engine-arg hf-cb:num_blocks=64`` and a variant's settings (``hf-cb@NAME``, on
top); env.json records what was used. On a CPU the cache is sized explicitly
(``CPU_CACHE_TOKENS``): the automatic sizing reads the host's free memory and allocates tens of
gigabytes, which stalled the first request for longer than a test waits.

The prefix cache is reset by starting a new manager (its block hashes go with its cache), in
``reset_cache``, which the runner calls before a level, outside its timing; one short request
then primes the new manager.
Cached tokens per request are counted where the manager matches a prompt's prefix
(``PagedAttentionCache.search_prefix_match``, the same name in transformers 5.17 and 5.19).
"""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import replace
from typing import Any

from llm_call_anatomy.backends.base import TokenClock
from llm_call_anatomy.backends.hf.backend import HFBackend
from llm_call_anatomy.contract.adapter import Capabilities, RawOutput, Request
from llm_call_anatomy.contract.options import parse_pairs

CPU_CACHE_TOKENS = 16384  # KV-cache size on a CPU, in tokens (the tiny and smollm2 models: well under 1 GB)
CPU_BATCH_TOKENS = 512  # tokens one CPU step may process (chunked prefill beyond that)
DEFAULT_ATTN = "sdpa"
PRIME_TOKENS = 8  # the priming request's prompt: under any block size


def overrides(text: str | None) -> dict[str, Any]:
    """``LCA_HF_CB`` as a dict (``key=value`` pairs split on commas); true/false/none and numbers typed."""

    def typed(v: str) -> Any:
        if v.lower() in ("true", "false", "none"):
            return {"true": True, "false": False, "none": None}[v.lower()]
        try:
            return float(v) if "." in v else int(v)
        except ValueError:
            return v

    return {k: typed(v) for k, v in parse_pairs(text, "LCA_HF_CB").items()} if (text or "").strip() else {}


def split_attn(fields: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(the attention implementation, the ``ContinuousBatchingConfig`` fields) of an ``LCA_HF_CB`` dict."""
    rest = dict(fields)
    return rest.pop("attn", DEFAULT_ATTN), rest


class HFContinuousBatchingBackend(HFBackend):
    name = "hf-cb"
    grammar_by_xgrammar = False  # no grammar through the manager, xgrammar or not
    raw_call = None  # requests go through the manager: hf's bare forward loop is no call of this engine's
    batch_call = "ContinuousBatchingManager.add_request per prompt + get_result (generate_batch's loop)"

    def __init__(self, settings) -> None:
        # --engine-arg hf-cb:KEY=VALUE and a variant's settings (hf-cb@NAME) over LCA_HF_CB: the same fields
        attn, self.tuning = split_attn({**overrides(os.environ.get("LCA_HF_CB")), **settings.engine_args})
        super().__init__(replace(settings, attn=attn))
        self.capabilities = Capabilities(
            prefix_cache=True,
            reports_cached_tokens=True,
            resets_cache=True,
            load=True,
            batches_requests=True,
            single_requests=False,
        )
        self.manager = None
        self._used = False  # a request ran on the current manager
        self._matched: dict[str, int] = {}  # request id -> prompt tokens served from the prefix cache
        self._hits = 0  # prompt tokens served from the prefix cache, all requests (a counter)
        self._queried = 0  # prompt tokens submitted (the hit rate's denominator, as vLLM counts it)
        self._requests = 0
        self.effective: dict[str, Any] = {}

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        super().start()
        self.model.generation_config.eos_token_id = sorted(self.eos_ids) or -1
        self._start_manager()

    def _config(self):
        from transformers.generation import ContinuousBatchingConfig

        fields = dict(self.tuning)
        if not self.settings.prefix_caching:
            fields.setdefault(
                "allow_block_sharing", False
            )  # --no-prefix-caching: no block shared between requests
        if self.device.type != "cuda":
            page = fields.get("page_size") or fields.get("block_size") or 256
            fields.setdefault("num_blocks", max(4, CPU_CACHE_TOKENS // int(page)))
            fields.setdefault("max_batch_tokens", CPU_BATCH_TOKENS)
        return ContinuousBatchingConfig(**fields)

    def _start_manager(self) -> None:
        from transformers import GenerationConfig

        generation = GenerationConfig(
            max_new_tokens=64,
            do_sample=False,
            eos_token_id=sorted(self.eos_ids) or -1,
            pad_token_id=self.model.generation_config.pad_token_id,
        )
        started = time.perf_counter()
        manager = self.model.init_continuous_batching(
            generation_config=generation, continuous_batching_config=self._config()
        )
        manager.warmup()  # creates the cache now (and captures CUDA graphs where they are on)
        cache = manager.batch_processor.cache
        match = getattr(cache, "search_prefix_match", None)
        if match is not None:

            def counted(request_id: str, prompt_ids: list[int], _match=match) -> int:
                n = _match(request_id, prompt_ids)
                self._matched[request_id] = self._matched.get(request_id, 0) + int(n)
                self._hits += int(n)
                return n

            cache.search_prefix_match = counted
        manager.start()
        self._prime(manager)
        self.manager, self._used = manager, False
        cfg = manager.continuous_batching_config
        self.effective = {
            "attn_implementation": self.model.config._attn_implementation,
            "num_blocks": getattr(cache, "num_blocks", None),
            "block_size": getattr(cache, "block_size", None)
            or getattr(cfg, "page_size", None)
            or getattr(cfg, "block_size", None),  # tokens a block holds: page_size from transformers 5.19
            "max_batch_tokens": getattr(cache, "max_batch_tokens", None),
            "use_cuda_graph": getattr(cfg, "use_cuda_graph", None),
            "use_async_batching": getattr(cfg, "use_async_batching", None),
            "prefix_sharing": getattr(cache, "use_prefix_sharing", None),
            "max_requests_per_batch": getattr(cfg, "max_requests_per_batch", None),
            "start_s": round(time.perf_counter() - started, 3),
        }

    def _prime(self, manager) -> None:
        """One short request through a new manager before any timed one, so that one-time set-up of its first
        step (allocations, kernel choices) is not paid by a level's first request. Shorter than a cache block:
        it leaves nothing in the prefix cache."""
        vocab = int(self.model.config.vocab_size)
        ids = [(7919 * i) % vocab for i in range(1, PRIME_TOKENS + 1)]
        request_id = manager.add_request(ids, request_id="lca-prime", max_new_tokens=2, eos_token_id=-1)
        for out in manager.request_id_iter(request_id):
            if out.error:
                raise RuntimeError(f"continuous batching: the priming request failed: {out.error}")

    def reconfigure(self, config: str) -> None:
        """A fresh manager with another configuration (``LCA_HF_CB`` syntax) on the loaded model: for
        ``benchmarks/hf_cb_configs.py``, which compares configurations without loading the model again."""
        self._stop_manager()
        attn, self.tuning = split_attn(overrides(config))
        self.model.set_attn_implementation(attn)
        self._start_manager()

    def _stop_manager(self) -> None:
        if self.manager is not None:
            self.manager.stop(block=True, timeout=30)
            self.manager = None

    def close(self) -> None:
        self._stop_manager()
        super().close()

    def reset_cache(self) -> None:
        """A fresh manager (outside the timed region: the runner resets before a level), if this one served
        anything."""
        if self._used and self.manager is not None:
            self._stop_manager()
            self._matched.clear()
            self._start_manager()

    def environment(self) -> dict[str, Any]:
        env = super().environment()
        env.update(
            cache="PagedAttentionCache (continuous batching), block sharing for prefixes",
            grammar=None,
            continuous_batching={**self.effective, "overrides (LCA_HF_CB)": self.tuning or None},
        )
        return env

    def kv_cache_tokens(self) -> tuple[int | None, str]:
        blocks, size = self.effective.get("num_blocks"), self.effective.get("block_size")
        if blocks and size:
            return int(blocks) * int(
                size
            ), "ContinuousBatchingManager's PagedAttentionCache: num_blocks x block_size"
        return None, "not reported by this transformers version"

    # -- requests ------------------------------------------------------------------------------
    def _generate(self, request: Request, clock: TokenClock) -> RawOutput:
        raise NotImplementedError(
            "hf-cb runs many requests at once (the load workload); single requests are hf's"
        )

    def _check(self, request: Request) -> None:
        if (
            request.temperature
            or request.json_schema is not None
            or request.top_logprobs
            or request.want_attentions
        ):
            raise ValueError(
                "hf-cb runs greedy requests without grammar, log-probs or attentions (the load workload)"
            )

    async def stream(self, request: Request, clock: TokenClock) -> RawOutput:
        """One request added to the running manager, its streamed tokens ticking ``clock`` as the manager's
        thread hands them over; a cancelled request (``--request-timeout``) is cancelled in the manager too,
        where it can be."""
        self._check(request)
        outputs: asyncio.Queue = asyncio.Queue()
        eos = -1 if request.ignore_eos else (sorted(self.eos_ids) or -1)
        self._requests += 1
        request_id = f"lca-{self._requests}"
        # the handler is in place before the request is, so its first token cannot go to the shared queue
        self.manager.register_result_handler(request_id, outputs.put_nowait)
        added = self.manager.add_request(
            list(request.prompt_ids),
            request_id=request_id,
            max_new_tokens=request.max_new_tokens,
            streaming=True,
            eos_token_id=eos,
        )
        if added is None:
            raise RuntimeError("the continuous-batching manager refused the request (stopped or failed)")
        self._used = True
        self._queried += len(request.prompt_ids)
        seen, final = 0, None
        try:
            while final is None:
                out = await outputs.get()
                if out.error:
                    raise RuntimeError(f"continuous batching: {out.error}")
                n = len(out.generated_tokens)
                if n > seen:
                    clock.tick(n - seen)
                    seen = n
                if out.is_finished():
                    final = out
        except asyncio.CancelledError:  # --request-timeout (backends.load_loop): free its slot in the batch
            cancel = getattr(self.manager, "cancel_request", None)
            if cancel is not None:
                cancel(request_id)
            self._matched.pop(request_id, None)
            raise
        tokens = list(final.generated_tokens)
        return RawOutput(
            token_ids=tokens,
            text=self.tokenizer.decode(tokens, skip_special_tokens=True),
            finish_reason="stop"
            if tokens and tokens[-1] in self.eos_ids and not request.ignore_eos
            else "length",
            cached_tokens=self._matched.pop(request_id, 0),
            prompt_ids_used=list(request.prompt_ids),
        )

    def engine_batch(self, prompts: list[list[int]], request: Request) -> list[int]:
        """``generate_batch``'s loop on the running manager (``generate_batch`` would start its own), EOS
        ignored."""
        manager = self.manager
        ids = set()
        for k, prompt in enumerate(prompts, start=self._requests + 1):
            ids.add(
                manager.add_request(
                    list(prompt),
                    request_id=f"lca-batch-{k}",
                    max_new_tokens=request.max_new_tokens,
                    eos_token_id=-1,
                )
            )
        self._requests += len(prompts)
        self._used = True  # the next reset_cache() starts a fresh manager
        counts: list[int] = []
        while len(counts) < len(ids):
            result = manager.get_result(timeout=1)
            if result is None and not manager.is_running():
                raise RuntimeError("the continuous-batching manager stopped")
            if result is not None and result.error:
                raise RuntimeError(f"continuous batching: {result.error}")
            if result is not None and result.request_id in ids and result.is_finished():
                counts.append(len(result.generated_tokens))
        return counts

    def load_stats(self) -> dict[str, float]:
        """Prompt tokens submitted and served from the prefix cache (counters), and KV-cache use where
        visible."""
        out: dict[str, float] = {
            "prefix_cache_queries_total": float(self._queried),
            "prefix_cache_hits_total": float(self._hits),
        }
        cache = getattr(getattr(self.manager, "batch_processor", None), "cache", None)
        free = getattr(cache, "get_num_free_blocks", None)
        if callable(free) and getattr(cache, "num_blocks", None):
            out["kv_cache_usage_now"] = 1.0 - free() / cache.num_blocks
        return out

    def synchronize(self) -> None:
        pass  # tokens come back from the manager's thread once it has read them off the device
