"""``hf-server``: ``transformers serve --continuous-batching``, HF's own OpenAI-compatible server,
launched and measured like ``vllm-server`` and ``sglang-server``
(:class:`backends.openai.servers.LaunchedServerBackend`).

What is its own: it loads weights from disk only, so a config-only folder (``--random-weights`` on a
shape such as ``qwen3-8b-shape``) is served from a random-weight checkpoint written once beside it
(``random_checkpoint``); its completions endpoint takes text, not token ids, and rejects unknown fields
such as ``ignore_eos``: a request that must run past EOS carries ``generation_config`` with
``eos_token_id`` -1 instead (``bodies.ignore_eos_fields``); its CLI checks PyPI for updates unless told
not to. The command and options are the same in transformers 5.17 (the H200's)
and 5.19 (``tests/fixtures/transformers_serve_5.17.0.json``).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

from llm_call_anatomy.backends.base import BackendUnavailable
from llm_call_anatomy.backends.openai import random_checkpoint
from llm_call_anatomy.backends.openai.bodies import FORMS
from llm_call_anatomy.backends.openai.servers import LaunchedServerBackend
from llm_call_anatomy.contract.adapter import Capabilities


class HFServerBackend(LaunchedServerBackend):
    """``transformers serve --continuous-batching``: HF's own server, its continuous-batching manager
    behind an OpenAI-compatible endpoint. Its ``/v1/completions`` takes a text prompt only (the
    plan's ids go decoded, ``extra.prompt_sent_as = "text"``), and it has no log-probs, grammar or
    cache report: a load-only column, like ``hf-cb``. On a CPU the KV cache is sized as ``hf-cb``
    sizes it (the automatic sizing reads the host's memory)."""

    name = "hf-server"
    engine_module = "transformers"
    # transformers[serving]: what transformers serve itself checks for (``is_serve_available``, the same in
    # 5.17 and 5.19)
    needs = ("fastapi", "uvicorn", "openai", "pydantic")
    ignore_eos_by = "generation_config"  # the field its completions and chat handlers read (5.17, 5.19)

    def __init__(self, settings) -> None:
        super().__init__(settings)
        self.capabilities = Capabilities(
            load=True, batches_requests=True, single_requests=False, over_http=True
        )
        self.serve_path: Path | None = None  # a random-weight checkpoint of a config-only folder
        self.checkpoint_s: float | None = None

    def environment(self) -> dict[str, Any]:
        env = super().environment()
        if self.serve_path is not None:
            env["random_checkpoint"] = {"path": str(self.serve_path), "written_s": self.checkpoint_s}
        return env

    def start(self) -> None:
        missing = [m for m in self.needs if importlib.util.find_spec(m) is None]
        if missing:
            raise BackendUnavailable(
                f"transformers serve needs {', '.join(missing)} in {sys.executable} "
                "(pip install 'transformers[serving]')"
            )
        s = self.settings
        # transformers serve loads weights from disk only: a config-only folder gets a random-weight
        # checkpoint
        if s.random_weights and not random_checkpoint.has_weights(s.model_path):
            self.serve_path, self.checkpoint_s = random_checkpoint.ensure(s.model_path, s.dtype, s.device)
        super().start()

    def server_argv(self, port: int) -> list[str]:
        """``transformers serve MODEL --continuous-batching`` on 127.0.0.1:``port`` (the random checkpoint
        where one was written); on a CPU with the KV cache sized as ``hf-cb`` sizes it."""
        # late: backends.hf.cb imports torch and transformers, which driving a server needs neither of
        from llm_call_anatomy.backends.hf.cb import CPU_BATCH_TOKENS, CPU_CACHE_TOKENS

        s = self.settings
        argv = [
            sys.executable,
            "-m",
            "transformers.cli.transformers",
            "serve",
            str(self.serve_path or s.model_path),
            "--continuous-batching",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--dtype",
            s.dtype,
            "--device",
            s.device,
        ]
        if s.device == "cpu":
            argv += [
                "--cb-block-size",
                "256",
                "--cb-num-blocks",
                str(CPU_CACHE_TOKENS // 256),
                "--cb-max-batch-tokens",
                str(CPU_BATCH_TOKENS),
            ]
        return argv

    def server_env(self) -> dict[str, str]:
        # its CLI asks PyPI for a newer transformers at start (huggingface_hub's check_cli_update): not
        # offline
        return {**super().server_env(), "HF_HUB_DISABLE_UPDATE_CHECK": "1"}

    def _served_model(self) -> str:
        # its /v1/models lists the hub cache: the model is named by the path it was started with
        return self.options.served_model or str(self.serve_path or self.settings.model_path)

    def _connect(self) -> None:
        super()._connect()
        self.form, self._form_locked = (
            len(FORMS) - 1,
            True,
        )  # text: its completions endpoint rejects token ids (422)


__all__ = ["HFServerBackend"]
