"""What the harness and a backend adapter exchange: the request, the adapter's raw output, its
capabilities and its settings (with each backend's own options).

The harness builds a :class:`Request` (prompt token ids, rendered once for every backend) from
each plan step and hands it to ``backends.base.Backend.generate``; the adapter returns a
:class:`RawOutput`, which the one timing loop wraps with its figures. :class:`Capabilities` are
typed flags a workload's steps name in ``Step.needs``; a backend that lacks one gets a ``skipped``
record. :class:`SettingsApplied` says which of the run's recorded settings a backend's engine is
configured by (the registry declares one per backend: ``backends.APPLIES``). :class:`BackendSettings`
are what the command line gives every adapter; a backend with settings of its own declares a
:class:`BackendOptions` subclass beside its adapter (the harness never looks inside). Every layer imports
these names from here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, Self


@dataclass(frozen=True)
class Capabilities:
    """What a backend can do; a workload that needs a missing one records ``skipped``."""

    prefix_cache: bool = False  # reuses the KV of a shared prompt prefix
    reports_cached_tokens: bool = False  # says how many prompt tokens it served from cache
    resets_cache: bool = False  # can drop every cached prefix on demand
    grammar: bool = False  # JSON-schema constrained decoding
    logprobs: bool = False  # step-0 top-k candidates
    attentions: bool = False  # per-layer attention weights (eager attention in process)
    load: bool = False  # runs a load level: many requests submitted at once (backends.load_loop)
    batches_requests: bool = False  # requests in flight share engine steps (False: one at a time, queued)
    single_requests: bool = (
        True  # times one request at a time (the batch-1 workloads); False: a load-only column
    )
    over_http: bool = False  # requests go to a server over HTTP: the caller's process is only its client


@dataclass(frozen=True)
class SettingsApplied:
    """Which of the run's recorded engine settings (:class:`BackendSettings` fields of the same names) a
    backend applies to what it measures: the engine it starts is configured by them (or, ``client_procs``, its
    client). A server someone else started applies none of the engine's (its dtype, parallelism, context and
    prefix cache are its own). A setting asked that
    a chosen backend does not apply is refused before anything runs, or, where the harness itself uses it
    (the prompts' context limit), recorded as asked and not applied (``harness.applied``): a record never
    says an engine ran with a setting it did not."""

    dtype: bool = False  # --dtype
    device: bool = False  # --device
    random_weights: bool = False  # --random-weights: the engine loads random weights
    attn: bool = False  # --attn: HF's attention implementation
    tp: bool = False  # --tp
    dp: bool = False  # --dp: the engine's own data parallelism
    router: bool = False  # --router: SGLang's router in front of the replicas
    max_model_len: bool = False  # --max-model-len: the engine (or its cache) is sized to it
    prefix_caching: bool = False  # --no-prefix-caching switches its prefix cache off
    engine_defaults: bool = False  # --engine-defaults: vLLM's scheduler settings
    client_procs: bool = False  # --client-procs: a load level driven from client processes (over HTTP)

    def applies(self, setting: str) -> bool:
        return bool(getattr(self, setting))

    def not_applied(self) -> tuple[str, ...]:
        """The settings this backend does not apply, in field order."""
        return tuple(f.name for f in fields(self) if not getattr(self, f.name))


@dataclass(frozen=True)
class BackendOptions:
    """A backend's own settings beyond the command line's: none here. An adapter with some subclasses
    this with defaulted fields (``backends.sglang.config.SGLangOptions``...) and names it as its
    ``Backend.options_type``; in run.json they are a KEY: value mapping (``to_dict`` / ``from_dict``)."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any] | None) -> Self:
        """The fields of ``cls`` named in ``raw``; other keys are another backend's (an old run.json held
        one flat ``options`` dict for every backend), so they are left out."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in (raw or {}).items() if k in names})

    @classmethod
    def of(cls, options: BackendOptions) -> Self:
        """``options`` as ``cls``: themselves, or their fields read by name (the defaults from plain
        :class:`BackendOptions`, which generic code builds)."""
        return options if isinstance(options, cls) else cls.from_dict(options.to_dict())


@dataclass(frozen=True)
class BackendSettings:
    """Everything an adapter may need from the command line; each reads only its own part."""

    model_path: str  # a local directory (tiny and shape models are materialised by the harness)
    model_label: str  # what the user passed (``tiny``, ``Qwen/Qwen3-8B``...), for records
    dtype: str = "bfloat16"
    device: str = "cuda"
    random_weights: bool = False
    attn: str = "eager"  # HF attention implementation
    tp: int = 1
    dp: int = 1  # --dp: the engine's data-parallel replicas (each on tp GPUs)
    # --router: the engine's own balancer, or SGLang's router policy (cache_aware, round_robin)
    router: str = "internal"
    max_model_len: int = 4096
    run_dir: str | None = None  # where server logs go
    base_url: str | None = None
    api_key_env: str | None = None
    request_timeout_s: float = 300.0
    tokenizer_path: str | None = (
        None  # --tokenizer: the prompts' tokenizer when not the model's (a server's name)
    )
    served_model_name: str | None = None  # --served-model-name: the name to ask a server for
    endpoint: str = (
        "completions"  # --endpoint: completions (token ids) or chat (messages, the server's template)
    )
    engine_args: dict[str, Any] = field(
        default_factory=dict
    )  # --engine-arg BACKEND:KEY=VALUE, this backend's
    client_procs: int | None = None  # load on a server: client processes per level (None: automatic)
    engine_defaults: str = "matched"  # "matched": the same scheduler settings in process and as server; "own"
    prefix_caching: bool = (
        True  # False: the engine's prefix cache off (--no-prefix-caching), for caching off vs on
    )
    options: BackendOptions = field(default_factory=BackendOptions)  # its own (Backend.options_type)
    column: str | None = None  # the run's column (base@variant, issue 41): its server log's name

    def to_dict(self) -> dict[str, Any]:
        """The fields as run.json's ``settings`` hold them (``options`` as a KEY: value mapping)."""
        return {**asdict(self), "options": self.options.to_dict()}

    @classmethod
    def from_dict(
        cls, raw: Mapping[str, Any], options_type: type[BackendOptions] = BackendOptions
    ) -> BackendSettings:
        """Settings from run.json's ``settings`` (fields it lacks take their defaults: an older run), with
        ``options`` read as ``options_type``."""
        return cls(**{**raw, "options": options_type.from_dict(raw.get("options"))})

    def with_options(
        self, options_type: type[BackendOptions], raw: Mapping[str, Any] | None
    ) -> BackendSettings:
        """These settings with ``raw`` (run.json's ``options``) read as ``options_type``."""
        return replace(self, options=options_type.from_dict(raw))


@dataclass(frozen=True)
class Request:
    """One generation request, always as token ids (rendered once by the harness)."""

    prompt_ids: list[int]
    max_new_tokens: int
    temperature: float = 0.0
    top_p: float = 1.0
    ignore_eos: bool = False
    json_schema: dict[str, Any] | None = None
    top_logprobs: int = 0  # >0: return the step-0 top-k candidates
    step_logprobs: int = 0  # >0: the top-k log-probs at every generated step (agreement margins at T=0)
    reuse_prefix: bool = False  # False: the cache is reset before the request (not timed)
    seed: int | None = None
    want_attentions: bool = False


@dataclass
class TokenCandidate:
    token_id: int
    text: str
    logprob: float | None = None
    logit: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"token_id": self.token_id, "text": self.text, "logprob": self.logprob, "logit": self.logit}


@dataclass
class RawOutput:
    """What an adapter returns for one request; ``None`` means "not reported", never zero."""

    token_ids: list[int]
    text: str
    finish_reason: str | None = None  # "stop" | "length"
    cached_tokens: int | None = None
    prompt_ids_used: list[int] | None = None  # the ids the engine saw, when it tells
    engine_ttft_ms: float | None = None
    engine_decode_ms_per_token: float | None = None
    top_candidates: list[TokenCandidate] | None = None
    # per generated step, the top-k as [token_id, logprob] pairs, best first (Request.step_logprobs);
    # token_id None where a server names a candidate by a text that is not exactly one token
    step_logprobs: list[list[list]] | None = None
    attention_special_share: list[float] | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    # how many tokens the engine says it generated, where ``token_ids`` are not its own (a server that
    # streams text only: the text re-tokenized need not have as many); None: ``len(token_ids)``
    reported_output_tokens: int | None = None
    reported_prompt_tokens: int | None = (
        None  # the prompt tokens the server says it got (usage), where it says
    )
    prompt_as_text: bool = (
        False  # the prompt went as text (the server tokenized it again), not as the plan's ids
    )

    @property
    def output_tokens(self) -> int:
        return self.reported_output_tokens if self.reported_output_tokens is not None else len(self.token_ids)
