"""The front door from a checkout: ``python compare.py --backend all`` runs the study (see ``--help``; the
parser is harness/cli.py) and ``python compare.py report RUNS -o page.html`` builds a report
(reports/__main__.py). It routes exactly as the installed command ``llm-call-anatomy`` does
(harness/console.py), under its own name."""

import sys

from llm_call_anatomy.harness.console import main

if __name__ == "__main__":
    sys.exit(main(prog="compare.py"))
