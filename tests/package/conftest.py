"""The package tests' wheel, built once per session from a copy of the checkout (``venvs.build_wheel``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.package.venvs import build_wheel


@pytest.fixture(scope="session")
def wheel(tmp_path_factory) -> Path:
    return build_wheel(tmp_path_factory.mktemp("wheel"))
