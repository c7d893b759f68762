"""Hugging Face transformers backends: ``hf`` (eager, the seed's setup) and ``hf-graphs``."""

from backends.hf.backend import HFBackend
from backends.hf.graphs import HFGraphsBackend

__all__ = ["HFBackend", "HFGraphsBackend"]
