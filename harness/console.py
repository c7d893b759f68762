"""The installed command ``llm-call-anatomy`` (``[project.scripts]`` in pyproject.toml), and ``python
compare.py`` from a checkout, which routes here the same way under its own name:

    llm-call-anatomy --backend hf --model tiny --out runs/a   # the study: python compare.py --backend ...
    llm-call-anatomy report runs/a runs/b -o report.html      # python compare.py report runs/a ...
    llm-call-anatomy --version

The study's parser is harness/cli.py and the report's reports/__main__.py: this file only routes. What the
commands are called and the version: ``harness.version``.
"""

from __future__ import annotations

import sys

from llm_call_anatomy.harness.version import PROG, commands


def main(argv: list[str] | None = None, prog: str = PROG) -> int:
    """``report ...`` to the report's command, anything else to the study's (``prog``: ``llm-call-anatomy``,
    or ``compare.py`` from a checkout)."""
    argv = sys.argv[1:] if argv is None else argv
    # each command is imported only when routed to (a lazy start): the report's needs the report extra
    # (pandas, altair), the study's imports the harness and the workloads
    if argv[:1] == ["report"]:
        from llm_call_anatomy.reports.__main__ import main as report_main

        return report_main(argv[1:], prog=commands(prog)[1])
    from llm_call_anatomy.harness.cli import main as study_main

    return study_main(argv, prog=prog)


if __name__ == "__main__":
    sys.exit(main())
