"""The backends a run will skip, foreseen before the first engine starts, so the plan neither counts nor times
them (issue 43).

A backend's child process is the authority on whether it runs: it imports the adapter, starts the engine and,
where it cannot, writes one ``skipped`` record per workload with the adapter's own reason. The parent cannot
import the engines (vLLM and SGLang live in environments of their own), so the plan foresees the skips that
are facts before anything starts, from the backends' declarations (``backends.NEEDS``):

- a module the backend needs that is not installed in the interpreter that will run it, found by
  ``importlib.util.find_spec`` (nothing imported), in that interpreter: this process, or a one-line child
  process for a backend given its own ``--python``;
- a backend that runs only on a CUDA device, where the run is not on one.

The children still run and write their reasons, which the report reads. A backend this forecast passes that
then cannot start is skipped as before, only counted in the plan; an interpreter that cannot be asked
foresees nothing.
"""

from __future__ import annotations

import subprocess
import sys
from importlib import util

from llm_call_anatomy import backends
from llm_call_anatomy.backends.base import install_hint
from llm_call_anatomy.contract.columns import base_of

# asks another interpreter which of the modules named in its arguments it cannot find, importing none of them
PROBE = "import importlib.util as u, sys; print(' '.join(m for m in sys.argv[1:] if u.find_spec(m) is None))"
PROBE_TIMEOUT_S = 30.0


def interpreter(name: str, pythons: dict[str, str]) -> str:
    """The interpreter that runs a backend or a column: its own ``--python``, else its base's, else this
    one."""
    return pythons.get(name) or pythons.get(base_of(name), sys.executable)


def missing_modules(modules: tuple[str, ...], python: str) -> list[str] | None:
    """The ``modules`` that ``python`` cannot import (not installed there); None where that interpreter could
    not be asked."""
    if python == sys.executable:
        return [m for m in modules if util.find_spec(m) is None]
    try:
        done = subprocess.run(
            [python, "-c", PROBE, *modules], capture_output=True, text=True, timeout=PROBE_TIMEOUT_S
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.split() if done.returncode == 0 else None


def skip_reason(name: str, device: str, python: str) -> str | None:
    """Why ``name`` will be skipped on ``device`` under ``python``; None where nothing says it will."""
    needs = backends.needs(name)
    missing = missing_modules(needs.modules, python) if needs.modules else []
    if missing:
        where = "here" if python == sys.executable else f"in {python}"
        extra = backends.extra_of(name)
        hint = f": {needs.install}" if needs.install else (install_hint(extra) if extra else "")
        return f"not installed {where} ({', '.join(missing)}){hint}"
    if needs.cuda and device != "cuda":
        return f"runs on a CUDA GPU only (this run is on {device})"
    return None


def foreseen(names: list[str], device: str, pythons: dict[str, str]) -> dict[str, str]:
    """The backends of ``names`` that will be skipped, each with its reason, in run order."""
    reasons = {name: skip_reason(name, device, interpreter(name, pythons)) for name in names}
    return {name: why for name, why in reasons.items() if why}
