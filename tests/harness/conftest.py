"""Fixtures for the harness tests: an empty model cache (a build's checks must leave nothing in it) and
Qwen3's real tokenizer for ``qwen3-8b-shape`` with tiktoken's encoding on the same ranks."""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_call_anatomy.harness import models
from llm_call_anatomy.harness import qwen3_tokenizer as qt

# the Qwen3 tokenizer tests' module mark: they need the pinned package that holds Qwen3's ranks
needs_qwen3_tokenizer = pytest.mark.skipif(
    qt.util.find_spec(qt.MODULE) is None,
    reason=f"{qt.PACKAGE} is not installed here (make install installs it)",
)


@pytest.fixture
def empty_cache(tmp_path, monkeypatch) -> Path:
    """LCA_CACHE pointed at a folder that does not exist yet."""
    monkeypatch.setenv("LCA_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def assert_nothing_written(cache: Path) -> None:
    assert not cache.exists() or not any(cache.iterdir()), list(cache.iterdir())


@pytest.fixture(scope="module")
def shape_dir() -> Path:
    """The ``qwen3-8b-shape`` folder (random weights), built once per module."""
    return Path(models.resolve(models.SHAPE, random_weights=True).path)


@pytest.fixture(scope="module")
def qwen3_tokenizer(shape_dir):
    """Qwen3's tokenizer, as transformers loads it from the ``qwen3-8b-shape`` folder."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(shape_dir)


@pytest.fixture(scope="module")
def tiktoken_reference():
    """tiktoken's encoding on Qwen3's ranks and pattern, the ids to agree with."""
    return qt.reference_encoding(qt.load_ranks(qt.locate_ranks()))
