"""Fixtures for the report tests: copies of the recorded runs (see fixtures/README.md)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.reports.records import FIXTURES, RUNS


@pytest.fixture
def recorded_runs(tmp_path: Path) -> list[Path]:
    """Copies of the recorded runs (tests may add records to them)."""
    out = []
    for name in RUNS:
        dst = tmp_path / name
        shutil.copytree(FIXTURES / name, dst)
        out.append(dst)
    return out
