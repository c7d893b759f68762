"""The command line: check the arguments, plan the run, run each backend in its own process, report.

    python compare.py --backend all --model tiny --out runs/demo

The parent process renders every prompt once (tokenizer only) into ``plan.json`` and starts one
child process per backend (``python -m llm_call_anatomy.harness.child``), one after another: they each take
the GPU, and vLLM and SGLang may live in different virtual environments (``--python vllm=PATH``).

``_main`` is the run's steps in order, each a function: the flags are in harness/cli_parser.py, their
checks in harness/cli_checks.py, the workloads, the plan and env.json's run part in harness/run_plan.py,
and the children and the report in harness/backend_runs.py. Every check comes before anything runs.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import signal
import sys
from pathlib import Path

from llm_call_anatomy import backends
from llm_call_anatomy.contract.chat import CHAT_PROMPTS, NoChatTemplate, Renderer
from llm_call_anatomy.contract.files import atomic_write_text
from llm_call_anatomy.contract.plan import Plan
from llm_call_anatomy.harness import models, pace, parallel_args, prompt_timing, server_args, skips, variants
from llm_call_anatomy.harness.applied import check_applicable
from llm_call_anatomy.harness.backend_runs import run_backends
from llm_call_anatomy.harness.cli_checks import (
    UsageError,
    absolute_paths,
    check_context,
    check_numbers,
    check_out,
    check_resume,
    check_resume_settings,
    check_server_args,
    cpu_scale,
    load_tokenizer,
    parse_pythons,
)
from llm_call_anatomy.harness.cli_parser import parser
from llm_call_anatomy.harness.env import commit_provenance, merge_env, write_json
from llm_call_anatomy.harness.heartbeat import Heartbeat
from llm_call_anatomy.harness.launch import Interrupted, handlers
from llm_call_anatomy.harness.plan_summary import busy_line, machine_load, plan_lines
from llm_call_anatomy.harness.run_plan import Planned, Workloads, choose_workloads, describe_run, plan_prompts
from llm_call_anatomy.harness.rundir import RunDirBusy, claim, is_disk_full

# The workloads are imported inside the functions that use them (their specs import pydantic): the CLI's
# lazy start, so that --help, --version and a wrong argument answer without them.

ROOT = Path(__file__).resolve().parent.parent


# the settings the plan step decides (plan_prompts: the server's model name), unknown before it
PLANNED_SETTINGS = ("served_model_name",)


def to_stdout(line: str) -> None:
    """A heartbeat's line (harness.heartbeat), on stdout with the run's other progress lines: stderr keeps
    a mistake's one line (exit 2)."""
    print(line, flush=True)


def backend_settings(args: argparse.Namespace, model: models.ResolvedModel, device: str, dtype: str) -> dict:
    """The ``BackendSettings`` fields of a run (``run.json`` ``settings``); server flags where ``args`` has
    them."""
    return {
        "model_path": model.path,
        "model_label": model.label,
        "dtype": dtype,
        "device": device,
        "random_weights": args.random_weights or not model.has_weights,
        "attn": args.attn,
        "tp": args.tp,
        "max_model_len": args.max_model_len,
        "base_url": getattr(args, "base_url", None),
        "api_key_env": getattr(args, "api_key_env", None),
        "request_timeout_s": getattr(args, "request_timeout", 300.0),
        "tokenizer_path": getattr(args, "tokenizer_path", None),
        "served_model_name": getattr(args, "served_model", None),
        "endpoint": getattr(args, "endpoint", "completions"),
        "engine_args": getattr(args, "engine_args", {}),
        "client_procs": getattr(args, "client_procs", None),
        "engine_defaults": getattr(args, "engine_defaults", "matched"),
        "prefix_caching": not getattr(args, "no_prefix_caching", False),
        "dp": getattr(args, "dp", 1),
        "router": getattr(args, "router", "internal"),
    }


def resolve_model(args: argparse.Namespace) -> models.ResolvedModel:
    """--model, resolved; with --tokenizer (a server's model name is no path) the tokenizer's folder or hub id
    stands for the model's files (its config: context limit, env.json)."""
    args.tokenizer_path = server_args.tokenizer_source(args.tokenizer) if args.tokenizer else None
    try:
        return models.resolve(args.model, args.random_weights)
    except models.ModelError:
        if not args.tokenizer:
            raise
        return models.ResolvedModel(args.model, args.tokenizer_path, builtin=False, has_weights=True)


def resolve_device(device: str, dtype: str) -> tuple[str, str]:
    """``--device auto`` / ``--dtype auto`` made concrete: CUDA where torch sees a GPU, bfloat16 on it,
    float32 on a CPU."""
    if device == "auto":
        import torch

        device = "cuda" if torch.cuda.is_available() else "cpu"
    if dtype == "auto":
        dtype = "bfloat16" if device == "cuda" else "float32"
    return device, dtype


def main(argv: list[str] | None = None, prog: str = "compare.py") -> int:
    """The study's command (``prog`` names it in messages): the exit code, with one line on stderr instead of
    a traceback for bad input (2), an interrupt (128 + signal) or a full disk (1)."""
    args = parser(prog).parse_args(argv)
    try:
        return _main(args, prog)
    except (UsageError, models.ModelError) as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    except (KeyboardInterrupt, Interrupted) as exc:
        signum = exc.signum if isinstance(exc, Interrupted) else signal.SIGINT
        print(
            f"\n{prog}: interrupted ({signal.Signals(signum).name}): every process of the run was stopped "
            "and the records written so far are kept whole; rerun the same command with --resume to finish",
            file=sys.stderr,
        )
        return 128 + signum
    except OSError as exc:
        if not is_disk_full(exc):
            raise
        print(
            f"{prog}: error: the disk is full ({exc.filename or args.out}): records written so far are kept "
            "whole; free some space and rerun with --resume",
            file=sys.stderr,
        )
        return 1


def _main(args: argparse.Namespace, prog: str = "compare.py") -> int:
    """The study's steps in order: check the flags, read the workloads (``--lint-only`` stops there), choose
    the run directory, ask a server of the user's own for its models, choose the model and the device,
    render the plan, describe the run, then write the run directory and run the backends' children and the
    report in it."""
    names, pythons = check_arguments(args)
    chosen = choose_workloads(args)
    if args.lint_only:
        return lint_only(args, chosen.specs)
    out = choose_out(args, names)
    server_args.ask_server(args, names)  # a server of the user's own: its /models first, in seconds
    with Heartbeat(f"{prog}: preparing the model's tokenizer and the plan", say=to_stdout):
        model, device, dtype = choose_model(args)
        if args.resume:
            check_resume_early(args, out, model, device, dtype)
        # on a CPU, a kind's built-ins at its CPU scale (the load's would take hours); a file's as written
        if device == "cpu":
            chosen.specs = builtins_at_cpu_scale(args, chosen)
        planned = plan_prompts(args, names, chosen.specs, model)
    settings = backend_settings(args, model, device, dtype)
    commit = commit_provenance(ROOT)
    run_env = describe_run(args, out, model, device, dtype, settings, chosen, planned, commit)
    return write_and_run(args, out, names, pythons, planned, settings, run_env, prog)


def check_arguments(args: argparse.Namespace) -> tuple[list[str], dict[str, str]]:
    """The flags checked on their own (paths made absolute, numbers, server and engine flags); the backends to
    run and the interpreter of each (``--python``). ``args.engine_args`` (per column, a variant's settings on
    top: harness/variants.py) and ``args.variants`` are parsed here."""
    absolute_paths(args)
    names, chosen = variants.resolve(args, tuple(backends.REGISTRY))  # base@variant columns, --sweep's too
    pythons = parse_pythons(args.python)
    check_numbers(args)
    check_server_args(args, names)
    check_applicable(args, names)
    server_args.check_server_flags(args, names)
    by_backend = server_args.parse_engine_args(args.engine_arg, names)
    args.engine_args = variants.engine_args_by_column(by_backend, names, chosen)
    args.variants = {name: v.described() for name, v in chosen.items()}
    return names, pythons


def choose_out(args: argparse.Namespace, names: list[str]) -> Path:
    """The run directory (``--out``, default ``runs/<date-time>``), checked against ``--resume``, and the
    data-parallel flags checked against the backends and the device."""
    out = args.out or Path.cwd() / "runs" / dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    check_out(out, args.resume)
    parallel_args.check_parallel(
        args.dp, args.tp, args.router, names, resolve_device(args.device, args.dtype)[0]
    )
    return out


def choose_model(args: argparse.Namespace) -> tuple[models.ResolvedModel, str, str]:
    """The model (a word about what ``tiny`` is), the device and the dtype."""
    if args.model == models.TINY:
        print(
            "model 'tiny': a tiny Qwen3-architecture model with random weights, built here: latency plumbing "
            "only, its answers are noise. Pass --model smollm2 (a real 135M instruct model) or Qwen/Qwen3-8B "
            "for real answers."
        )
    model = resolve_model(args)
    device, dtype = resolve_device(args.device, args.dtype)
    return model, device, dtype


def builtins_at_cpu_scale(args: argparse.Namespace, chosen: Workloads) -> list:
    """The specs with each built-in workload at its kind's CPU scale; a workload file's run as written."""
    from llm_call_anatomy.workloads.catalog import BUILTIN, read_builtin

    built_in = {s.name for s in read_builtin(chosen.names if chosen.names is not None else BUILTIN)}
    return cpu_scale(chosen.specs, args, built_in)  # names are unique in a run


def write_and_run(
    args: argparse.Namespace,
    out: Path,
    names: list[str],
    pythons: dict[str, str],
    planned: Planned,
    settings: dict,
    run_env: dict,
    prog: str = "compare.py",
) -> int:
    """Claim the run directory (one writer at a time; ``--resume`` checked against what it holds), write
    plan.json, run.json and env.json, then run the backends and the report; the exit code."""
    config_hash = run_env["model"]["config_hash"]
    try:
        with claim(out) as lock_fd, handlers():
            if args.resume:
                check_resume(out, planned.plan_json, {**settings, "model_config_hash": config_hash})
            atomic_write_text(out / "plan.json", planned.plan_json)
            prompt_timing.write(out, planned.prompt_timings)
            if (
                planned.chat_prompts is not None
            ):  # --endpoint chat: the messages behind each prompt, for the server's template
                atomic_write_text(out / CHAT_PROMPTS, json.dumps(planned.chat_prompts))
            write_json(
                out / "run.json",
                {
                    "run_id": out.name,
                    "settings": settings,
                    "resume": args.resume,
                    "model_config_hash": config_hash,
                },
            )
            merge_env(out, run_env)
            skipped = say_plan(planned.plan, names, settings, pythons)  # before the first engine start
            return run_backends(args, out, names, pythons, run_env, planned.plan, lock_fd, prog, skipped)
    except RunDirBusy as exc:
        raise UsageError(str(exc)) from exc


def check_resume_early(
    args: argparse.Namespace, out: Path, model: models.ResolvedModel, device: str, dtype: str
) -> None:
    """--resume with other settings refused in seconds, before the tokenizer loads and the plan renders (the
    whole check, plan included, is made again under the run directory's lock)."""
    early = {
        **backend_settings(args, model, device, dtype),
        "model_config_hash": models.config_hash(model.path),
    }
    check_resume_settings(out, early, unknown=PLANNED_SETTINGS)


def say_plan(plan: Plan, names: list[str], settings: dict, pythons: dict[str, str]) -> dict[str, str]:
    """The plan with its counts and, where this machine ran the backends before, its time
    (harness/plan_summary.py, harness/pace.py), the backends that will be skipped named and left out of
    both (harness/skips.py); a warning where the machine is already busy. Returns those skipped (backend ->
    why)."""
    model, device = settings["model_label"], settings["device"]
    skipped = skips.foreseen(names, device, pythons)
    running = [n for n in names if n not in skipped]
    said = pace.time_line(pace.pace_path(), running, model, device, pace.plan_tokens(plan))
    print("\n".join(plan_lines(plan, names, time=said, skipped=skipped)), flush=True)
    busy = busy_line(*machine_load(), device)
    if busy:
        print(busy, flush=True)
    return skipped


def lint_only(args: argparse.Namespace, specs: list) -> int:
    """--lint-only: the prefix-stability lint with the model's tokenizer and chat template; no weights, no
    run."""
    from llm_call_anatomy.workloads import lint as prefix_lint
    from llm_call_anatomy.workloads.catalog import build_plan

    model = models.resolve(args.model, random_weights=args.random_weights or args.model == models.SHAPE)
    renderer = Renderer(load_tokenizer(args.model, model.path))
    try:
        checked = prefix_lint.check_all(specs, renderer)
        plan = build_plan(specs, renderer, repeats=1)
    except NoChatTemplate as exc:
        raise UsageError(f"--model {args.model}: {exc}") from exc
    check_context(plan, args.max_model_len, model.path)
    print(f"{len(specs)} workload(s) valid: {', '.join(s.name for s in specs)}")
    lines, code = prefix_lint.report(specs, checked)
    print("\n".join(lines))
    return code


if __name__ == "__main__":
    sys.exit(main())
