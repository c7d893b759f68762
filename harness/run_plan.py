"""What the parent decides before any backend runs: the workloads, every prompt rendered once, and
env.json's run part.

harness/cli.py calls these steps in order (see ``_main``): :func:`choose_workloads` (the files and the
CLI overrides), :func:`plan_prompts` (the tokenizer renders the plan; the checks that need it) and
:func:`describe_run` (the run-level facts the report's environment card shows). Each check raises
:class:`~harness.cli_checks.UsageError` (exit 2) before anything runs.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from dataclasses import dataclass, field
from pathlib import Path

from llm_call_anatomy.backends.base import TIMING_DEFINITIONS
from llm_call_anatomy.contract.chat import NoChatTemplate, Renderer
from llm_call_anatomy.contract.models import DTYPE_BYTES
from llm_call_anatomy.contract.plan import Plan
from llm_call_anatomy.harness import models, prompt_timing, server_args
from llm_call_anatomy.harness.applied import not_applied
from llm_call_anatomy.harness.chat import tokenizer_facts
from llm_call_anatomy.harness.cli_checks import (
    UsageError,
    apply_overrides,
    apply_repeats,
    apply_slo,
    check_client_procs,
    check_context,
    check_price,
    load_tokenizer,
    parse_backends,
)
from llm_call_anatomy.harness.env import sha
from llm_call_anatomy.workloads.plan import ORDER_DESCRIPTION
from llm_call_anatomy.workloads.seed import TEMPLATE_FIRST_PROMPT

# The workloads are imported inside the functions that use them (their specs import pydantic): the CLI's
# lazy start, so that --help, --version and a wrong argument answer without them.


@dataclass
class Workloads:
    """The run's workloads after every CLI override: the names asked for (None: all the built-ins), their
    specs, and the ``--slo`` targets (env.json ``slo``, ``slo_targets``)."""

    names: list[str] | None
    specs: list
    slo: dict | None
    slo_targets: list[str]


@dataclass
class Planned:
    """Every prompt of the run rendered once: the plan (and the JSON written to plan.json), the renderer that
    rendered it, the prefix-stability findings, and the messages behind each prompt (``--endpoint chat``)."""

    plan: Plan
    plan_json: str
    renderer: Renderer
    stability: dict
    chat_prompts: dict | None
    prompt_timings: dict = field(default_factory=dict)  # harness.prompt_timing: written beside plan.json


def choose_workloads(args: argparse.Namespace) -> Workloads:
    """``--workloads`` / ``--workload-file`` read and checked, then ``--json-*``, ``--load`` and ``--slo``
    applied."""
    from llm_call_anatomy.workloads.catalog import BUILTIN, read_workloads
    from llm_call_anatomy.workloads.reader import WorkloadFileError

    workload_names = args.workloads.split(",") if args.workloads else ([] if args.workload_file else None)
    try:
        specs = read_workloads(workload_names if workload_names is not None else BUILTIN, args.workload_file)
    except WorkloadFileError as exc:
        raise UsageError(str(exc)) from exc
    specs = apply_overrides(specs, args)
    if getattr(args, "repeats_given", False):  # --repeats R: small for every workload, a grid of its own too
        specs = apply_repeats(specs, args)
    specs, slo, slo_targets = apply_slo(specs, args.slo)
    check_price(args.gpu_hour_usd)
    return Workloads(workload_names, specs, slo, slo_targets)


def plan_prompts(
    args: argparse.Namespace, names: list[str], specs: list, model: models.ResolvedModel
) -> Planned:
    """The plan rendered with the run's tokenizer and chat template, checked against the context limit, the
    chat endpoint and ``--client-procs``; a turn that breaks the prefix is reported on stderr (the run goes
    on)."""
    from llm_call_anatomy.workloads import lint as prefix_lint
    from llm_call_anatomy.workloads.catalog import build_plan

    tokenizer = (
        load_tokenizer(args.tokenizer, args.tokenizer_path, flag="--tokenizer")
        if args.tokenizer
        else load_tokenizer(args.model, model.path)
    )
    renderer = Renderer(tokenizer)
    try:
        plan = build_plan(specs, renderer, args.repeats, args.starts)
        stability = prefix_lint.check_all(specs, renderer)
    except NoChatTemplate as exc:
        raise UsageError(f"--model {args.model}: {exc}") from exc
    check_context(plan, args.max_model_len, model.path)
    chat_prompts = server_args.check_chat_prompts(plan, renderer) if args.endpoint == "chat" else None
    args.served_model = server_args.choose_served_model(args, names, model.path)
    check_client_procs(args.client_procs, plan)
    plan_json = plan.to_json()
    lint_lines, unstable = prefix_lint.report(specs, stability)
    if unstable:
        print("\n".join(lint_lines), file=sys.stderr)
    timings = prompt_timing.measure(plan, renderer)  # not in plan.json: a --resume compares its hash
    return Planned(plan, plan_json, renderer, stability, chat_prompts, timings)


def describe_run(
    args: argparse.Namespace,
    out: Path,
    model: models.ResolvedModel,
    device: str,
    dtype: str,
    settings: dict,
    chosen: Workloads,
    planned: Planned,
    commit: tuple[str | None, str | None],
) -> dict:
    """The run-level part of env.json: the command, the model, the hashes that tie records to their plan,
    workloads and tokenizer, and the settings every backend shares (``commit``: the git commit and its
    source)."""
    from llm_call_anatomy.workloads.reader import hashes

    specs, renderer = chosen.specs, planned.renderer
    return {
        "run_id": out.name,
        "started": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "argv": sys.argv[1:] if argv_is_cli() else None,
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "git_commit": commit[0],
        "git_commit_source": commit[1],
        "timing_definitions": TIMING_DEFINITIONS,
        "order": ORDER_DESCRIPTION,
        "starts": args.starts,
        "slo": chosen.slo,
        "slo_targets": chosen.slo_targets,
        "gpu_hour_usd": args.gpu_hour_usd,
        "prefix_caching": settings[
            "prefix_caching"
        ],  # off: --no-prefix-caching (the page pairs it with a run with it on)
        # per backend, the recorded settings its engine does not apply: asked or default (harness/applied.py)
        "settings_not_applied": not_applied(args, parse_backends(args.backend)),
        "model": {
            "label": model.label,
            "path": model.path,
            "builtin": model.builtin,
            "config_hash": models.config_hash(model.path),
            "config": models.read_config(model.path),
            # the weights are random numbers: loaded at random (--random-weights) or built so (tiny)
            "random_weights": settings["random_weights"] or model.random_init,
            "params": models.param_count(model.path),
            "dtype_bytes": DTYPE_BYTES[dtype],
        },
        "chat_template_hash": sha(renderer.tokenizer.chat_template or ""),
        "tokenizer": tokenizer_facts(
            renderer, args.tokenizer_path or model.path, list(TEMPLATE_FIRST_PROMPT)
        ),
        "workloads": [s.name for s in specs],
        "workload_files": hashes(args.workload_file),
        "prefix_stability": {name: [vars(f) for f in fs] for name, fs in planned.stability.items()},
        "plan_hash": sha(planned.plan_json),
        # the load levels of the plan, per workload ([mode, case]): the report names those a backend did not
        # reach
        "planned_levels": planned_levels(planned.plan),
        "dtype": dtype,
        "device": device,
        "endpoint": args.endpoint,
        "tokenizer_path": args.tokenizer_path,  # --tokenizer (None: the model's)
        "served_model_name": args.served_model,
        "engine_args": args.engine_args,  # per column (a variant's settings on top of --engine-arg's)
        # per base@variant column: its base, name and settings as given (harness/variants.py); as the engine
        # reports them: env/<column>.json's ``variant``
        "variants": getattr(args, "variants", {}),
        "parallel": {
            "tp": args.tp,
            "dp": args.dp,
            "router": args.router,
        },  # per backend: env/<backend>.json engine
    }


def planned_levels(plan: Plan) -> dict[str, list[list[str]]]:
    """The load levels of the plan, per workload, as ``[mode, case]`` in plan order (env.json
    ``planned_levels``)."""
    out: dict[str, list[list[str]]] = {}
    for group in plan.groups:
        if group.load is not None and not group.warmup:
            step = group.steps[0]
            level = [step.mode, step.case]
            if level not in out.setdefault(step.workload, []):
                out[step.workload].append(level)
    return out


def argv_is_cli() -> bool:
    """True when the process is the study's command (not a test or a benchmark calling ``main``): only then
    does env.json keep ``sys.argv``."""
    return Path(sys.argv[0]).name in ("compare.py", "cli.py", "llm-call-anatomy")
