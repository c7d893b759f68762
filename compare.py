"""The front door: ``python compare.py --backend all`` (see ``--help``; the code is harness/cli.py)."""

import sys

from llm_call_anatomy.harness.cli import main

if __name__ == "__main__":
    sys.exit(main())
