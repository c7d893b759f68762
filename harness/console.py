"""The installed command ``llm-call-anatomy`` (``[project.scripts]`` in pyproject.toml), and ``python
compare.py`` from a checkout, which routes here the same way under its own name:

    llm-call-anatomy --backend hf --model tiny --out runs/a   # the study: python compare.py --backend ...
    llm-call-anatomy report runs/a runs/b -o report.html      # python compare.py report runs/a ...
    llm-call-anatomy --version

The study's parser is harness/cli.py and the report's reports/__main__.py: this file only routes.
"""

from __future__ import annotations

import sys
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


def main(argv: list[str] | None = None, prog: str = PROG) -> int:
    """``report ...`` to the report's command, anything else to the study's (``prog``: ``llm-call-anatomy``,
    or ``compare.py`` from a checkout)."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["report"]:
        from llm_call_anatomy.reports.__main__ import main as report_main

        return report_main(argv[1:], prog=commands(prog)[1])
    from llm_call_anatomy.harness.cli import main as study_main

    return study_main(argv, prog=prog)


if __name__ == "__main__":
    sys.exit(main())
