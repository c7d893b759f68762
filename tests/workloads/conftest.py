"""Fixtures for the workload tests: the tiny model's renderer, and a writer for workload files."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from llm_call_anatomy.contract.chat import Renderer


@pytest.fixture(scope="session")
def renderer(tiny_model_dir: Path) -> Renderer:
    from transformers import AutoTokenizer

    return Renderer(AutoTokenizer.from_pretrained(tiny_model_dir))


@pytest.fixture
def write(tmp_path: Path) -> Callable[[str, str], Path]:
    """write(name, text) -> path of a file in tmp_path holding the dedented text."""

    def _write(name: str, text: str) -> Path:
        path = tmp_path / name
        path.write_text(textwrap.dedent(text).lstrip("\n"))
        return path

    return _write
