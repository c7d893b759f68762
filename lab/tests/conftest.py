"""The lab's tests: they check the finished H200 sittings, their scripts and the committed example runs
(lab/), not the product. Run from the repository root with ``python -m pytest lab/tests`` (.ci/run does, as
a step after ``make test``, which collects tests/ only). The environment and fixtures are tests/'s."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # `pytest lab/tests` without `python -m` too

from llm_call_anatomy.contract.chat import Renderer
from tests.conftest import tiny_model_dir  # noqa: F401  (LCA_CACHE, OMP_NUM_THREADS, SIGINT; a fixture)


@pytest.fixture(scope="session")
def renderer(tiny_model_dir: Path) -> Renderer:  # noqa: F811
    from transformers import AutoTokenizer

    return Renderer(AutoTokenizer.from_pretrained(tiny_model_dir))
