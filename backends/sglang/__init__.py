"""SGLang backend: ``sglang`` (offline ``sglang.Engine`` in process, RadixAttention, XGrammar).

Importing this package never imports sglang (CI tests the pure parts without it); constructing
:class:`SGLangBackend` does, and raises ``BackendUnavailable`` where sglang is not installed.
"""

from llm_call_anatomy.backends.sglang.backend import SGLangBackend

__all__ = ["SGLangBackend"]
