"""The OpenAI-compatible backends' own settings (``settings.options``), beyond the command line's.

Neither has a flag: they are for callers that build the settings themselves (tests, benchmarks).
"""

from __future__ import annotations

from dataclasses import dataclass

from llm_call_anatomy.contract.adapter import BackendOptions


@dataclass(frozen=True)
class OpenAIOptions(BackendOptions):
    """None: not given (the served model found from the server's listing or the launch; the start
    timeout from ``LCA_SERVER_START_TIMEOUT`` or the default)."""

    served_model: str | None = None  # the model name to ask for, where ``served_model_name`` is not set
    server_start_timeout_s: float | None = None  # a launched server: how long to wait for it to answer
