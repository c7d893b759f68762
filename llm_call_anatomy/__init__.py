"""llm-call-anatomy, the one package the wheel puts on ``sys.path`` (issue 38: no generic top-level names).

Installed, the five layers live inside it: ``llm_call_anatomy/contract``, ``backends``, ``workloads``,
``reports``, ``harness`` (pyproject.toml's ``package-dir`` maps each to its folder of the checkout). In a
checkout they stay at the top level the project promised (``backends/``, ``workloads/``, ``reports/``...),
and this file adds the checkout's root to its own ``__path__`` where its folder has no ``contract/``, so
``llm_call_anatomy.reports`` is ``<checkout>/reports`` there. Every import names the package
(``from llm_call_anatomy.reports.gate import compare``), in the product, the tests, the lab and the docs;
``tests/test_namespace.py`` refuses a bare ``import reports``.

``HOME`` is the folder that holds this package (the checkout, or site-packages): a child process started
with ``python -m llm_call_anatomy...`` imports it from there.
"""

from __future__ import annotations

from pathlib import Path

LAYERS = ("contract", "backends", "workloads", "reports", "harness")
HOME = Path(__file__).resolve().parent.parent

if not (Path(__file__).parent / "contract").is_dir():  # a checkout: the layers are beside this folder
    __path__.append(str(HOME))
