"""vLLM backend: the offline engine (``vllm.LLM``) in the child process, automatic prefix caching,
XGrammar structured outputs. Importing this package does not import vLLM (``start()`` does, after
setting the engine's environment variables)."""

from llm_call_anatomy.backends.vllm.backend import VLLMBackend

__all__ = ["VLLMBackend"]
