"""Where a page of the docs is, for ``--help``, messages and the report page: one place builds every link.

The wheel carries no ``docs/`` folder, so "see docs/explanation/capacity.md" points nowhere for an installed
user. A link is built from the project's URLs (pyproject's ``[project.urls]``, read back from the installed
metadata as ``Project-URL``: ``Documentation``, else ``Repository`` + ``/blob/main``):
``doc("explanation/capacity.md")`` is ``https://…/docs/explanation/capacity.md``. A page is named by its place
under docs/ (``start/``, ``guides/``, ``reference/``, ``explanation/``). From a checkout, where ``docs/`` sits
beside the packages, it stays the relative path a reader can open; with neither, the path says where it lives
(the source repository).
"""

from __future__ import annotations

import functools
from importlib import metadata
from pathlib import Path

DIST = "llm-call-anatomy"
CHECKOUT_DOCS = Path(__file__).resolve().parent.parent / "docs"


@functools.cache
def base_url() -> str | None:
    """The docs' folder as a URL, from the installed project's metadata; None where it names none."""
    try:
        urls = metadata.metadata(DIST).get_all("Project-URL") or []
    except metadata.PackageNotFoundError:
        return None
    named = {}
    for entry in urls:
        label, _, url = entry.partition(",")
        named[label.strip().lower()] = url.strip().rstrip("/")
    if named.get("documentation"):
        return named["documentation"]
    if named.get("repository"):
        return named["repository"] + "/blob/main/docs"
    return None


def doc(page: str) -> str:
    """A docs page (``"explanation/capacity.md"``, ``"explanation/methodology.md#a-busy-machine"``)
    as a reader can open it here."""
    if CHECKOUT_DOCS.is_dir():
        return f"docs/{page}"
    url = base_url()
    return f"{url}/{page}" if url else f"docs/{page} in the project's source repository"
