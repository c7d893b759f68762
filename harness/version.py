"""What the tool is called and which version it is: the distribution's name, the study's and the report's
commands as the user typed them, the version. A leaf (nothing of the project imported): the router
(``harness.console``), the study's parser (``harness.cli_parser``) and its closing messages
(``harness.backend_runs``) all read it, and none of them imports another for it.
"""

from __future__ import annotations

import tomllib
from importlib import metadata
from pathlib import Path

PROG = "llm-call-anatomy"
DIST = "llm-call-anatomy"


def commands(prog: str) -> tuple[str, str]:
    """The study's and the report's commands as the user typed them, for messages and ``--help``: ``python
    compare.py`` and ``python compare.py report`` from a checkout, ``llm-call-anatomy`` and ``llm-call-anatomy
    report`` installed (``prog``: the study's parser's, ``compare.py`` or ``llm-call-anatomy``)."""
    if prog == "compare.py":
        return "python compare.py", "python compare.py report"
    return prog, f"{prog} report"


def version() -> str:
    """The installed distribution's version; in a checkout that is not installed, pyproject.toml's."""
    try:
        return metadata.version(DIST)
    except metadata.PackageNotFoundError:
        pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
        try:
            return tomllib.loads(pyproject.read_text())["project"]["version"]
        except (OSError, KeyError, tomllib.TOMLDecodeError):
            return "unknown"
