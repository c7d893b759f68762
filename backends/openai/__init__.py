"""OpenAI-compatible serving: ``openai`` (any server at ``--base-url``) and, in ``servers``, the
``vllm-server`` / ``sglang-server`` backends that launch the engine's own server first."""

from llm_call_anatomy.backends.openai.backend import OpenAIBackend

__all__ = ["OpenAIBackend"]
