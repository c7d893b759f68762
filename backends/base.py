"""The small interface every backend adapter implements, and the one timing loop.

An adapter (``backends/<name>/``) subclasses :class:`Backend`, declares what it can do as
typed :class:`Capabilities`, and implements :meth:`Backend._generate`: run one request and
return a :class:`RawOutput`. It never times anything itself: it ticks the :class:`TokenClock`
it is handed as tokens become available to it, and :meth:`Backend.generate` is the only place
where wall-clock timing happens:

    with SomeBackend(settings) as backend:          # start() ... close()
        result = backend.generate(Request(prompt_ids=[...], max_new_tokens=64))
        result.ttft_ms, result.decode_ms_per_token, result.timing_source

One TTFT for all backends (:data:`TTFT_DEFINITION`): taken at the caller, from the clock's ticks.
What a tick means per backend (``clock_source``): ``cuda-sync`` (HF on a GPU: device synchronized
at each tick), ``wall-clock`` (HF on a CPU), ``engine-step`` (vLLM: the adapter drives the engine
step by step), ``in-process-stream`` (SGLang ``stream=True``), ``client-stream`` (HTTP streaming).
Where no token is ticked, ``max_tokens-differential``: the request run once with one new token and
once in full; TTFT = e2e(1), decode = (e2e(n) - e2e(1)) / (n - 1).

The engine's own per-request figures (vLLM's and SGLang's timestamps, a server's /metrics) are
kept beside the common ones as ``engine_ttft_ms`` / ``engine_decode_ms_per_token``; they never
stand in for them.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from llm_call_anatomy.backends.answer_checks import check_answer
from llm_call_anatomy.contract.adapter import (
    BackendOptions,
    BackendSettings,
    Capabilities,
    RawOutput,
    Request,
)
from llm_call_anatomy.contract.docs import DIST

__all__ = [
    "DECODE_DEFINITION",
    "ENGINE_DECODE_DEFINITION",
    "ENGINE_TTFT_DEFINITION",
    "TIMING_DEFINITIONS",
    "TTFT_DEFINITION",
    "Backend",
    "BackendUnavailable",
    "Result",
    "TokenClock",
    "install_hint",
]

TTFT_DEFINITION = (
    "TTFT at the caller: from submitting the request (after the untimed cache reset and a device "
    "synchronization) to the first generated token being available to the calling code, the device "
    "synchronized where it applies; the same definition for every backend"
)
DECODE_DEFINITION = (
    "decode at the caller: (time the last token is available - time the first token is available) "
    "/ (output tokens - 1)"
)
ENGINE_TTFT_DEFINITION = (
    "the engine's own TTFT for the same request, by its internal clocks (vLLM: arrival in the engine "
    "to the first token out of the engine core; SGLang: request received by the tokenizer manager to "
    "the first token sampled; a server's /metrics); not comparable across engines"
)
ENGINE_DECODE_DEFINITION = "the engine's own decode ms/token for the same request, by its internal clocks"
TIMING_DEFINITIONS = {
    "ttft_ms": TTFT_DEFINITION,
    "decode_ms_per_token": DECODE_DEFINITION,
    "engine_ttft_ms": ENGINE_TTFT_DEFINITION,
    "engine_decode_ms_per_token": ENGINE_DECODE_DEFINITION,
}


@dataclass
class Result:
    """A timed request: the adapter's output plus the figures of the one timing loop."""

    output: RawOutput
    ttft_ms: float | None  # TTFT_DEFINITION
    decode_ms_per_token: float | None  # DECODE_DEFINITION
    e2e_ms: float
    timing_source: str
    cache_state: str
    last_token_ms: float | None = None  # submit -> the last token available (the clock's last tick)
    spans_ms: dict[str, float] = field(default_factory=dict)  # TokenClock.span: e.g. "detokenize"

    @property
    def engine_ttft_ms(self) -> float | None:
        return self.output.engine_ttft_ms

    @property
    def engine_decode_ms_per_token(self) -> float | None:
        return self.output.engine_decode_ms_per_token


class TokenClock:
    """Stamps token arrivals; adapters call :meth:`tick` as tokens come out of the engine."""

    def __init__(self, synchronize) -> None:
        self._synchronize = synchronize
        self.start = time.perf_counter()
        self.stamps: list[tuple[float, int]] = []  # (time, number of new tokens)
        self.served_at: float | None = None  # under load, behind a queue: when the request's turn came
        self.spans_ms: dict[str, float] = {}  # name -> ms spent inside span(name), added up

    @contextmanager
    def span(self, name: str):
        """Time a stage the adapter runs itself (``with clock.span("detokenize"): text = decode(ids)``): the
        adapter marks where, the clock times it (added up when a span repeats);
        docs/explanation/anatomy.md."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.spans_ms[name] = self.spans_ms.get(name, 0.0) + (time.perf_counter() - start) * 1e3

    def tick(self, new_tokens: int = 1, at: float | None = None) -> None:
        """``new_tokens`` arrived now, or at ``at`` (``perf_counter``: a stream read whose tokens are parsed
        after it came in is stamped when it came in)."""
        self._synchronize()
        self.stamps.append((time.perf_counter() if at is None else at, new_tokens))

    def ttft_ms(self) -> float | None:
        return (self.stamps[0][0] - self.start) * 1e3 if self.stamps else None

    def last_token_ms(self) -> float | None:
        """From the start to the last tick (the last token available to the caller); None: nothing ticked."""
        return (self.stamps[-1][0] - self.start) * 1e3 if self.stamps else None

    def tokens_ticked(self) -> int | None:
        """The tokens ticked so far (a server's stream: its chunks with text); None where nothing ticked."""
        return sum(n for _, n in self.stamps) or None

    def decode_ms_per_token(self) -> float | None:
        """Time after the first token divided by the tokens that came after it."""
        if len(self.stamps) < 2:
            return None
        later = sum(n for _, n in self.stamps[1:])
        return (self.stamps[-1][0] - self.stamps[0][0]) * 1e3 / later if later else None


class Backend(ABC):
    """Lifecycle: ``start()`` -> ``generate()``... -> ``close()`` (or use it as a context manager)."""

    name: str = "base"
    capabilities: Capabilities = Capabilities()
    clock_source: str = "wall-clock"  # what TokenClock ticks mean for this backend
    differential_timing: bool = False  # no engine metrics and no token clock: time twice
    options_type: type[BackendOptions] = BackendOptions  # this backend's own settings (``settings.options``)

    def __init__(self, settings: BackendSettings) -> None:
        self.settings = settings
        self.options = self.options_type.of(settings.options)  # ``settings.options`` read as options_type

    # -- lifecycle ------------------------------------------------------------------------
    def start(self) -> None:  # noqa: B027 - optional hook
        """Load the model / start the engine. Not timed."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Free the device."""

    def __enter__(self) -> Backend:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- what adapters implement ---------------------------------------------------------
    @abstractmethod
    def _generate(self, request: Request, clock: TokenClock) -> RawOutput:
        """Run one request. Tick ``clock`` as tokens arrive if the engine streams them."""

    def reset_cache(self) -> None:  # noqa: B027 - optional hook
        """Drop every reusable prefix (no-op where there is no cache)."""

    def synchronize(self) -> None:  # noqa: B027 - optional hook
        """Wait for the device (HF on CUDA); engines that return finished requests need nothing."""

    def version(self) -> str | None:
        return None

    def environment(self) -> dict[str, Any]:
        """Engine facts for env.json (versions, effective engine config)."""
        return {}

    def identity(self) -> dict[str, Any]:
        """What must be the same for a resume (or a later engine start) to add to this run's records: the
        engine's version; a server adds what it serves (its model, kind and version)."""
        return {"version": self.version()}

    def kv_cache_tokens(self) -> tuple[int | None, str]:
        """KV-cache capacity in tokens for env.json, and where it came from (or why None)."""
        return None, "not reported by this backend"

    def why_not(self, capability: str) -> str | None:
        """Why this backend lacks ``capability`` where something installable would give it, the end of the
        skip record's reason (``hf does not support grammar`` + `` without xgrammar (...): pip install ...``);
        None where it lacks it whatever is installed."""
        return None

    def max_running(self) -> tuple[int | None, str]:
        """The most requests the engine runs at once, as its scheduler is configured (vLLM ``max_num_seqs``,
        SGLang ``max_running_requests``; over every data-parallel replica), and the setting's name; (None,
        why) where it is not known. The capacity search goes no higher in a closed loop (a concurrency above
        it only queues inside the engine), and the page says so."""
        return None, "not reported by this backend"

    # -- under load (backends.load_loop runs the loop) ---------------------------------------
    async def stream(self, request: Request, clock: TokenClock) -> RawOutput:
        """One request among many in flight, ticking ``clock`` as tokens arrive. This default serves
        them one at a time, in arrival order, on one worker thread (a FIFO queue in front of
        ``_generate``); engines that batch requests override it."""
        import asyncio

        if getattr(self, "_queue", None) is None:
            from concurrent.futures import ThreadPoolExecutor

            self._queue = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"{self.name}-queue")

        def serve() -> RawOutput:
            clock.served_at = time.perf_counter()
            clock._synchronize = self.synchronize
            return self._generate(request, clock)

        return await asyncio.get_running_loop().run_in_executor(self._queue, serve)

    def latency_snapshot(self) -> Any:
        """The server's latency histograms now (an HTTP server's /metrics), or None: none to read."""
        return None

    def latency_diff(self, before: Any, after: Any) -> dict[str, Any]:
        """The server's own latency percentiles between two snapshots
        (``backends.openai.metrics.level_timings``)."""
        return {}

    def server_gone(self) -> str | None:
        """Why the server is gone (a launched one that exited: its exit and log), None if it is not known to
        be. A level driven from client processes asks it once its requests failed: they saw only a lost
        connection."""
        return None

    def load_client(self):
        """A picklable spec (``.build()`` -> an object with ``async stream(request, clock)`` and
        ``async aclose()``) that client processes use to drive this backend under load, or None: the level
        runs in this process. HTTP servers return one (``backends.openai.lean_stream``), so no client shares a
        core with the harness."""
        return None

    def run_async(self, coroutine):
        """Run a load level's coroutine to the end (engines with their own event loop override this)."""
        import asyncio

        return asyncio.run(coroutine)

    def load_stats(self) -> dict[str, float]:
        """Engine figures under load, where the engine reports them: ``*_total`` counters (the level
        takes their difference) and ``*_now`` gauges (the level keeps their peak)."""
        return {}

    # -- the engine called directly (optional; benchmarks/ measure the adapter against it) ------
    raw_call: str | None = None  # what raw_generate_timed() runs, in words; None: no raw engine call here
    batch_call: str | None = None  # what engine_batch() runs, in words; None: no batched engine call here
    no_batch_call: str = "no batched engine call in this process"  # why not, where batch_call is None

    def raw_generate_timed(
        self, prompt_ids: list[int], max_new_tokens: int
    ) -> tuple[float | None, float | None, float]:
        """The engine's own call on ``prompt_ids`` (greedy, EOS ignored), without the adapter, timed at the
        caller as the adapter is: (TTFT ms, decode ms per token, e2e ms). ``benchmarks/overhead.py`` compares
        it with :meth:`generate`; only where :attr:`raw_call` says what it runs."""
        raise NotImplementedError(f"{self.name} has no raw engine call")

    def engine_batch(self, prompts: list[list[int]], request: Request) -> list[int]:
        """The engine's own batched call on ``prompts`` with ``request``'s sampling (its ``prompt_ids``
        unused): the output tokens of each prompt. ``benchmarks/load_ceiling.py`` compares it with the load
        loop; only where :attr:`batch_call` says what it runs."""
        raise NotImplementedError(f"{self.name}: {self.no_batch_call}")

    # -- the one timing loop --------------------------------------------------------------
    def generate(self, request: Request) -> Result:
        """Run ``request`` once, timed by the caller's clock: TTFT, decode, the last token and the adapter's
        spans from the clock's ticks, else the max_tokens differential, else the end-to-end only."""
        cache_state = "reuse-allowed" if request.reuse_prefix else "reset-before-request"
        if not request.reuse_prefix:
            self.reset_cache()  # outside the timed region
        output, clock, e2e_ms = self._timed(request)
        check_answer(request, output, clock.tokens_ticked())  # a claim that contradicts the request: an error

        if clock.stamps:
            ttft, decode, source = clock.ttft_ms(), clock.decode_ms_per_token(), self.clock_source
        elif self.differential_timing and not request.reuse_prefix:
            ttft, decode = self._differential(request, e2e_ms, output.output_tokens)
            source = "max_tokens-differential"
        else:
            ttft, decode, source = None, None, "e2e-only"
        last = clock.last_token_ms() if clock.stamps else None
        return Result(output, ttft, decode, e2e_ms, source, cache_state, last, dict(clock.spans_ms))

    def _timed(self, request: Request) -> tuple[RawOutput, TokenClock, float]:
        self.synchronize()
        clock = TokenClock(self.synchronize)
        output = self._generate(request, clock)
        self.synchronize()
        e2e_ms = (time.perf_counter() - clock.start) * 1e3
        return output, clock, e2e_ms

    def _differential(self, request: Request, e2e_ms: float, n_tokens: int) -> tuple[float, float | None]:
        self.reset_cache()
        probe = replace(request, max_new_tokens=1, top_logprobs=0, step_logprobs=0)
        _, _, first_ms = self._timed(probe)
        decode = (e2e_ms - first_ms) / (n_tokens - 1) if n_tokens > 1 else None
        return first_ms, decode


class BackendUnavailable(RuntimeError):
    """Raised by an adapter's import or start when it cannot run here; becomes a ``skipped`` record."""


def install_hint(extra: str, exc: BaseException | None = None) -> str:
    """``: pip install 'llm-call-anatomy[EXTRA]'``, the end of an unavailable backend's message, where ``exc``
    (when given) is a dependency that is missing: a ``ModuleNotFoundError`` of a module not the project's own
    (a version clash, a broken build or a broken install of this package is not fixed by the extra); else
    ``""``. The extra is the backend's package folder (pyproject.toml: registry key = module = extra)."""
    if exc is not None:
        missing = exc.name if isinstance(exc, ModuleNotFoundError) else None
        if not missing or missing.split(".")[0] == "llm_call_anatomy":
            return ""
    return f": pip install '{DIST}[{extra}]'"
