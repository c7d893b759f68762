"""The command line's argument checks: each raises ``UsageError`` with one line saying what is wrong
(``harness.cli.main`` prints it after ``compare.py: error:`` and exits 2), before anything runs.

Kept apart from ``harness.cli`` (the parser, the plan and the run) so that the checks can be read in
one place: backends and interpreters, numbers, --base-url / --api-key-env, --out and --resume,
each kind's override options (--load, --json-calls...) and --slo, the model's tokenizer, the context limit
and --client-procs.
"""

from __future__ import annotations

import argparse
import json
import os
import urllib.parse
from pathlib import Path
from typing import Any

from llm_call_anatomy import backends
from llm_call_anatomy.backends.load_shards import client_procs_error
from llm_call_anatomy.contract.columns import NAME, base_of, split_column
from llm_call_anatomy.contract.options import parse_slo
from llm_call_anatomy.contract.price import parse_price, price_from
from llm_call_anatomy.contract.records import RECORDS
from llm_call_anatomy.harness import limits, secrets
from llm_call_anatomy.harness.env import sha
from llm_call_anatomy.harness.rundir import settings_diff

# The workloads (and harness.load_runner, which reads the kinds' registry) are imported inside the functions
# that use them (the specs import pydantic): the CLI's lazy start, so that --help, --version and a wrong
# argument answer without them.


class UsageError(ValueError):
    """Bad input: reported after ``compare.py: error:`` (one line; a workload file lists each mistake), exit
    code 2."""


def parse_backends(text: str) -> list[str]:
    """``--backend``'s columns: registered backends, ``all``, and ``base@variant`` (a named configuration of
    a registered backend, harness/variants.py: whether the variant is defined is checked there)."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    out: list[str] = []
    for name in names:
        base, variant = split_column(name)
        if name == "all":
            out += backends.ALL
        elif base in backends.REGISTRY and (variant is None or NAME.match(variant)):
            out.append(name)
        elif base in backends.REGISTRY:
            raise UsageError(
                f"--backend {name}: {variant!r} is no variant name (letters, digits and . _ = + -)"
            )
        else:
            raise UsageError(
                f"unknown backend {base!r}"
                + (f" in {name!r}" if variant is not None else "")
                + f" (choose from: all, {', '.join(backends.REGISTRY)})"
            )
    if not out:
        raise UsageError("--backend names no backend")
    return list(dict.fromkeys(out))


def check_at_least(*bounds: tuple[str, int | None, int]) -> None:
    """Each ``(flag, value, least)``: ``UsageError`` for the first value given (not None) below its least
    (the study's numbers here, ``benchmarks/load_ceiling.py``'s too)."""
    for flag, value, least in bounds:
        if value is not None and value < least:
            raise UsageError(f"{flag} must be at least {least} (got {value})")


def check_numbers(args: argparse.Namespace) -> None:
    check_at_least(
        ("--repeats", args.repeats, 1),
        ("--starts", args.starts, 1),
        ("--json-calls", args.json_calls, 1),
        ("--tp", args.tp, 1),
        ("--max-model-len", args.max_model_len, 2),
    )
    if not args.request_timeout > 0:
        raise UsageError(
            f"--request-timeout must be a positive number of seconds (got {args.request_timeout:g})"
        )


def check_server_args(args: argparse.Namespace, names: list[str]) -> None:
    """--base-url and --api-key-env: checked before anything runs (a backend that needs them errs in its
    child)."""
    # adapters of a server someone else started
    external = [n for n in names if base_of(n) in backends.EXTERNAL]
    if external and not args.base_url:
        raise UsageError(f"--backend {external[0]} needs --base-url, e.g. http://127.0.0.1:8000/v1")
    if args.api_key_env is not None:
        problem = secrets.check_key_var(args.api_key_env)
        if problem:
            raise UsageError(problem)
        if external and not os.environ.get(args.api_key_env):
            raise UsageError(f"--api-key-env {args.api_key_env}: that environment variable is not set")
    if args.base_url:
        problem = secrets.check_url(args.base_url)
        if problem:
            raise UsageError(problem)
        url = urllib.parse.urlsplit(args.base_url)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise UsageError(
                "--base-url must be an http:// or https:// URL with a host, e.g. http://127.0.0.1:8000/v1"
            )


def parse_pythons(items: list[str]) -> dict[str, str]:
    pythons = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep or name not in backends.REGISTRY:
            raise UsageError(f"--python {item!r}: expected BACKEND=PATH with a known backend")
        if not Path(path).is_file():
            raise UsageError(f"--python {item!r}: no such interpreter")
        pythons[name] = os.path.abspath(
            path
        )  # not resolve(): a venv's python is a symlink that must stay one
    return pythons


def absolute_paths(args: argparse.Namespace) -> None:
    """Every path argument against the caller's directory, before anything is written: the children run
    elsewhere (in the checkout, or in site-packages when installed) and get absolute paths only."""
    if args.out is not None:
        args.out = Path(os.path.abspath(args.out.expanduser()))
    args.workload_file = [os.path.abspath(Path(f).expanduser()) for f in args.workload_file]


def check_out(out: Path, resume: bool) -> None:
    """What can be said about --out before anything is built (it is created and locked later, in
    claim_out)."""
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out}: exists and is not a directory")
    if (out / RECORDS).exists() and not resume:
        raise UsageError(
            f"--out {out} already holds a run: pass --resume to continue it, or choose another --out"
        )


def check_resume(out: Path, plan_json: str, measuring: dict) -> None:
    """--resume: the same plan and the same measuring settings as the run in ``out``, or one line saying what
    differs."""
    plan_path = out / "plan.json"
    if plan_path.exists() and sha(plan_path.read_text()) != sha(plan_json):
        raise UsageError(
            f"--resume: the plan in {out} differs from this command's "
            "(workloads, repeats, starts or model changed)"
        )
    check_resume_settings(out, measuring)


def check_resume_settings(out: Path, measuring: dict, unknown: tuple[str, ...] = ()) -> None:
    """--resume: the measuring settings against the run's in ``out`` (``run.json``), those in ``unknown``
    left out (not known yet): the check that needs no plan, made before the tokenizer loads and the plan is
    rendered, so that a resume with other settings is refused in seconds."""
    try:
        old = json.loads((out / "run.json").read_text())
    except (OSError, ValueError):
        return  # killed before run.json was written: nothing ran with other settings
    previous = {
        **old.get("settings", {}),
        **({"model_config_hash": old["model_config_hash"]} if "model_config_hash" in old else {}),
    }
    if unknown:
        previous = {k: v for k, v in previous.items() if k not in unknown}
        measuring = {k: v for k, v in measuring.items() if k not in unknown}
    differs = settings_diff(previous, measuring)
    if differs:
        raise UsageError(
            f"--resume: {out} was run with other settings ({'; '.join(differs)}); resume with the same "
            "settings, or choose another --out"
        )


def override_values(args: argparse.Namespace) -> dict[str, Any]:
    """The value of every kind's override option (``workloads.kinds.Override``) as given, None where not."""
    from llm_call_anatomy.workloads.overrides import options

    return {o.option: getattr(args, o.dest, None) for o in options()}


def apply_overrides(specs: list, args: argparse.Namespace) -> list:
    """Each kind's override options (--load, --json-calls, ...) on its workloads, checked like a workload
    file."""
    from llm_call_anatomy.workloads import overrides

    try:
        return overrides.apply(specs, override_values(args))
    except ValueError as exc:
        raise UsageError(str(exc)) from exc


def apply_repeats(specs: list, args: argparse.Namespace) -> list:
    """``--repeats R`` given: each kind's grid with a count of its own (``Override.repeats_field``) capped at
    R where its option was not given; one line each on what changed."""
    from llm_call_anatomy.workloads import overrides

    specs, notes = overrides.repeats_caps(specs, override_values(args), args.repeats)
    for note in notes:
        print(note)
    return specs


def cpu_scale(specs: list, args: argparse.Namespace, builtin: set[str]) -> list:
    """On a CPU: the built-ins of a kind with a CPU default at that scale, unless its option was given."""
    from llm_call_anatomy.workloads import overrides

    specs, notes = overrides.cpu_defaults(specs, override_values(args), builtin)
    for note in notes:
        print(note)
    return specs


def apply_slo(specs: list, slo: list[str] | None) -> tuple[list, dict | None, list[str]]:
    """--slo (repeatable): the specs (each workload with a ``search_targets`` field, a load, searching for the
    targets unless its file names its own), the goodput pair older reports read, and the targets in --slo
    syntax."""
    try:
        targets, pair = parse_slo(slo or None)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    chosen = [t.spec() for t in targets]
    specs = [
        s.model_copy(update={"search_targets": chosen})
        if "search_targets" in type(s).model_fields and (slo or s.search_targets is None)
        else s
        for s in specs
    ]
    return specs, pair, chosen


def gpu_hour_usd(text: str) -> float | list[float]:
    """``--gpu-hour-usd``'s argparse type: one number kept as the number it always was (its sign checked by
    :func:`check_price`, one line as before), or a range ``LO-HI`` (``contract.price``) kept as env.json
    records it, ``[LO, HI]``; any other text is argparse's error (exit 2)."""
    try:
        return float(text)
    except ValueError:
        pass
    try:
        return parse_price(text).recorded()
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def check_price(price: float | list[float] | None) -> None:
    if isinstance(price, list):  # a range: checked as it was read (gpu_hour_usd)
        if price_from(price) is None:
            raise UsageError(f"--gpu-hour-usd must be a positive price range LO-HI (got {price})")
    elif price is not None and not (price > 0 and price != float("inf")):
        raise UsageError(f"--gpu-hour-usd must be a positive price in dollars per GPU-hour (got {price:g})")


def check_context(plan, max_model_len: int, model_path: str) -> None:
    """Every prompt plus its new tokens fits --max-model-len and the model's positions."""
    too_long = limits.context_error(plan, max_model_len, limits.model_positions(model_path))
    if too_long:
        raise UsageError(too_long)


def check_client_procs(n: int | None, plan) -> None:
    """``--client-procs`` must be 1.. the sessions of the smallest load level (exit 2 before anything
    runs)."""
    from llm_call_anatomy.harness.load_runner import sessions_of

    levels = [len(sessions_of(g.steps)) for g in plan.groups if g.load is not None and not g.warmup]
    problem = client_procs_error(n, min(levels)) if levels else client_procs_error(n, n or 1)
    if problem:
        raise UsageError(problem)


def load_tokenizer(label: str, path: str, flag: str = "--model"):
    """The model's tokenizer (with its chat template), or one clear line about why not."""
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(path)
    except (OSError, ValueError) as exc:
        lines = str(exc).strip().splitlines() or [type(exc).__name__]
        raise UsageError(f"{flag} {label}: cannot load its tokenizer ({lines[0]})") from exc
