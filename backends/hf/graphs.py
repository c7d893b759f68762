"""``hf-graphs``: the HF adapter with kernel-launch overhead taken away (static cache + CUDA graphs).

Tests the seed's explanation of HF eager's decode floor. transformers' own compile path for
``generate`` is used: ``cache_implementation="static"`` plus a ``CompileConfig`` in
``reduce-overhead`` mode (CUDA graphs), which compiles the one-token decode forward; prefill
runs as in ``hf``. Compilation happens in :meth:`start` (warm-up, not timed; its duration goes
to env.json). The static cache is sized once to ``--max-model-len`` (attention then spans the
whole cache, masked: a small extra cost per decode step, recorded in env.json). A static cache cannot be
cropped to a shared prefix, so ``cached`` conversation mode is declared unsupported and recorded as skipped.
Needs a CUDA device.
"""

from __future__ import annotations

import time
from typing import Any

import torch

from llm_call_anatomy.backends.base import BackendUnavailable, TokenClock
from llm_call_anatomy.backends.hf.backend import QUEUED, HFBackend
from llm_call_anatomy.contract.adapter import Capabilities, RawOutput, Request

WARMUP_NEW_TOKENS = 16
WARMUP_ROUNDS = 2


class HFGraphsBackend(HFBackend):
    name = "hf-graphs"
    no_batch_call = f"hf-graphs' static-cache generate() {QUEUED}"
    # hf's raw call is a bare eager forward loop, not this engine's path (a compiled forward on a static
    # cache): benchmark 1 against it compared CUDA graphs with eager (the H200 run of 2026-12-01), so it skips
    # instead
    raw_call = None

    def __init__(self, settings) -> None:
        super().__init__(settings)
        self.capabilities = Capabilities(grammar=self.capabilities.grammar, logprobs=True)
        self.compile_seconds: float | None = None

    def start(self) -> None:
        """The HF start, then CUDA-graph compilation by warm-up generations at the longest and a short
        prompt (untimed; its duration goes to env.json): no timed request compiles or re-allocates the static
        cache."""
        if self.device.type != "cuda" or not torch.cuda.is_available():
            raise BackendUnavailable(
                "hf-graphs captures CUDA graphs: it needs a CUDA device (on a CPU, torch.compile would "
                "measure compiled kernels, not the launch overhead this variant is about)"
            )
        super().start()
        from transformers import CompileConfig

        self.model.generation_config.compile_config = CompileConfig(fullgraph=True, mode="reduce-overhead")
        # generate keeps one static cache and reuses it while it is long enough: size it once to
        # --max-model-len with the first warm-up, so no later request re-allocates or recompiles
        started = time.perf_counter()
        longest = self.settings.max_model_len - WARMUP_NEW_TOKENS
        for _ in range(WARMUP_ROUNDS):
            for n in (longest, 64):
                ids = torch.randint(0, 1000, (1, n), device=self.device)
                self._run(ids, max_new_tokens=WARMUP_NEW_TOKENS, streamer=None)
        torch.cuda.synchronize()
        self.compile_seconds = time.perf_counter() - started

    def environment(self) -> dict[str, Any]:
        return {
            **super().environment(),
            "cache": "StaticCache (cache_implementation='static')",
            "compile": "CompileConfig(fullgraph=True, mode='reduce-overhead') through generate",
            "compile_warmup_s": self.compile_seconds,
            "static_cache_len": self.settings.max_model_len,
        }

    def kv_cache_tokens(self) -> tuple[int | None, str]:
        return self.settings.max_model_len, "StaticCache of one sequence, sized to --max-model-len"

    def _run(self, input_ids: torch.Tensor, max_new_tokens: int, streamer, **kwargs: Any):
        with torch.inference_mode():
            return self.model.generate(
                input_ids,
                attention_mask=torch.ones_like(input_ids),
                max_new_tokens=max_new_tokens,
                min_new_tokens=max_new_tokens,
                do_sample=False,
                temperature=None,
                top_p=None,
                top_k=None,
                cache_implementation="static",
                streamer=streamer,
                return_dict_in_generate=True,
                pad_token_id=next(iter(self.eos_ids), None),
                **kwargs,
            )

    def _generate(self, request: Request, clock: TokenClock) -> RawOutput:
        if request.reuse_prefix:
            raise BackendUnavailable("a static cache cannot be cropped to a shared prefix")
        return super()._generate(request, clock)

    def _fresh_cache(self) -> None:
        return None  # generate builds the static cache (cache_implementation="static")
