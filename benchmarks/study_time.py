"""Benchmark 2: study wall time per backend and per workload, engine start-ups included.

Reads the ``env.json`` of one or more runs (a run split per backend is merged here):

    python benchmarks/study_time.py runs/h200-hf runs/h200-vllm runs/h200-sglang
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def rows(run_dirs: list[Path]) -> list[dict]:
    out = []
    for run_dir in run_dirs:
        env = json.loads((run_dir / "env.json").read_text())
        for backend, facts in env.get("backends", {}).items():
            if "skipped" in facts:
                out.append({"run": run_dir.name, "backend": backend, "skipped": facts["skipped"]})
                continue
            out.append({
                "run": run_dir.name,
                "backend": backend,
                "process_s": env.get("wall_s", {}).get(backend),
                "startup_s": facts.get("startup_s"),
                "workloads_s": facts.get("workload_wall_s", {}),
            })
    return out


def table(data: list[dict]) -> str:
    workloads = sorted({w for r in data for w in r.get("workloads_s", {})})
    head = ["backend", "run", "process s", "start-up s", *[f"{w} s" for w in workloads]]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    total = 0.0
    for r in data:
        if "skipped" in r:
            lines.append(f"| {r['backend']} | {r['run']} | skipped: {r['skipped']} |")
            continue
        total += r["process_s"] or 0.0
        cells = [r["backend"], r["run"], fmt(r["process_s"]), fmt(r["startup_s"])]
        cells += [fmt(r["workloads_s"].get(w)) for w in workloads]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append(f"\ntotal (all backend processes): {total:.0f} s = {total / 60:.1f} min")
    return "\n".join(lines)


def fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dirs", nargs="+", type=Path)
    print(table(rows(parser.parse_args().run_dirs)))


if __name__ == "__main__":
    main()
