"""One engine start of one backend, in its own process:
``python -m llm_call_anatomy.harness.child RUN_DIR BACKEND [--start K]``.

The parent (``compare.py``) wrote ``run.json`` (settings) and ``plan.json`` (every request as
token ids) into RUN_DIR. This process imports only the chosen backend, starts it, replays the
plan's steps of engine start K, and writes records and ``env/<backend>.json``: start 0 writes the
whole file (packages, device, engine config), every start its entry in ``starts`` (start-up
seconds, KV-cache capacity, peak device memory, wall time). A backend that cannot be imported or
started writes one ``skipped`` record per workload of that start with the reason; it exits 0 when the
backend is not installed here (``BackendUnavailable``) and 1 when it failed to start, as it does when a
request errored or a failed record of its start is still current after a resume (the parent turns that
into its own exit 1). A resume whose backend started before
but cannot start now writes nothing (its records and env/<backend>.json stay as they were) and exits 1.
``LCA_CHILD_HOOK=module:function`` names an optional function run after start 0's study on the same engine
(``run_child_hook``): how a benchmark measures inside a study without the harness importing it.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import signal
import sys
import time
import warnings
from pathlib import Path

from llm_call_anatomy import backends
from llm_call_anatomy.backends import companions
from llm_call_anatomy.backends.base import BackendUnavailable
from llm_call_anatomy.contract.adapter import BackendSettings
from llm_call_anatomy.contract.columns import ignored, reported_settings, split_column
from llm_call_anatomy.contract.plan import Plan
from llm_call_anatomy.contract.records import Record
from llm_call_anatomy.harness import gpu_host, secrets
from llm_call_anatomy.harness.env import (
    MemoryWatch,
    device_facts,
    package_versions,
    torch_peak_allocated_bytes,
    write_json,
)
from llm_call_anatomy.harness.heartbeat import Heartbeat
from llm_call_anatomy.harness.records import RecordWriter, read_records
from llm_call_anatomy.harness.rundir import is_disk_full
from llm_call_anatomy.harness.runner import Runner, console


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(argv)
    except KeyboardInterrupt:
        return 130
    except OSError as exc:
        if not is_disk_full(exc):
            raise
        print(
            f"harness.child: error: the disk is full ({exc.strerror}): the records written so far are whole; "
            "free some space and rerun with --resume",
            file=sys.stderr,
        )
        return 1


def _main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("backend")
    parser.add_argument("--start", type=int, default=0, help="which engine start this process is (0-based)")
    args = parser.parse_args(argv)
    run = json.loads((args.run_dir / "run.json").read_text())
    plan = Plan.from_json((args.run_dir / "plan.json").read_text())
    raw = run["settings"]  # engine_args: {backend: {key: value}} for the run, this backend's for its settings
    # options: a KEY: value mapping (an older run's may name other backends' keys), read as the adapter's
    # type below
    engine_args = (raw.get("engine_args") or {}).get(args.backend, {})
    settings = BackendSettings.from_dict(
        {**raw, "engine_args": engine_args, "run_dir": str(args.run_dir), "column": args.backend}
    )
    if settings.api_key_env:  # whatever the server echoes, the key is written nowhere
        secrets.register(os.environ.get(settings.api_key_env))
    base = {
        "run_id": run["run_id"],
        "backend": args.backend,
        "engine_start": args.start,
        "model": settings.model_label,
        "random_weights": settings.random_weights,
    }
    env_path = args.run_dir / "env" / f"{args.backend}.json"
    env = {"packages": package_versions()}  # device facts after start(): they initialise CUDA
    start = StartFacts(env_path, args.start)

    memory = MemoryWatch()  # before anything touches the device
    started = time.perf_counter()
    try:
        adapter = backends.resolve(args.backend)
        backend = adapter(settings.with_options(adapter.options_type, raw.get("options")))
        with Heartbeat(starting(args.run_dir, args.backend), say=say, expected_s=start.earlier_startup_s()):
            backend.start()
    except BackendUnavailable as exc:
        if run["resume"] and has_measurements(args.run_dir, args.backend):
            return resume_could_not_start(args.backend, str(exc))
        return skip_all(args.run_dir, plan, base, env_path, env, str(exc), start)
    except Exception as exc:  # noqa: BLE001 - a failed start is reported, not raised
        found = companions.broken()  # a torchvision built for another torch breaks transformers: the fix
        reason = (
            companions.explain("failed to start", exc, found)
            if found
            else f"failed to start: {type(exc).__name__}: {exc}"
        )
        if run["resume"] and has_measurements(args.run_dir, args.backend):
            return resume_could_not_start(args.backend, reason)
        skip_all(args.run_dir, plan, base, env_path, env, reason, start)
        return 1
    startup_s = time.perf_counter() - started
    differs = identity_differs(env_path, backend.identity())
    if differs:
        console.print(
            secrets.redact(
                f"{args.backend}: not the engine this run was measured with ({differs}); its records "
                "are left as they are: measure it in another --out"
            ),
            style="red",
        )
        backend.close()
        return 1
    memory.sample()
    kv_tokens, kv_source = backend.kv_cache_tokens()
    host = gpu_host.facts()  # what else runs on the GPU host, now that the engine is up
    start.update(
        startup_s=startup_s, kv_cache_tokens=kv_tokens, kv_cache_tokens_source=kv_source, gpu_host=host
    )
    if args.start == 0:
        env["process"] = device_facts()
        write_json(
            env_path,
            {
                **env,
                "engine": backend.environment(),
                **variant_block(args.run_dir, args.backend, backend.environment()),
                "identity": backend.identity(),
                "startup_s": startup_s,
                "starts": start.all(),
            },
        )
    base["backend_version"] = backend.version()
    console.print(f"{args.backend}: engine start {args.start} ready in {startup_s:.1f} s")
    runner = Runner(backend, plan, args.run_dir, base, resume=run["resume"], engine_start=args.start)
    runner.after_workload = memory.sample
    hook_s = None
    try:
        runner.run()
        memory.sample()
        if args.start == 0:
            hook_s = run_child_hook(backend, plan)
        engine = backend.environment()  # read before close(): some engines forget their config then
    finally:
        start.update(
            **memory.facts(),
            torch_peak_allocated_bytes=torch_peak_allocated_bytes(),
            gpu_host=gpu_host.facts(host),
            wall_s=time.perf_counter() - started,
            workload_wall_s={k: round(v, 2) for k, v in runner.wall_s.items()},
        )
        backend.close()
    if args.start == 0:
        write_json(
            env_path,
            {
                **env,
                "engine": engine,
                **variant_block(args.run_dir, args.backend, engine),
                "identity": backend.identity(),
                "startup_s": startup_s,
                "wall_s": time.perf_counter() - started,
                "child_hook": os.environ.get(HOOK_ENV) or None,
                "child_hook_s": hook_s,
                "workload_wall_s": {k: round(v, 2) for k, v in runner.wall_s.items()},
                "starts": start.all(),
            },
        )
    return 1 if runner.errors_seen or errors_left(args.run_dir, args.backend, args.start) else 0


def errors_left(run_dir: Path, backend: str, start: int) -> int:
    """Failed records of this engine start still current (a resume redoes every level and case with
    failures, so one left means the run is not whole): the child exits 1 for them too, with a line."""
    left = [
        r
        for r in read_records(run_dir)
        if r.get("backend") == backend and (r.get("engine_start") or 0) == start and r.get("error")
    ]
    if left:
        console.print(
            f"{backend}: {len(left)} failed records remain (first: {left[0]['error']})", style="red"
        )
    return len(left)


def say(line: str) -> None:
    """A heartbeat's line on the child's console (stderr)."""
    console.print(line, style="dim", soft_wrap=True)


def starting(run_dir: Path, backend: str):
    """The heartbeat's words while the engine starts: its log file, once a launched server writes one."""
    log = run_dir / "logs" / f"{backend}.log"

    def what() -> str:
        return f"{backend}: starting the engine" + (f" (log: {log})" if log.exists() else "")

    return what


class StartFacts:
    """This engine start's entry in ``env/<backend>.json`` ``starts`` (a list ordered by start),
    written into the file at once so that a crash keeps what was known."""

    def __init__(self, env_path: Path, engine_start: int) -> None:
        self.path, self.facts = env_path, {"engine_start": engine_start}

    def all(self) -> list[dict]:
        doc = json.loads(self.path.read_text()) if self.path.exists() else {}
        others = [s for s in doc.get("starts", []) if s.get("engine_start") != self.facts["engine_start"]]
        return sorted([*others, self.facts], key=lambda s: s["engine_start"])

    def earlier_startup_s(self) -> float | None:
        """The mean start-up seconds of this backend's earlier engine starts in this run (None: this is the
        first): the heartbeat's expected time."""
        doc = json.loads(self.path.read_text()) if self.path.exists() else {}
        took = [
            s["startup_s"]
            for s in doc.get("starts", [])
            if s.get("engine_start") != self.facts["engine_start"] and isinstance(s.get("startup_s"), float)
        ]
        return sum(took) / len(took) if took else None

    def update(self, **facts) -> None:
        self.facts.update(facts)
        doc = json.loads(self.path.read_text()) if self.path.exists() else {}
        write_json(self.path, {**doc, "starts": self.all()})


HOOK_ENV = "LCA_CHILD_HOOK"


def run_child_hook(backend, plan: Plan) -> float | None:
    """The optional post-study hook: ``LCA_CHILD_HOOK=package.module:function`` names a function that
    is called as ``function(backend, plan)`` after engine start 0's study, on the same started engine,
    and returns nothing (e.g. ``benchmarks.overhead:child_hook``, which reads its own settings from the
    environment). The harness knows nothing of what it does; it returns its seconds, written as
    ``child_hook_s`` into ``env/<backend>.json`` so that a reader of study time can take them off
    (``benchmarks/study_time.py`` does). No hook: None."""
    spec = os.environ.get(HOOK_ENV)
    if not spec:
        return None
    module_name, _, function_name = spec.partition(":")
    if not module_name or not function_name:
        raise ValueError(f"{HOOK_ENV}={spec!r}: expected module:function")
    hook = getattr(importlib.import_module(module_name), function_name)
    started = time.perf_counter()
    hook(backend, plan)
    console.print(f"{backend.name}: {HOOK_ENV} {spec} done")
    return time.perf_counter() - started


def identity_differs(env_path: Path, identity: dict) -> str | None:
    """``name was X, now Y`` where the started engine is not the one env/<backend>.json says this run's
    records came from (a resume, a later engine start); None when it is, or when nothing was recorded yet."""
    if not env_path.exists():
        return None
    before = json.loads(env_path.read_text()).get("identity")
    if not isinstance(before, dict):
        return None  # start 0 of a fresh run, or a run older than the identity check
    changed = [
        f"{k} was {before.get(k)!r}, now {v!r}" for k, v in identity.items() if k in before and before[k] != v
    ]
    return "; ".join(changed) or None


def variant_block(run_dir: Path, column: str, engine: dict) -> dict:
    """A ``base@variant`` column's ``variant``: its settings as given (env.json ``variants``) and as the
    engine reports them in its block (None: it reports none), and those it reports otherwise (issue 41)."""
    if split_column(column)[1] is None:
        return {}
    try:  # a run directory written by hand (a test, a benchmark) may have no env.json
        given = (json.loads((run_dir / "env.json").read_text()).get("variants") or {}).get(column)
    except (OSError, ValueError):
        return {}
    if not given:
        return {}
    reported = reported_settings(engine, given["settings"])
    differs = {k: {"given": g, "reported": r} for k, (g, r) in ignored(given["settings"], reported).items()}
    return {"variant": {**given, "reported": reported, "differs": differs}}


def has_measurements(run_dir: Path, backend: str) -> bool:
    """The run already holds this backend's measured (or failed) records: it did start once."""
    return any(r["backend"] == backend and not r.get("skipped") for r in read_records(run_dir))


def resume_could_not_start(backend: str, reason: str) -> int:
    """A resume whose backend cannot start now: the run stays as it was (no ``skipped`` records beside the
    measured ones, env/<backend>.json and its engine configuration kept); exit 1, the resume did not
    finish."""
    console.print(
        secrets.redact(
            f"{backend}: could not start to resume ({reason}); the run is left as it was: "
            "rerun with --resume once it can start"
        ),
        style="red",
    )
    return 1


def skip_all(
    run_dir: Path, plan: Plan, base: dict, env_path: Path, env: dict, reason: str, start: StartFacts
) -> int:
    console.print(
        secrets.redact(f"{base['backend']}: skipped: {reason}"), style="yellow", soft_wrap=True
    )  # one line
    with RecordWriter(run_dir) as writer:
        for workload in plan.workloads(base["engine_start"]):
            writer.write(Record(**base, workload=workload, skipped=reason))
    start.update(skipped=reason)
    if base["engine_start"] == 0:
        write_json(env_path, {**env, "process": device_facts(), "skipped": reason, "starts": start.all()})
    return 0


def quiet_future_warnings() -> None:
    """transformers' FutureWarnings (deprecations meant for whoever writes the calls) are not printed through
    the progress bar; ``PYTHONWARNINGS`` / ``-W`` given, the user's filters stand (Python's own rule)."""
    if not sys.warnoptions:
        warnings.simplefilter("ignore", FutureWarning)


if __name__ == "__main__":
    quiet_future_warnings()
    # compare.py stops a run by signalling this process's group: SIGTERM unwinds like Ctrl-C, so the
    # engine is closed (finally: backend.close()) and the parent alone prints the resume hint.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    sys.exit(main())
