"""``python compare.py report RUN_DIR [RUN_DIR ...] [-o report.html] [--format html,json,csv]``:
rebuild, merge or export reports offline; ``python compare.py report --baseline A --candidate B``:
the regression gate (``reports.gate``). Installed, ``llm-call-anatomy report``; also
``python -m llm_call_anatomy.reports``."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from llm_call_anatomy.contract.options import goodput_pair as pair
from llm_call_anatomy.contract.price import GpuPrice, parse_price
from llm_call_anatomy.contract.records import DamagedRecordError
from llm_call_anatomy.contract.slo import parse_target, parse_targets
from llm_call_anatomy.reports import export, gate, report_of, write
from llm_call_anatomy.reports.kinds import report_kind
from llm_call_anatomy.reports.runs import DiskFull, ReportError
from llm_call_anatomy.reports.size_ask import parse_size


def positive(text: str) -> float:
    value = float(text)
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"must be positive (got {text})")
    return value


def non_negative(text: str) -> float:
    value = float(text)
    if not (value >= 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"must be a finite number, 0 or more (got {text})")
    return value


def copy_bandwidth(text: str) -> float:
    """GB/s, or a ``benchmarks.bandwidth`` JSON file whose ``copy_gbps_median`` is read."""
    path = Path(text)
    if path.suffix == ".json":
        try:
            return positive(str(json.loads(path.read_text())["copy_gbps_median"]))
        except (OSError, ValueError, KeyError) as exc:
            raise argparse.ArgumentTypeError(
                f"{text}: no copy_gbps_median in it ({type(exc).__name__})"
            ) from exc
    return positive(text)


def run_backend(text: str) -> tuple[str, str]:
    run, sep, backend = text.rpartition(":")
    if not sep or not run or not backend:
        raise argparse.ArgumentTypeError(f"expected RUN:BACKEND, e.g. h200-hf:hf (got {text!r})")
    return run, backend


def slo_target(text: str) -> str:
    """One ``--slo`` value checked by the one grammar (``contract.slo``), kept as given."""
    try:
        parse_target(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc
    return text


def size_ask(text: str):
    """One ``--size`` value (``reports.size_ask``): users, think time and the target to size at."""
    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def gpu_price(text: str) -> GpuPrice:
    """One ``--gpu-hour-usd`` value (``contract.price``): a price, or a range ``LO-HI`` (both ends)."""
    try:
        return parse_price(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def given_targets(texts: list[str] | None) -> tuple | None:
    """The ``--slo`` targets given to the report (``contract.slo.parse_targets``), None where none was: every
    capacity cell, bracket, cost and the sizing are then judged against them instead of each run's own."""
    if not texts:
        return None
    try:
        return parse_targets(texts)
    except ValueError as exc:
        raise ReportError(str(exc)) from None


def goodput_pair(texts: list[str] | None) -> dict[str, float] | None:
    """``contract.options.goodput_pair``, its mistake a ReportError (exit 2, one line)."""
    try:
        return pair(texts)
    except ValueError as exc:
        raise ReportError(str(exc)) from None


def main(argv: list[str] | None = None, prog: str = "python compare.py report") -> int:
    """``python compare.py report``: the report of run directories (the page and its exports), or with
    ``--baseline`` and ``--candidate`` the regression gate; the exit code, with one line on stderr for bad
    input (2)."""
    p = argparse.ArgumentParser(
        prog=prog,
        description=(
            "Build one offline HTML report from run directories (records.jsonl + "
            "env.json); several runs are merged. --format adds summary.json and CSV "
            "files of what the page shows; --baseline/--candidate is a regression gate."
        ),
        epilog=(
            "exit codes: 0 written (gate: no figure regressed); 1 gate: a figure regressed or went missing, "
            "or the candidate has failed requests; "
            "2 bad input (no run directory, an unknown format, nothing to compare, a damaged record)"
        ),
    )
    p.add_argument("run_dirs", nargs="*", type=Path, metavar="RUN_DIR")
    p.add_argument(
        "-o",
        "--out",
        type=Path,
        default=None,
        help="output file (default: RUN_DIR/report.html for one run, "
        "report.html for several); exports go beside it",
    )
    p.add_argument(
        "--format",
        default="html",
        metavar="html,json,csv",
        help=(
            f"what to write, comma-separated (known: {', '.join(export.FORMATS)}; "
            f"default html): json = {export.SUMMARY_JSON}, csv = one file per "
            f"table under {export.CSV_DIR}/, both from the page's own figures"
        ),
    )
    p.add_argument(
        "--bandwidth-gbps",
        type=positive,
        default=None,
        help="GPU memory bandwidth for the roofline (GB/s), "
        "instead of the datasheet value for the GPU in env.json",
    )
    p.add_argument(
        "--copy-gbps",
        type=copy_bandwidth,
        default=None,
        metavar="GBPS|FILE.json",
        help=(
            "measured device-to-device copy bandwidth (GB/s, or the JSON python -m benchmarks.bandwidth "
            "wrote): drawn as a second decode floor beside the datasheet's"
        ),
    )
    p.add_argument(
        "--merge-starts",
        action="store_true",
        help="count runs of the same backend with the same setup (plan, "
        "model config, dtype, version) as engine starts of one column, instead of separate columns; runs "
        "of one backend with another setup (another plan) form a column of their own",
    )
    p.add_argument(
        "--tflops",
        type=positive,
        default=None,
        help="peak dense TFLOP/s for the roofline, instead of the datasheet value",
    )
    p.add_argument(
        "--drop",
        type=run_backend,
        action="append",
        default=[],
        metavar="RUN:BACKEND",
        help="leave out one run's records of one backend, e.g. a column a later run superseded "
        "(RUN: the run directory's name); repeatable",
    )
    p.add_argument(
        "--gpu-hour-usd",
        type=gpu_price,
        default=None,
        metavar="PRICE|LO-HI",
        help="a GPU-hour's price, or a range such as 2.5-7 (every cost at both ends): $ per million input "
        "and output tokens (apart, and blended at the workload's own input:output mix), $ per request and "
        "per session at each capacity point, with intervals (default: the run's --gpu-hour-usd, else none: "
        "the page shows the formula)",
    )
    p.add_argument(
        "--slo",
        type=slo_target,
        action="append",
        default=None,
        metavar="NAME:METRIC_pP_ms=V,...",
        help="a latency target in compare.py's --slo grammar (contract.slo; repeatable; unnamed: 'custom'): "
        "every capacity cell, bracket, cost, the summary and the sizing are re-computed from the records "
        "against the targets given, and goodput counts against the first one's TTFT and TPOT limits "
        "(default: each run's own targets, goodput per run against its own)",
    )
    p.add_argument(
        "--size",
        type=size_ask,
        default=None,
        metavar="users=N,think_s=Z[,slo=NAME]",
        help="size a fleet: GPUs per backend and configuration for N users who think Z s between turns, at "
        "the target NAME (default: the first with latency limits), from a measured population with that "
        "think time or by Little's law between two (never beyond); printed and on the page",
    )
    g = p.add_argument_group(
        "regression gate", "compare a candidate with a baseline, figure by figure; exit 1 on a regression"
    )
    g.add_argument(
        "--baseline",
        nargs="+",
        type=Path,
        metavar="RUN_DIR|summary.json",
        help="the runs to compare against (run directories, several merged as engine starts with "
        "--merge-starts, or a summary.json from --format json)",
    )
    g.add_argument(
        "--candidate", nargs="+", type=Path, metavar="RUN_DIR|summary.json", help="the runs under test"
    )
    g.add_argument(
        "--threshold-pct",
        type=non_negative,
        default=5.0,
        metavar="PCT",
        help="a figure regresses when it is worse by more than its spread and more than this (default 5)",
    )
    g.add_argument(
        "--ignore-missing",
        action="store_true",
        help="a baseline figure absent from the candidate "
        "(a failed backend, a workload left out) does not fail the gate",
    )
    args = p.parse_args(argv)
    try:
        if args.baseline or args.candidate:
            return run_gate(args)
        formats = export.parse_formats(args.format)
        if not args.run_dirs:
            raise ReportError(
                "give one or more RUN_DIRs to report on, or --baseline and --candidate to compare"
            )
        out = args.out or (
            args.run_dirs[0] / "report.html" if len(args.run_dirs) == 1 else Path("report.html")
        )
        report = report_of(
            args.run_dirs,
            bandwidth_gbps=args.bandwidth_gbps,
            tflops=args.tflops,
            drop=args.drop,
            copy_gbps=args.copy_gbps,
            merge_starts=args.merge_starts,
            slo=goodput_pair(args.slo),
            gpu_hour_usd=args.gpu_hour_usd,
            targets=given_targets(args.slo),
            size=args.size,
        )
        written = write(report, out, formats)
    except DiskFull as exc:  # a full disk is exit 1, as in compare.py
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 1
    except (ReportError, DamagedRecordError) as exc:  # a damaged record names its run and record
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    csvs = [path for path in written if path.suffix == ".csv"]
    for path in written:
        if path.suffix != ".csv":
            print(f"{'report' if path == out else path.suffix.lstrip('.')}: {path}")
    if csvs:
        print(f"csv: {csvs[0].parent}/ ({len(csvs)} tables)")
    for line in printed(report):
        print(line)
    return 0


def printed(report) -> list[str]:
    """What each section's kind prints after the report is written (the answer to ``--size``)."""
    out = []
    for section in getattr(report, "sections", ()):  # a stand-in report (a test's) has none
        kind = report_kind(section.kind) if section.kind and section.data else None
        out += kind.printed(section) if kind is not None else []
    return out


def run_gate(args: argparse.Namespace) -> int:
    """The regression gate: the candidate's figures against the baseline's, printed figure by figure; exit 1
    when one regressed (or went missing, unless ``--ignore-missing``)."""
    if not (args.baseline and args.candidate):
        raise ReportError("the gate needs both --baseline and --candidate")
    if args.run_dirs:
        raise ReportError("give RUN_DIRs to report on, or --baseline and --candidate to compare, not both")
    if args.out or args.format != "html":
        raise ReportError(
            "the gate prints its verdict; -o and --format are for a report (python compare.py report RUN_DIR "
            "--format json writes the summary.json a later gate can take as its baseline)"
        )
    base = gate.figures_of(args.baseline, args.merge_starts)
    cand = gate.figures_of(args.candidate, args.merge_starts)
    deltas = gate.compare(base, cand, args.threshold_pct / 100)
    if not any(d.base and d.cand for d in deltas):
        raise ReportError(
            f"no figure in common between the baseline ({len(base)} figures) and the candidate "
            f"({len(cand)}): the same workloads and backends are needed"
        )
    print(gate.text(deltas, args.threshold_pct / 100, args.ignore_missing), end="")
    return 1 if gate.failed(deltas, args.ignore_missing) else 0


if __name__ == "__main__":
    if __spec__ is None or __spec__.name != "llm_call_anatomy.reports.__main__":  # the layer's bare name
        sys.exit(f"{__spec__.name if __spec__ else __file__}: run the report as python compare.py report")
    sys.exit(main())
