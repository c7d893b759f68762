"""What one extra enables, checked in the venv it runs in (#43); run by ``tests/package/test_extras_alone.py``
with a fresh venv's interpreter, never imported by the tests (the checkout is not on its path).

    python -I extra_check.py openai               # openai's backends are available here: exit 0, else 1
    python -I extra_check.py --without hf openai  # each is missing here, and says which extra to install

An extra's backends are the registry's entries whose package folder it is named after
(``backends.extra_of``: ``hf-server`` is openai's); each must resolve, construct, lack no capability that
something installable would give it (``Backend.why_not``), and every module of its package must import.
The extras without a backend are checked by what they are for: ``report`` builds the report of ``RUN``
(``--run``), ``smollm2`` and ``qwen3`` build their built-in model's folder in a new model cache. Each prints
one line per problem; ``--without`` passes when each extra has at least one and all of them name the extra
(the product's own messages: a skipped backend's, the report's, the model builders').
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import os
import pkgutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from llm_call_anatomy import backends
from llm_call_anatomy.contract.adapter import BackendSettings, Capabilities

CAPABILITIES = tuple(Capabilities.__dataclass_fields__)


# --- the checks: each returns its problems, one line each ------------------------------------------------
def backends_of(extra: str, modules: bool) -> list[str]:
    """The extra's backends resolve and construct, and lack nothing installable; with ``modules``, every
    module of their package imports too (what a run reaches later: the load client, the server launchers)."""
    names = [n for n in backends.REGISTRY if backends.extra_of(n) == extra]
    assert names, f"no backend of the extra {extra!r} in the registry"
    settings = BackendSettings(
        model_path="-", model_label="-", device="cpu", base_url="http://127.0.0.1:9/v1"
    )
    problems = []
    for name in names:
        try:
            backend = backends.resolve(name)(settings)
        except backends.BackendUnavailable as exc:
            problems.append(str(exc))
            continue
        problems += [
            f"{name} does not support {c} {why}"
            for c in CAPABILITIES
            if (why := backend.why_not(c)) is not None
        ]
    if modules and not problems:
        package = f"llm_call_anatomy.backends.{extra}"
        for info in pkgutil.walk_packages(importlib.import_module(package).__path__, f"{package}."):
            try:
                importlib.import_module(info.name)
            except ImportError as exc:
                problems.append(f"{info.name}: {type(exc).__name__}: {exc}")
    return problems


def check_hf(run: Path | None, positive: bool) -> list[str]:
    return backends_of("hf", positive)


def check_openai(run: Path | None, positive: bool) -> list[str]:
    problems = backends_of("openai", positive)
    if positive and not problems:
        from llm_call_anatomy.backends.openai import json_codec

        codec = json_codec.choose()  # the extra declares orjson for the load client's speed
        if not codec.name.startswith("orjson"):
            problems.append(f"the load client's JSON codec is {codec.name}, not orjson")
    return problems


def check_report(run: Path | None, positive: bool) -> list[str]:
    from llm_call_anatomy.harness.backend_runs import build_report

    said = io.StringIO()
    with contextlib.redirect_stderr(said):
        built = build_report(run)
    page = run / "report.html"
    if built and page.is_file() and page.stat().st_size > 0:
        return []
    return [said.getvalue().strip() or "no report.html and nothing said"]


def model_check(build: Callable[[], Path]) -> list[str]:
    from llm_call_anatomy.harness.models import ModelError

    try:
        folder = build()
    except ModelError as exc:
        return [str(exc)]
    return [] if (folder / "config.json").is_file() else [f"{folder}: no config.json"]


def check_smollm2(run: Path | None, positive: bool) -> list[str]:
    from llm_call_anatomy.harness.models import build_smollm2

    return model_check(build_smollm2)


def check_qwen3(run: Path | None, positive: bool) -> list[str]:
    from llm_call_anatomy.harness.models import build_shape

    return model_check(build_shape)


CHECKS: dict[str, Callable[[Path | None, bool], list[str]]] = {
    "hf": check_hf,
    "openai": check_openai,
    "report": check_report,
    "smollm2": check_smollm2,
    "qwen3": check_qwen3,
}


def names_extra(line: str, extra: str) -> bool:
    """The line says which extra to install: ``pip install 'llm-call-anatomy[hf]'``, ``report extra``, or
    ``the project's 'qwen3' extra``."""
    return any(s in line for s in (f"[{extra}]'", f"the {extra} extra", f"'{extra}' extra"))


# --- main -----------------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("extras", nargs="+", choices=sorted(CHECKS))
    parser.add_argument("--without", action="store_true", help="each extra is missing here and says so")
    parser.add_argument("--run", type=Path, help="the run directory the report check builds a page of")
    args = parser.parse_args(argv)
    failed = False
    for extra in args.extras:
        with tempfile.TemporaryDirectory(prefix="lca-cache-") as cache:
            os.environ["LCA_CACHE"] = cache  # every built-in model is built anew, here
            problems = CHECKS[extra](args.run, not args.without)
        for line in problems:
            print(f"[{extra}] {line}")
        if args.without:
            ok = bool(problems) and all(names_extra(line, extra) for line in problems)
            print(f"[{extra}] {'missing, and it says which extra to install' if ok else 'NOT as expected'}")
        else:
            ok = not problems
            print(f"[{extra}] {'available' if ok else 'NOT available'}")
        failed |= not ok
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
