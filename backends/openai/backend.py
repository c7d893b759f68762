"""``openai``: any OpenAI-compatible server, through the ``openai`` client, streaming.

Requests go to the **completions** endpoint with the plan's token ids as the prompt
(``prompt=[ids...]``), so the server sees exactly the tokens every other backend sees;
chat/completions would render the messages again with the server's own chat template. A
generic server that rejects token-id prompts gets the ids decoded to text instead (recorded
as ``extra.prompt_sent_as = "text"``).

Per request: ``stream=True`` with ``stream_options={"include_usage": True}``; the token clock
ticks at every chunk that carries tokens (TTFT and decode ms/token seen by the client,
``timing_source = "client-stream"``); ``cached_tokens`` from
``usage.prompt_tokens_details.cached_tokens`` (None when the server does not say);
``response_format={"type": "json_schema", ...}`` for constrained decoding; ``logprobs=k`` for
the step-0 candidates. vLLM and SGLang also get ``return_token_ids`` (the generated ids and
the prompt ids the server saw) and ``ignore_eos``; ``transformers serve`` its own equivalent
(``generation_config``, bodies.py). Where the server exports Prometheus ``/metrics``, its own TTFT /
prefill / decode for the same request go into ``extra`` (``server_*`` fields, see metrics.py). A server
whose prefix cache cannot be dropped (``resets_cache`` False) records ``cache_state = "not-controllable"``.

``--endpoint chat`` (``settings.endpoint``) sends each prompt's messages (``RUN_DIR/chat_prompts.json``,
written by the harness from the same workloads) to **chat/completions** instead: the server renders them
with its own chat template, so its prompt tokens need not be the plan's (recorded as
``extra.prompt_sent_as = "chat-messages"``, ``extra.chat_template = "the server's"``); cached tokens
come from the same usage field, output token ids where the server returns them (vLLM's
``return_token_ids``), else the text re-tokenized (``extra.output_ids_from``); step-0 candidates are
not asked for (``logprobs`` off: chat's log-prob shape differs), so those steps record ``skipped``.

The API key is read from the variable named by ``--api-key-env`` and lives only in the
client: it is never written to records, env.json, logs or the report.

This class holds the adapter's state and lifecycle; its pieces: ``bodies.py`` / ``chat.py`` (the request
bodies), ``streamed_call.py`` (one streamed call and its timeout), ``stream.py`` (reading the chunks),
``server_http.py`` (the server's own endpoints: kind, version, cache reset), ``server_facts.py`` and
``metrics.py`` (what its /metrics says).
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import openai

from llm_call_anatomy.backends.base import Backend, BackendUnavailable, Result, TokenClock
from llm_call_anatomy.backends.openai import server_facts, streamed_call
from llm_call_anatomy.backends.openai.bodies import FORMS, IgnoreEosVia, completions_body
from llm_call_anatomy.backends.openai.chat import chat_body
from llm_call_anatomy.backends.openai.lean_stream import LeanClientSpec
from llm_call_anatomy.backends.openai.metrics import FLAVORS, MetricsProbe, level_timings
from llm_call_anatomy.backends.openai.options import OpenAIOptions
from llm_call_anatomy.backends.openai.server_http import ServerHTTP, root_url
from llm_call_anatomy.contract.adapter import Capabilities, RawOutput, Request
from llm_call_anatomy.contract.chat import CHAT_PROMPTS, prompt_key


class OpenAIBackend(Backend):
    name = "openai"
    clock_source = "client-stream"
    options_type = OpenAIOptions
    no_batch_call = "a server: the engine's batched call lives in the server's process, not in this one"
    flavor: str | None = None  # "vllm" / "sglang" when known (launched servers); else detected
    ignore_eos_by: IgnoreEosVia | None = None  # a server's own field for it (hf-server: "generation_config")

    def __init__(self, settings) -> None:
        super().__init__(settings)
        self.capabilities = Capabilities(
            prefix_cache=True,
            reports_cached_tokens=True,
            grammar=True,
            logprobs=True,
            load=True,
            batches_requests=True,
            over_http=True,
        )
        self.base_url = settings.base_url
        self.client: openai.OpenAI | None = None
        self.served_model: str | None = None
        self.server_version: str | None = None
        self.metrics: MetricsProbe | None = None
        self.form = 0
        self._form_locked = False  # set once a request succeeded in the current form
        self._reset_ok = False
        self._headers: dict[str, str] = {}
        self.notes: list[str] = []
        self._async: tuple[Any, openai.AsyncOpenAI] | None = None  # (event loop, client) under load

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        if not self.base_url:
            raise BackendUnavailable("--backend openai needs --base-url (e.g. http://127.0.0.1:8000/v1)")
        self._connect()

    def _connect(self) -> None:
        """Client, tokenizer, served model, server kind, /metrics and cache control."""
        from transformers import AutoTokenizer

        key = self._api_key()
        self._headers = {"Authorization": f"Bearer {key}"} if key != "EMPTY" else {}
        self.root = root_url(self.base_url)
        self.http = ServerHTTP(self.root, self._headers)
        timeout = self.settings.request_timeout_s
        self.client = openai.OpenAI(base_url=self.base_url, api_key=key, timeout=timeout, max_retries=0)
        self.tokenizer = AutoTokenizer.from_pretrained(
            self.settings.tokenizer_path or self.settings.model_path
        )
        self.chat_prompts = self._chat_prompts() if self.chat else None
        if self.chat:
            self.capabilities = replace(self.capabilities, logprobs=False)
        self.served_model = self._served_model()
        self.metrics, metrics_flavor = server_facts.find_metrics(self.root, self._headers, self.flavor)
        if self.metrics is None:
            self.notes.append("no engine latency histograms at /metrics: server-side timing not recorded")
        self.flavor = self.flavor or metrics_flavor or self.http.flavor()
        self.server_version = self.http.version(self.flavor)
        self._form_locked = self.flavor in FLAVORS  # vLLM and SGLang take token ids and the extensions
        self._reset_ok = self._reset()
        self.capabilities = replace(self.capabilities, resets_cache=self._reset_ok)

    @property
    def chat(self) -> bool:
        return self.settings.endpoint == "chat"

    def _chat_prompts(self) -> dict[str, dict[str, Any]]:
        path = Path(self.settings.run_dir or ".") / CHAT_PROMPTS
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise RuntimeError(f"--endpoint chat: cannot read the prompts' messages ({path}: {exc})") from exc

    def _api_key(self) -> str:
        var = self.settings.api_key_env
        if not var:
            return "EMPTY"
        key = os.environ.get(var)
        if not key:
            raise BackendUnavailable(f"--api-key-env {var}: that environment variable is not set")
        return key

    def _served_model(self) -> str:
        wanted = self.settings.served_model_name or self.options.served_model
        if wanted:  # checked against the server's listing before the run (harness/server_args.py)
            return wanted
        try:
            ids = [m.id for m in self.client.models.list().data]
        except openai.APIError as exc:
            raise RuntimeError(
                f"cannot list the models at {self.base_url}: {type(exc).__name__}: {exc}"
            ) from exc
        for candidate in (self.settings.model_label, self.settings.model_path):
            if candidate in ids:
                return candidate
        if not ids:
            raise RuntimeError(f"{self.base_url}/models lists no model")
        return ids[0]

    def close(self) -> None:
        if self.client is not None:
            self.client.close()

    def version(self) -> str | None:
        return self.server_version

    def identity(self) -> dict[str, Any]:
        """A different model, server kind or version behind the same --base-url is another column, not a
        resume."""
        return {
            "served_model": self.served_model,
            "server_kind": self.flavor,
            "server_version": self.server_version,
        }

    def environment(self) -> dict[str, Any]:
        """env.json's facts of the server and of how it was asked (endpoint, request form, timeouts, the key's
        variable name, never its value)."""
        return {
            "base_url": self.base_url,
            "endpoint": (
                "chat/completions, streamed, messages: the server applies its own chat template"
                if self.chat
                else "completions, streamed, prompt as token ids"
            ),
            "tokenizer": self.settings.tokenizer_path or self.settings.model_path,
            "served_model": self.served_model,
            "server_kind": self.flavor,
            "server_version": self.server_version,
            "request_form": FORMS[self.form],
            "ignore_eos_via": self.ignore_eos_via,
            "server_metrics": self.metrics.url if self.metrics else None,
            "resets_cache": self.capabilities.resets_cache,
            "request_timeout_s": self.settings.request_timeout_s,
            "api_key_env": self.settings.api_key_env,  # the variable's name, never its value
            "openai_client": openai.__version__,
            "scheduler": self.scheduler(),
            "notes": self.notes,
        }

    @property
    def ignore_eos_via(self) -> IgnoreEosVia | None:
        """How the server is told to run past EOS (``bodies.ignore_eos_fields``): its own field, else vLLM's
        and SGLang's ``ignore_eos`` where their extensions go; None: not told (its answers may end at EOS)."""
        return self._ignore_eos_via(FORMS[self.form])

    def _ignore_eos_via(self, form: str) -> IgnoreEosVia | None:
        if self.ignore_eos_by is not None:
            return self.ignore_eos_by
        extensions = self.flavor in FLAVORS if self.chat else form == FORMS[0]
        return "ignore_eos" if extensions else None

    # -- cache control -----------------------------------------------------------------------
    def reset_cache(self) -> None:
        if self.capabilities.resets_cache:
            self._reset_ok = self._reset()

    def _reset(self) -> bool:
        return self.http.reset_prefix_cache(self.flavor, self.name)

    # -- one request ---------------------------------------------------------------------------
    def generate(self, request: Request) -> Result:
        """The base timing loop, plus the server's own figures (scraped outside the timed region)."""
        self._check_server()
        while True:
            before = self.metrics.scrape() if self.metrics else None
            try:
                result = super().generate(request)
                break
            except openai.BadRequestError as exc:
                if not self._downgrade(request, exc):
                    raise
        self._form_locked = True
        if before is not None:
            timing = self.metrics.request_timing(before, len(result.output.token_ids))
            if timing["server_timing_source"] is None:
                self._check_server(wait_s=1.0)  # a scrape that fails may mean the server just died
            result.output.extra.update(timing)
            # the server's own figures for this request, beside the client's (the record's engine_* fields)
            result.output.engine_ttft_ms = timing.get("server_ttft_ms")
            result.output.engine_decode_ms_per_token = timing.get("server_decode_ms_per_token")
        if not request.reuse_prefix and not self._reset_ok:
            result.cache_state = "not-controllable"
        return result

    def _check_server(self, wait_s: float = 0.0) -> None:
        """Raise a clear error when the server is known to be gone (launched servers override this)."""

    def _downgrade(self, request: Request, exc: Exception) -> bool:
        if (
            self.chat
            or self._form_locked
            or self.form == len(FORMS) - 1
            or request.json_schema
            or request.top_logprobs
        ):
            return False
        self.notes.append(
            f"{FORMS[self.form]} rejected ({str(exc)[:200]}); now sending {FORMS[self.form + 1]}"
        )
        self.form += 1
        return True

    def _generate(self, request: Request, clock: TokenClock) -> RawOutput:
        """One streamed request; ``--request-timeout`` bounds the whole of it (``StreamedCalls.call``)."""
        body = self._body(request, FORMS[self.form])
        out = self._calls().call(self.client, body, request, clock)
        self._describe(out)
        return out

    def _calls(self) -> streamed_call.StreamedCalls:
        """What this adapter's streamed calls share (endpoint, tokenizer, ``--request-timeout``, the server
        check), read at each call as the calls read them."""
        return streamed_call.StreamedCalls(
            chat=self.chat,
            tokenizer=self.tokenizer,
            timeout_s=self.settings.request_timeout_s,
            check_server=self._check_server,
        )

    def _describe(self, out: RawOutput) -> None:
        """How the prompt went out. Chat messages and text are tokenized by the server, so its prompt-token
        count is a note, not a contradiction (``backends.answer_checks``); token ids must match exactly."""
        if self.chat:
            out.prompt_as_text = True
            out.extra.update(
                prompt_sent_as="chat-messages", chat_template="the server's", request_form="chat"
            )
            return
        out.prompt_as_text = FORMS[self.form] == "text"
        out.extra["prompt_sent_as"] = "text" if out.prompt_as_text else "token_ids"
        out.extra["request_form"] = FORMS[self.form]

    # -- under load ----------------------------------------------------------------------------
    async def stream(self, request: Request, clock: TokenClock) -> RawOutput:
        """One request among many in flight, through one ``AsyncOpenAI`` client (one per event loop:
        a load level runs in its own loop), streamed and timed like :meth:`_generate`. Only where
        :meth:`load_client` is None (a server that takes text prompts only); else client processes drive
        it."""
        import asyncio

        loop = asyncio.get_running_loop()
        if self._async is None or self._async[0] is not loop:
            key = self._api_key()
            client = openai.AsyncOpenAI(
                base_url=self.base_url, api_key=key, timeout=self.settings.request_timeout_s, max_retries=0
            )
            self._async = (loop, client)
        self._check_server()
        body = self._body(request, FORMS[self.form])
        out = await self._calls().call_async(self._async[1], body, request, clock)
        self._describe(out)
        return out

    def latency_snapshot(self):
        """Its /metrics latency histograms (buckets, sum, count), for the level's server-side percentiles."""
        return server_facts.latency_histograms(self.metrics)

    def latency_diff(self, before, after) -> dict[str, Any]:
        return level_timings(before, after)

    def kv_cache_tokens(self) -> tuple[int | None, str]:
        return server_facts.kv_cache_tokens(self.metrics)

    def max_running(self) -> tuple[int | None, str]:
        """What the server says of its limit on requests running at once (SGLang's /get_server_info
        ``max_running_requests``; vLLM's /metrics does not say it)."""
        return server_facts.max_running(self.scheduler())

    def scheduler(self) -> dict[str, Any]:
        """What the server says of its scheduler and KV cache, for env.json (``server_facts.scheduler``)."""
        return server_facts.scheduler(self.metrics, self.http, self.flavor)

    def server_gone(self) -> str | None:
        try:
            self._check_server(wait_s=1.0)
        except Exception as exc:  # noqa: BLE001 - ServerExited (launched servers): its message names the exit and log
            return f"{type(exc).__name__}: {exc}"
        return None

    def load_client(self):
        """Under load the server is driven by lean client processes (``lean_stream``,
        ``backends.load_shards``) sending token-id prompts; a generic server that only takes text keeps the
        ``openai`` client here."""
        if FORMS[self.form] == "text":
            return None
        try:
            self._check_server()
        except Exception:  # noqa: BLE001 - a launched server that exited: the per-request path names it in each error
            return None
        return LeanClientSpec(
            base_url=self.base_url,
            model=self.served_model,
            headers=dict(self._headers),
            flavor=self.flavor if FORMS[self.form] == FORMS[0] else None,
            timeout_s=self.settings.request_timeout_s,
        )

    def run_async(self, coroutine):
        """A load level in its own event loop; its client is closed in that loop when the level ends."""
        import asyncio

        async def level():
            try:
                return await coroutine
            finally:
                if self._async is not None:
                    await self._async[1].close()
                    self._async = None

        return asyncio.run(level())

    def load_stats(self) -> dict[str, float]:
        """The server's own gauges and counters at /metrics (vLLM: KV-cache usage, preemptions, prefix-cache
        hits)."""
        return server_facts.gauges(self.metrics)

    def _body(self, request: Request, form: str) -> dict[str, Any]:
        if self.chat:
            return self._chat_body(request)
        return completions_body(
            request, form, self.served_model, self.flavor, self.tokenizer, self._ignore_eos_via(form)
        )

    def _chat_body(self, request: Request) -> dict[str, Any]:
        chat = (self.chat_prompts or {}).get(prompt_key(request.prompt_ids))
        if chat is None:
            raise RuntimeError(
                "--endpoint chat: this prompt was not rendered from messages (raw text or exact ids)"
            )
        return chat_body(request, chat, self.served_model, self.flavor, self.ignore_eos_via)
