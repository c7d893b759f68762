"""A Markdown table of the load workload from run directories: per level, every backend's output
tokens/s, TTFT p50/p99, ITL p50 and goodput — what the Load section draws, as text for a README.

    python -m llm_call_anatomy.workloads.load.report.load_table RUN_DIR...
        [--slo NAME:ttft_p90_ms=2000,tpot_p90_ms=200] [--merge-starts] [--capacity] [--inproc-server]

Rows are (workload · variant · level: ``levels.per_level``'s ``level``, ``U=256`` for users who think),
in the order the runs have them; a cell is
``output tok/s (whole level) · TTFT p50/p99 ms · ITL p50 ms · goodput req/s (n)``, "–" where the backend
has no such level, "†" after a cell whose requests are not the row's (another mix: the H200's HF mix runs
fewer turns a session; ``capacity.mix_of``), so that it is not read against the others.
The figures come from ``workloads.load.report.levels.per_level`` (one definition for the page and
this table); nothing here recomputes them. ``--capacity`` adds the capacity rows as the page's summary
states them (``capacity_cells.headline_text``: the bracket, the deciding percentile with its interval at
both ends, every engine start's bracket), from the page's own analysis of the runs; ``--inproc-server``
the page's notes where an engine in process and its own server disagree on a capacity (``inproc_server``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from llm_call_anatomy.reports.__main__ import goodput_pair, slo_target
from llm_call_anatomy.reports.assemble import assemble
from llm_call_anatomy.reports.runs import ReportError, read_runs
from llm_call_anatomy.workloads.load.report.capacity import mix_of
from llm_call_anatomy.workloads.load.report.capacity_cells import headline_text
from llm_call_anatomy.workloads.load.report.labels import LEVEL_TPS
from llm_call_anatomy.workloads.load.report.levels import per_level, requests

CELL = f"{LEVEL_TPS} · TTFT p50/p99 ms · ITL p50 ms · goodput req/s (n)"


def _fmt(x, digits: int = 0) -> str:
    return "–" if x is None or x != x else f"{x:,.{digits}f}"


def cell(row) -> str:
    return (
        f"{_fmt(row['output_tps'])} · {_fmt(row['ttft_p50'])}/{_fmt(row['ttft_p99'])} · "
        f"{_fmt(row['itl_p50'], 1)} · {_fmt(row['goodput_rps'], 2)} ({int(row['requests'])})"
    )


def table(levels, mixes: dict[tuple, str] | None = None) -> str:
    """The Markdown table; ``mixes``: (backend, workload, variant, level) -> the level's mix digest, a cell
    marked † where it is not the row's main mix (the one most of its backends ran, then the first)."""
    backends = list(dict.fromkeys(levels["backend"]))
    lines = [f"| workload · variant · level | {' | '.join(backends)} |", "|---" * (len(backends) + 1) + "|"]
    marked = False
    # keyed on the recorded case; a row named as the reader sees its level (``U=256`` for users who think)
    for (w, m, c), g in levels.groupby(["workload", "mode", "case"], sort=False):
        mix = {b: (mixes or {}).get((b, w, m, c)) for b in g["backend"]}
        counts = list(mix.values())
        main = max(dict.fromkeys(counts), key=counts.count)
        by = {}
        for r in g.to_dict("records"):
            other = mix[r["backend"]] != main
            marked |= other
            by[r["backend"]] = cell(r) + (" †" if other else "")
        level = g["level"].iloc[0]  # as the reader sees it
        lines.append(f"| {w} · {m} · {level} | " + " | ".join(by.get(b, "–") for b in backends) + " |")
    note = (
        " †: other requests than the row's unmarked cells (another mix, or a level cut short): not compared "
        "with them."
        if marked
        else ""
    )
    return "\n".join(lines) + f"\n\nEach cell: {CELL}.{note}\n"


def load_sections(ds) -> list:
    """The runs' Load sections as the page assembles them (one a workload of the load kind)."""
    return [s for s in assemble(ds).sections if s.kind == "load"]


def inproc_server_notes(sections) -> str:
    """The page's notes where an engine in process and its own server disagree on a capacity
    (``inproc_server``), one paragraph each, over every Load section."""
    found = [n for s in sections if s.data for n in s.data["cap"].get("inproc_server") or []]
    return "".join(f"{n['text']}\n\n" for n in found)


def capacity_table(ds, targets: list[str] | None = None, sections: list | None = None) -> str:
    """The capacity rows of every Load section of the runs as a Markdown table: backend, loop, target,
    capacity (the page's summary wording) and what limited it; ``targets``: only these targets' rows (default:
    all)."""
    rows = [  # every load section's (one a load workload)
        r
        for s in (sections if sections is not None else load_sections(ds))
        if s.data and not s.data["cap"]["capacity"].empty
        for r in s.data["cap"]["capacity"].to_dict("records")
    ]
    if not rows:
        return ""
    lines = ["| backend | variant | loop | target | capacity | what limited it |", "|---" * 6 + "|"]
    for r in rows:
        if targets and r["target"] not in targets:
            continue
        limiter = r["limiter"] if isinstance(r["limiter"], str) else "–"
        lines.append(
            f"| {r['backend']} | {r['workload']} · {r['mode']} | {r['loop']} | {r['target']} | "
            f"{headline_text(r)} | {limiter} |"
        )
    return "\n".join(lines) + "\n"


def level_mixes(records) -> dict[tuple, str]:
    """(backend, workload, variant, level) -> the mix digest of the level's requests, as the page has it."""
    reqs = requests(records)
    return {
        key: mix_of(g.to_dict("records")) for key, g in reqs.groupby(["backend", "workload", "mode", "case"])
    }


def main(argv: list[str] | None = None) -> int:
    """``python -m llm_call_anatomy.workloads.load.report.load_table``: print the load levels of the runs as a
    Markdown table; exit 2 with one line when the runs cannot be read or hold no load records."""
    p = argparse.ArgumentParser(
        prog="python -m llm_call_anatomy.workloads.load.report.load_table",
        description=__doc__.splitlines()[0],
    )
    p.add_argument("run_dirs", nargs="+", type=Path, metavar="RUN_DIR")
    p.add_argument(
        "--slo",
        type=slo_target,
        action="append",
        default=None,
        help="goodput target in compare.py's --slo grammar, e.g. chat:ttft_p90_ms=2000,tpot_p90_ms=200",
    )
    p.add_argument(
        "--merge-starts",
        action="store_true",
        help="count runs of one backend with the same setup as engine starts of one column",
    )
    p.add_argument(
        "--capacity", action="store_true", help="add the capacity table (the page's summary words)"
    )
    p.add_argument(
        "--capacity-only",
        action="store_true",
        help="print the capacity table alone (the block README.md quotes: lab/tests regenerates it)",
    )
    p.add_argument(
        "--target",
        action="append",
        default=None,
        metavar="NAME",
        help="the capacity table's rows of this target only (repeatable; default: every target)",
    )
    p.add_argument(
        "--inproc-server",
        action="store_true",
        help="add the page's notes where an engine in process and its own server disagree on a capacity",
    )
    args = p.parse_args(argv)
    try:
        slo = goodput_pair(args.slo)
        ds = read_runs(args.run_dirs, merge_starts=args.merge_starts)
    except ReportError as exc:
        print(f"python -m llm_call_anatomy.workloads.load.report.load_table: error: {exc}", file=sys.stderr)
        return 2
    levels = per_level(ds.records, slo)
    if levels.empty:
        print(
            "python -m llm_call_anatomy.workloads.load.report.load_table: error: "
            "no load records in these runs",
            file=sys.stderr,
        )
        return 2
    if args.capacity_only:
        print(capacity_table(ds, args.target), end="")
        return 0
    print(table(levels, level_mixes(ds.records)), end="")
    sections = load_sections(ds) if args.capacity or args.inproc_server else []
    if args.capacity:
        print("\n" + capacity_table(ds, args.target, sections), end="")
    if args.inproc_server:
        print("\n" + inproc_server_notes(sections), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
