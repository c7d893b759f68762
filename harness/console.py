"""The installed command ``llm-call-anatomy`` (``[project.scripts]`` in pyproject.toml):

    llm-call-anatomy --backend hf --model tiny --out runs/a   # the study: the arguments of python compare.py
    llm-call-anatomy report runs/a runs/b -o report.html      # python -m reports
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


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["report"]:
        from reports.__main__ import main as report_main

        return report_main(argv[1:], prog=f"{PROG} report")
    from harness.cli import main as study_main

    return study_main(argv, prog=PROG)


if __name__ == "__main__":
    sys.exit(main())
