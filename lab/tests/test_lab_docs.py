"""The lab's pages stay honest: every relative link in lab/ resolves (as tests/test_docs.py checks docs/),
the index names every page, and every figure of the sitting log is quoted from the results it links to."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_docs import LINK, anchors, assert_figures_quoted, results_sources, table_rows, text

LAB = Path(__file__).resolve().parents[1]
PAGES = sorted(p for p in LAB.rglob("*.md") if "tests" not in p.relative_to(LAB).parts)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(LAB).as_posix())
def test_every_relative_link_resolves(page: Path) -> None:
    broken = []
    for target in LINK.findall(text(page)):
        if target.startswith(("http:", "https:", "mailto:")):
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(target)
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target} (no such heading)")
    assert broken == []


def test_the_index_names_every_page() -> None:
    index = text(LAB / "README.md")
    missing = [p.name for p in LAB.glob("*.md") if p.name != "README.md" and f"]({p.name})" not in index]
    assert missing == []


def test_the_sitting_logs_figures_are_the_committed_runs() -> None:
    rows = table_rows(text(LAB / "sittings.md"))
    assert len(rows) >= 10
    assert_figures_quoted(rows, results_sources())
