"""Benchmark 2: study wall time per backend and per workload, engine start-ups included.

Reads the ``env.json`` of one or more runs (a run split per backend is merged here). A backend's
"study s" is its processes' wall time (every engine start, ``--starts K``) less the overhead
benchmark (benchmark 1), when that ran in the same process as the child's post-study hook
(``child_hook_s``; runs before the hook was generic: ``overhead_benchmark_s``); start-up and
workload seconds are summed over the starts:

    python benchmarks/study_time.py runs/h200-hf runs/h200-vllm runs/h200-sglang
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def rows(run_dirs: list[Path]) -> list[dict]:
    """One row per backend of each run's ``env.json``: process wall time, study time (that less the overhead
    benchmark's hook seconds, where it ran in the child) and start-up and per-workload seconds summed over the
    engine starts. A skipped backend gives a row with its reason."""
    out = []
    for run_dir in run_dirs:
        env = json.loads((run_dir / "env.json").read_text())
        for backend, facts in env.get("backends", {}).items():
            if "skipped" in facts:
                out.append({"run": run_dir.name, "backend": backend, "skipped": facts["skipped"]})
                continue
            process_s = env.get("wall_s", {}).get(backend)
            hook_s = facts.get("child_hook_s", facts.get("overhead_benchmark_s"))
            overhead_s = hook_s or 0.0
            out.append(
                {
                    "run": run_dir.name,
                    "backend": backend,
                    "process_s": process_s,
                    "study_s": None if process_s is None else process_s - overhead_s,
                    "overhead_benchmark_s": hook_s,
                    "startup_s": summed([s.get("startup_s") for s in facts.get("starts", [])])
                    or facts.get("startup_s"),
                    "workloads_s": workload_seconds(facts),
                    "starts": len(facts.get("starts", [])) or 1,
                }
            )
    return out


def summed(values: list) -> float | None:
    return sum(values) if values and all(isinstance(v, int | float) for v in values) else None


def workload_seconds(facts: dict) -> dict[str, float]:
    """Seconds per workload over every engine start (``starts``; older runs: the one process's)."""
    starts = facts.get("starts") or [facts]
    out: dict[str, float] = {}
    for start in starts:
        for workload, seconds in (start.get("workload_wall_s") or {}).items():
            out[workload] = out.get(workload, 0.0) + seconds
    return out


def table(data: list[dict]) -> str:
    """The rows as a Markdown table, a column per workload seen in any run (``-``: no figure), and the total
    study seconds of all backend processes, benchmark 1 excluded, at the foot."""
    workloads = sorted({w for r in data for w in r.get("workloads_s", {})})
    head = ["backend", "run", "study s", "start-up s", *[f"{w} s" for w in workloads], "benchmark 1 s"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    total = 0.0
    for r in data:
        if "skipped" in r:
            lines.append(f"| {r['backend']} | {r['run']} | skipped: {r['skipped']} |")
            continue
        total += r["study_s"] or 0.0
        cells = [r["backend"], r["run"], fmt(r["study_s"]), fmt(r["startup_s"])]
        cells += [fmt(r["workloads_s"].get(w)) for w in workloads] + [fmt(r["overhead_benchmark_s"])]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append(
        f"\ntotal (all backend processes, benchmark 1 excluded): {total:.0f} s = {total / 60:.1f} min"
    )
    return "\n".join(lines)


def fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("run_dirs", nargs="+", type=Path)
    print(table(rows(parser.parse_args().run_dirs)))


if __name__ == "__main__":
    main()
