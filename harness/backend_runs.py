"""The run itself: each backend's child process in turn, engine start by engine start, then the report.

Called by harness/cli.py once the run directory is claimed and plan.json, run.json and env.json are
written. A child that fails does not stop the others (its records are kept; ``--resume`` redoes what
failed); ``--resume`` skips an engine start whose every request is recorded. The wall time of each
backend goes into env.json as it finishes; after each, the rest of the run at the pace of those that ran
(``harness/plan_summary.py``). At the end, what the run found: the report's Summary as a table
(``harness/summary_table.py``), one line a load level (``harness/run_summary.py``), and a run that
measured nothing (every backend skipped, or every request failed) exits 1 with a last line that says so.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from llm_call_anatomy import HOME
from llm_call_anatomy.contract.plan import Plan
from llm_call_anatomy.contract.records import RECORDS, DamagedRecordError
from llm_call_anatomy.harness import pace, plan_summary, run_summary
from llm_call_anatomy.harness.env import merge_env
from llm_call_anatomy.harness.launch import run_child
from llm_call_anatomy.harness.records import done_keys, read_records
from llm_call_anatomy.harness.skips import interpreter
from llm_call_anatomy.harness.summary_table import summary_table
from llm_call_anatomy.harness.version import DIST, commands

ROOT = HOME  # where each child (harness.child) runs: the folder llm_call_anatomy is imported from


def run_backends(
    args: argparse.Namespace,
    out: Path,
    names: list[str],
    pythons: dict[str, str],
    run_env: dict,
    plan: Plan,
    lock_fd: int,
    prog: str = "compare.py",
    skipped: dict[str, str] | None = None,
) -> int:
    """Each backend's child process in turn, then the report and the load levels' lines; the exit code (1: a
    backend failed, or nothing was measured). ``skipped``: the backends the plan foresaw skipped
    (harness/skips.py): their children still run and record why, but no time is foreseen for them."""
    timings: dict[str, float] = {}
    paced: dict[str, float] = {}  # the backends that ran (not skipped): the pace of the rest
    failed: list[str] = []
    try:
        for name in names:
            started = time.perf_counter()
            for start in range(args.starts):
                print(
                    f"== {name}"
                    + (f" (engine start {start + 1} of {args.starts})" if args.starts > 1 else "")
                    + " ==",
                    flush=True,
                )
                if args.resume and all_recorded(out, name, plan, start):
                    print(f"{name}: engine start {start}: every request already recorded", flush=True)
                    continue
                # a base@variant column runs under its base's --python unless it has its own
                python = interpreter(name, pythons)
                code = run_child(ROOT, out, name, python, lock_fd, start)
                if code != 0:
                    failed.append(name)
                    what = (
                        "had failed requests or could not start" if code == 1 else f"exited with code {code}"
                    )
                    print(
                        f"{name}: {what}; records written so far are kept "
                        "(rerun with --resume to redo what failed)",
                        file=sys.stderr,
                    )
                if start == 0 and backend_skipped(out, name):
                    break  # not installed / failed to start: another start would say the same
            timings[name] = round(time.perf_counter() - started, 1)
            merge_env(out, {**run_env, "wall_s": timings})
            if not backend_skipped(out, name):
                paced[name] = timings[name]
                if not args.resume and name not in failed:  # a whole fresh run: this machine's pace
                    model, device = run_env["model"]["label"], run_env["device"]
                    pace.remember(
                        pace.pace_path(), name, model, device, timings[name], pace.plan_tokens(plan)
                    )
            left = [n for n in names[names.index(name) + 1 :] if n not in (skipped or {})]
            rest = plan_summary.rest_line(paced, left)
            if rest:
                print(rest, flush=True)
    except BaseException:  # SIGTERM (Interrupted), ^C or a crash: env.json still gets the blocks the children
        merge_env(out, {**run_env, "wall_s": timings})  # wrote (engine facts of the backend cut short)
        raise

    rows = read_records(out)
    print(f"{len(rows)} records in {out / RECORDS}")
    summary: list[dict] = []
    reported = args.no_report or build_report(out, prog, summary)
    for line in summary_table(summary):  # the page's Summary, from the report's analysis of the records
        print(line)
    for line in run_summary.load_table(rows, names):  # what it found, one line a load level
        print(line)
    nothing = run_summary.nothing_measured(rows, names)
    if nothing:  # every backend skipped, or every request failed: the last line says so
        print(f"{prog}: {nothing} (exit 1)", file=sys.stderr)
        return 1
    if failed:
        print(f"{prog}: {', '.join(dict.fromkeys(failed))} failed (exit 1)", file=sys.stderr)
        return 1
    if not reported:
        print(
            f"{prog}: the report was not built (exit 1); the records are whole: {commands(prog)[1]} "
            f"{out} builds it",
            file=sys.stderr,
        )
        return 1
    return 0


def all_recorded(run_dir: Path, backend: str, plan: Plan, start: int) -> bool:
    """True when every timed request of this engine start is recorded (``--resume``: no engine start needed).
    A start with a capacity search is never: the levels the search adds are in no plan, and only the
    runner (with its engine) can tell whether it has finished."""
    groups = [g for g in plan.groups if g.steps and g.steps[0].engine_start == start]
    if any((g.load or {}).get("search") for g in groups):
        return False
    done = done_keys(run_dir, backend)
    steps = [s for g in groups if not g.warmup for s in g.steps]
    return bool(steps) and all(s.key() in done for s in steps)


def backend_skipped(run_dir: Path, backend: str) -> bool:
    """True when the backend's child recorded itself as skipped (not installed here, or it could not
    start)."""
    path = run_dir / "env" / f"{backend}.json"
    return path.exists() and "skipped" in json.loads(path.read_text())


def build_report(run_dir: Path, prog: str = "compare.py", summary: list[dict] | None = None) -> bool:
    """The run's report.html (written whole or not at all); False, with one line, when it was not built: a
    package of the report extra missing here names the extra to install. ``summary`` (a list) gets the
    report's Summary rows (``reports.export.summary_rows``), for the terminal's table."""
    try:
        from llm_call_anatomy.reports import report_of, write
        from llm_call_anatomy.reports.export import plain, summary_rows
        from llm_call_anatomy.reports.runs import ReportError
    except ImportError as exc:
        missing = getattr(exc, "name", None) or exc
        print(
            f"{prog}: report not built: {missing} is not installed here; the report needs the report extra: "
            f"pip install '{DIST}[report]'",
            file=sys.stderr,
        )
        return False
    path = run_dir / "report.html"
    try:
        report = report_of([run_dir])
        write(report, path, ("html",))
    except (ReportError, DamagedRecordError) as exc:
        print(f"{prog}: report not built: {exc}", file=sys.stderr)
        return False
    if summary is not None:
        summary.extend(plain(summary_rows(report)))
    print(f"report: {path}")
    return True
