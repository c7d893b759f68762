"""Hugging Face transformers adapter: ``model.generate`` in process, eager attention by default.

The seed's setup: batch 1, eager attention, a DynamicCache. Prefix reuse (``cached`` mode) is
done the way the seed did it: keep the previous request's cache, crop it to the prefix the new
prompt shares with what the cache holds, and let ``generate`` prefill only the rest. Tokens are
timed as ``generate`` hands them to a streamer (the device is synchronized at each one), JSON
grammars come from xgrammar's transformers integration, the step-0 candidates from the raw
logits, and the attention probe from ``output_attentions=True``.
"""

from __future__ import annotations

import json
import time
from typing import Any

import torch
import transformers
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer, DynamicCache
from transformers.generation.streamers import BaseStreamer
from transformers.utils import logging as hf_logging

from llm_call_anatomy.backends.base import Backend, TokenClock, install_hint
from llm_call_anatomy.contract.adapter import Capabilities, RawOutput, Request, TokenCandidate
from llm_call_anatomy.contract.chat import common_prefix_len

DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}
# transformers 5.25 turned on the Hub's kernels in from_pretrained by default (`kernels` became a dependency,
# USE_HUB_KERNELS defaults to yes: layers swapped for kernels fetched from the Hub where one maps to the
# device); 5.17 to 5.24 default to off. The seed measured transformers' own PyTorch modules, and a random-
# weight model (from_config) is never kernelized: asked off, hf is the same engine on every version.
HUB_KERNELS = "off (use_kernels=False: transformers' own PyTorch modules, as 5.17-5.24 default to)"


class _ClockStreamer(BaseStreamer):
    """Ticks the token clock for every new token ``generate`` emits (the first put is the prompt)."""

    def __init__(self, clock: TokenClock) -> None:
        self.clock = clock
        self.prompt_seen = False

    def put(self, value: torch.Tensor) -> None:
        if not self.prompt_seen:
            self.prompt_seen = True
            return
        self.clock.tick(int(value.numel()))

    def end(self) -> None:
        pass


class _OutOfPlace:
    """Runs a logits processor on a copy: xgrammar masks in place, which would also rewrite the
    raw logits ``generate`` keeps for the step-0 candidates (the model's own preference)."""

    def __init__(self, processor) -> None:
        self.processor = processor

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        return self.processor(input_ids, scores.clone())


def step_top(scores: tuple[torch.Tensor, ...], k: int) -> list[list[list]]:
    """Per generated step, the top-k [token_id, logprob] of the scores the greedy choice was made on (after
    the grammar mask, like vLLM's and SGLang's log-probs; with no logits processor they are the raw
    logits)."""
    stacked = torch.stack([step[0] for step in scores]).float()
    top = torch.topk(torch.log_softmax(stacked, dim=-1), k, dim=-1)
    return [
        [[int(i), float(v)] for i, v in zip(ids, vals, strict=True)]
        for ids, vals in zip(top.indices.tolist(), top.values.tolist(), strict=True)
    ]


def xgrammar_available() -> bool:
    try:
        import xgrammar  # noqa: F401
    except ImportError:
        return False
    return True


# why hf and hf-graphs have no batched engine call (benchmarks/load_ceiling.py writes it as its skipped row)
QUEUED = (
    "has no batched engine call for requests that arrive at different times: under load the harness "
    "serves it one request at a time behind a queue"
)


class HFBackend(Backend):
    name = "hf"
    grammar_by_xgrammar = True  # JSON-schema grammars where xgrammar is installed (the hf extra)
    raw_call = "a hand-written prefill + decode loop of model(...) forward passes (argmax), synced per token"
    no_batch_call = f"transformers' eager generate() {QUEUED}"

    def __init__(self, settings) -> None:
        super().__init__(settings)
        self.device = torch.device(settings.device)
        self.capabilities = Capabilities(
            prefix_cache=True,
            reports_cached_tokens=True,
            resets_cache=True,
            grammar=xgrammar_available(),
            logprobs=True,
            attentions=settings.attn == "eager",
            # one request at a time behind a queue (Backend.stream): generate() behind a web server
            load=True,
        )
        self.clock_source = "cuda-sync" if self.device.type == "cuda" else "wall-clock"
        self._kept: tuple[list[int], DynamicCache] | None = None  # (token ids in the cache, cache)
        self._grammars: dict[str, Any] = {}

    def why_not(self, capability: str) -> str | None:
        if capability == "grammar" and self.grammar_by_xgrammar and not self.capabilities.grammar:
            return f"without xgrammar (not installed here){install_hint('hf')}"
        return None

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        """Tokenizer and model on the device (random weights initialised there, seed 0); the ids that end a
        generation (the model's and the tokenizer's EOS) and the special tokens the attention probe counts."""
        s = self.settings
        dtype = DTYPES[s.dtype]
        # the child's heartbeat says the load and its elapsed time: transformers' own "Loading weights" bar
        # would print before the run's progress bar exists, through the heartbeat's line (issue 43)
        hf_logging.disable_progress_bar()
        self.tokenizer = AutoTokenizer.from_pretrained(s.model_path)
        if s.random_weights:
            config = AutoConfig.from_pretrained(s.model_path)
            torch.manual_seed(0)
            with self.device:  # initialise on the device directly (seconds on a GPU, not minutes)
                self.model = AutoModelForCausalLM.from_config(config, dtype=dtype, attn_implementation=s.attn)
        else:
            self.model = AutoModelForCausalLM.from_pretrained(
                s.model_path, dtype=dtype, attn_implementation=s.attn, use_kernels=False
            )  # HUB_KERNELS: transformers' own modules on every version
            self.model.to(self.device)
        self.model.eval()
        eos = self.model.generation_config.eos_token_id
        self.eos_ids = set(eos if isinstance(eos, list) else [eos] if eos is not None else [])
        if self.tokenizer.eos_token_id is not None:
            self.eos_ids.add(self.tokenizer.eos_token_id)
        self.special_ids = {int(i) for i in self.tokenizer.added_tokens_decoder}

    def close(self) -> None:
        self._kept = None
        self.model = None
        if self.device.type == "cuda":
            torch.cuda.empty_cache()

    def synchronize(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def reset_cache(self) -> None:
        self._kept = None

    def version(self) -> str:
        return transformers.__version__

    def environment(self) -> dict[str, Any]:
        return {
            "transformers": transformers.__version__,
            "torch": torch.__version__,
            "attn_implementation": self.settings.attn,
            "hub_kernels": HUB_KERNELS,
            "device": str(self.device),
            "cache": "DynamicCache, cropped to the shared prefix in cached mode",
            "grammar": (
                "xgrammar.contrib.hf.LogitsProcessor, any_whitespace=False, xgrammar's default separators"
                if self.capabilities.grammar
                else None
            ),
        }

    def kv_cache_tokens(self) -> tuple[int | None, str]:
        return (
            None,
            "no fixed KV pool: transformers grows a DynamicCache per request, up to free device memory",
        )

    def raw_generate_timed(self, prompt_ids: list[int], max_new_tokens: int) -> tuple[float, float, float]:
        """Prefill and decode as bare ``model(...)`` forward passes (argmax, no stop), the device synchronized
        at every token as the adapter's streamer does: what ``generate()`` costs on top of them."""
        model, sync = self.model, self.synchronize
        sync()
        t0 = time.perf_counter()
        with torch.inference_mode():
            cache = DynamicCache()
            out = model(torch.tensor([prompt_ids], device=self.device), past_key_values=cache, use_cache=True)
            token = out.logits[:, -1:].argmax(-1)
            sync()
            stamps = [time.perf_counter()]
            for _ in range(max_new_tokens - 1):
                out = model(token, past_key_values=cache, use_cache=True)
                token = out.logits[:, -1:].argmax(-1)
                sync()
                stamps.append(time.perf_counter())
        ttft = (stamps[0] - t0) * 1e3
        return ttft, (stamps[-1] - stamps[0]) * 1e3 / (max_new_tokens - 1), (stamps[-1] - t0) * 1e3

    # -- one request ---------------------------------------------------------------------------
    def _generate(self, request: Request, clock: TokenClock) -> RawOutput:
        if request.want_attentions:
            return self._attention_probe(request, clock)
        prompt = request.prompt_ids
        cache, cached = self._cache_for(prompt) if request.reuse_prefix else (self._fresh_cache(), 0)
        kwargs: dict[str, Any] = {
            "max_new_tokens": request.max_new_tokens,
            **({"past_key_values": cache} if cache is not None else {"cache_implementation": "static"}),
            "streamer": _ClockStreamer(clock),
            "return_dict_in_generate": True,
            "output_logits": request.top_logprobs > 0,
            "output_scores": request.step_logprobs > 0,
            "pad_token_id": self.model.generation_config.pad_token_id or next(iter(self.eos_ids), None),
        }
        if request.temperature > 0:
            kwargs.update(do_sample=True, temperature=request.temperature, top_p=request.top_p)
        else:
            kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        if request.ignore_eos:
            kwargs["min_new_tokens"] = request.max_new_tokens
        if request.json_schema is not None:
            kwargs["logits_processor"] = [_OutOfPlace(self._grammar_processor(request.json_schema))]
        if request.seed is not None:
            torch.manual_seed(request.seed)
        input_ids = torch.tensor([prompt], device=self.device)
        with torch.inference_mode():
            out = self.model.generate(input_ids, attention_mask=torch.ones_like(input_ids), **kwargs)
        new = out.sequences[0, len(prompt) :].tolist()
        if request.reuse_prefix:
            self._kept = (prompt + new[:-1], out.past_key_values)
        finish = "stop" if new and new[-1] in self.eos_ids else "length"
        # the output ids to text, after the last token: a stage of its own (the clock times it)
        with clock.span("detokenize"):
            text = self.tokenizer.decode(new, skip_special_tokens=True)
        return RawOutput(
            token_ids=new,
            text=text,
            finish_reason=finish,
            cached_tokens=cached,
            prompt_ids_used=prompt,
            top_candidates=self._candidates(out.logits[0][0], request.top_logprobs)
            if request.top_logprobs
            else None,
            step_logprobs=step_top(out.scores, request.step_logprobs) if request.step_logprobs else None,
        )

    def _fresh_cache(self) -> DynamicCache | None:
        """An empty cache for a request that reuses nothing (None: let generate make its own)."""
        return DynamicCache()

    def _cache_for(self, prompt: list[int]) -> tuple[DynamicCache, int]:
        """The kept cache cropped to the prefix it shares with ``prompt`` (at least one token left to run)."""
        if self._kept is None:
            return DynamicCache(), 0
        ids, cache = self._kept
        shared = min(common_prefix_len(ids, prompt), len(prompt) - 1)
        if shared <= 0:
            return DynamicCache(), 0
        remove = cache.get_seq_length() - shared
        if remove > 0:
            cache.crop(-remove)  # negative: tokens to drop (the same meaning in old and new versions)
        return cache, shared

    def _grammar_processor(self, schema: dict[str, Any]):
        import xgrammar as xgr

        key = json.dumps(schema, sort_keys=True)
        if key not in self._grammars:
            info = xgr.TokenizerInfo.from_huggingface(self.tokenizer, vocab_size=self.model.config.vocab_size)
            compiler = xgr.GrammarCompiler(info)
            # any_whitespace=False: random weights otherwise fill the budget with spaces. The schema as
            # written, not the sorted cache key: xgrammar keeps the properties' order, as the engines do.
            self._grammars[key] = compiler.compile_json_schema(json.dumps(schema), any_whitespace=False)
        return xgr.contrib.hf.LogitsProcessor(self._grammars[key])

    def _candidates(self, logits: torch.Tensor, k: int) -> list[TokenCandidate]:
        logits = logits.float()
        logprobs = torch.log_softmax(logits, dim=-1)
        top = torch.topk(logits, k)
        return [
            TokenCandidate(int(i), self.tokenizer.decode([int(i)]), float(logprobs[i]), float(v))
            for v, i in zip(top.values.tolist(), top.indices.tolist(), strict=True)
        ]

    def _attention_probe(self, request: Request, clock: TokenClock) -> RawOutput:
        """One forward pass with attention weights: the share of the last position's attention on special
        tokens."""
        prompt = request.prompt_ids
        input_ids = torch.tensor([prompt], device=self.device)
        with torch.inference_mode():
            out = self.model(input_ids, output_attentions=True, use_cache=False)
        clock.tick()
        special = torch.tensor([i in self.special_ids for i in prompt], device=self.device)
        shares = [float(layer[0, :, -1, :][:, special].sum(-1).mean()) for layer in out.attentions]
        # position 0 is an attention sink in most models: its share is recorded apart (the seed's caveat)
        first = [float(layer[0, :, -1, 0].mean()) for layer in out.attentions]
        token = int(out.logits[0, -1].argmax())
        return RawOutput(
            token_ids=[token],
            text=self.tokenizer.decode([token], skip_special_tokens=True),
            finish_reason="length",
            prompt_ids_used=prompt,
            attention_special_share=shares,
            extra={
                "special_positions": int(special.sum()),
                "position0_share": first,
                "position0_special": bool(special[0]) if len(prompt) else None,
            },
        )
