"""``python -m reports RUN_DIR [RUN_DIR ...] [-o report.html]``: rebuild or merge reports offline."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from reports import build
from reports.load import ReportError


def positive(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive (got {text})")
    return value


def copy_bandwidth(text: str) -> float:
    """GB/s, or a ``benchmarks.bandwidth`` JSON file whose ``copy_gbps_median`` is read."""
    path = Path(text)
    if path.suffix == ".json":
        try:
            return positive(str(json.loads(path.read_text())["copy_gbps_median"]))
        except (OSError, ValueError, KeyError) as exc:
            raise argparse.ArgumentTypeError(f"{text}: no copy_gbps_median in it ({type(exc).__name__})") from exc
    return positive(text)


def run_backend(text: str) -> tuple[str, str]:
    run, sep, backend = text.rpartition(":")
    if not sep or not run or not backend:
        raise argparse.ArgumentTypeError(f"expected RUN:BACKEND, e.g. h200-hf:hf (got {text!r})")
    return run, backend


def slo_target(text: str) -> dict[str, float]:
    from contract.options import parse_slo

    try:
        return parse_slo(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m reports", description=(
        "Build one offline HTML report from run directories (records.jsonl + env.json); several runs are merged."))
    p.add_argument("run_dirs", nargs="+", type=Path, metavar="RUN_DIR")
    p.add_argument("-o", "--out", type=Path, default=None, help="output file (default: RUN_DIR/report.html for one run, "
                   "report.html for several)")
    p.add_argument("--bandwidth-gbps", type=positive, default=None, help="GPU memory bandwidth for the roofline (GB/s), "
                   "instead of the datasheet value for the GPU in env.json")
    p.add_argument("--copy-gbps", type=copy_bandwidth, default=None, metavar="GBPS|FILE.json",
                   help="measured device-to-device copy bandwidth (GB/s, or the JSON python -m benchmarks.bandwidth wrote): "
                   "drawn as a second decode floor beside the datasheet's")
    p.add_argument("--merge-starts", action="store_true", help="count runs of the same backend with the same setup (plan, "
                   "model config, dtype, version) as engine starts of one column, instead of separate columns")
    p.add_argument("--tflops", type=positive, default=None, help="peak dense TFLOP/s for the roofline, instead of the datasheet value")
    p.add_argument("--drop", type=run_backend, action="append", default=[], metavar="RUN:BACKEND",
                   help="leave out one run's records of one backend, e.g. a column a later run superseded "
                   "(RUN: the run directory's name); repeatable")
    p.add_argument("--slo", type=slo_target, default=None, metavar="ttft_ms=X,tpot_ms=Y",
                   help="the latency target goodput counts against in the Load section (default: the run's --slo, "
                   "else the page's stated default)")
    args = p.parse_args(argv)
    out = args.out or (args.run_dirs[0] / "report.html" if len(args.run_dirs) == 1 else Path("report.html"))
    try:
        path = build(args.run_dirs, out, bandwidth_gbps=args.bandwidth_gbps, tflops=args.tflops,
                     drop=args.drop, copy_gbps=args.copy_gbps, merge_starts=args.merge_starts, slo=args.slo)
    except ReportError as exc:
        print(f"python -m reports: error: {exc}", file=sys.stderr)
        return 2
    print(f"report: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
