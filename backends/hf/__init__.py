"""Hugging Face transformers backends: ``hf`` (eager, the seed's setup) and ``hf-graphs``."""

from llm_call_anatomy.backends.hf.backend import HFBackend
from llm_call_anatomy.backends.hf.graphs import HFGraphsBackend

__all__ = ["HFBackend", "HFGraphsBackend"]
