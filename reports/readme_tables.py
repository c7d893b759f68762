"""``python -m llm_call_anatomy.reports.readme_tables RUN_DIR ... [--write lab/h200-results.md]``: the result
table the docs quote, from runs.

The single source of the figures the docs quote: it assembles the report exactly as
``python compare.py report`` does (same options) and prints a Markdown table, one column per backend,
with each figure's n as it is. ``--write FILE`` replaces the block between
``<!-- readme-tables: ARGS -->`` and ``<!-- /readme-tables -->`` in FILE (ARGS: this command's
arguments, so the block says how it was made); ``tests/reports/test_readme_tables.py`` checks that the
docs (and the example READMEs) match a fresh run of the script.
"""

from __future__ import annotations

import argparse
import re
import shlex
import sys
from pathlib import Path

from llm_call_anatomy.reports import fmt
from llm_call_anatomy.reports.__main__ import copy_bandwidth, positive, run_backend
from llm_call_anatomy.reports.assemble import assemble
from llm_call_anatomy.reports.kvcache import kv_tokens
from llm_call_anatomy.reports.model import Report
from llm_call_anatomy.reports.runs import ReportError, read_runs
from llm_call_anatomy.reports.stats import num, spread

BLOCK = re.compile(r"<!-- readme-tables: (?P<args>.*?) -->\n.*?<!-- /readme-tables -->", re.S)


def _span(values: list[float], digits: int | None = None, suffix: str = "") -> str:
    vals = [v for v in values if v is not None and v == v]
    if not vals:
        return "–"
    lo, hi = fmt.n(min(vals), digits), fmt.n(max(vals), digits)
    return (lo if lo == hi else f"{lo}–{hi}") + suffix


def _section(report: Report, kind: str):
    return next((s for s in report.sections if s.kind == kind and s.data), None)


Rows = list[tuple[str, dict[str, str]]]


def rows(report: Report) -> Rows:
    """(row label, {backend: cell}) for every row the runs can fill: the sweep's, the conversation's, the JSON
    workload's, then each engine start's facts."""
    return _sweep_rows(report) + _conversation_rows(report) + _json_rows(report) + _fact_rows(report)


def _sweep_rows(report: Report) -> Rows:
    out: Rows = []
    df = report.ds.measured()
    starts = {b: g["start"].nunique() for b, g in df.groupby("backend", sort=False)}
    sweep = _section(report, "sweep")
    if sweep is None:
        return out
    lengths, vs = sweep.data["lengths"], sweep.data["vs_roof"]
    ns = sorted(set(lengths["N"]))
    reps = {b: spread(g["decode_n"]) for b, g in lengths.groupby("backend", sort=False)}
    out.append(
        (
            "engine starts · calls per N, all starts (median over N)",
            {b: f"{starts.get(b, 0)} · {fmt.n(reps[b].median)}" for b in reps},
        )
    )
    out.append(
        (
            f"decode ms/token, N = {ns[0]} … {ns[-1]} (medians)",
            {b: _span(list(g["decode_med"].map(num))) for b, g in lengths.groupby("backend", sort=False)},
        )
    )
    if not vs.empty:
        out.append(
            (
                f"bytes a decode step reads, GB, N = {ns[0]} … {ns[-1]}",
                {b: _span(list(g["step_bytes"] / 1e9)) for b, g in vs.groupby("backend", sort=False)},
            )
        )
        for col, floor_col, what in (
            ("decode_x_copy", "copy_floor_ms", "measured copy bandwidth"),
            ("decode_x", "decode_floor_ms", "datasheet bandwidth"),
        ):
            if vs[col].notna().any():
                floor = _span(list(vs[floor_col]), 2)
                out.append(
                    (
                        f"÷ floor {floor} ms ({what}; bytes a step reads)",
                        {b: _span(list(g[col]), 2, "×") for b, g in vs.groupby("backend", sort=False)},
                    )
                )
    picks = list(dict.fromkeys((ns[0], ns[len(ns) // 2], ns[-1])))  # fewer where the sweep has fewer
    engine = {b for b, g in df.groupby("backend", sort=False) if not g["ttft_common"].all()}
    cells = {}
    for b, g in lengths.groupby("backend", sort=False):
        vals = [
            fmt.n(num(g[g["N"] == n]["prefill_med"].iloc[0])) if (g["N"] == n).any() else "–" for n in picks
        ]
        cells[b] = " / ".join(vals) + (" (engine's own)" if b in engine else "")
    out.append((f"TTFT ms at N = {' / '.join(map(str, picks))}", cells))
    fits: dict[str, str] = {}
    for f in sweep.data["fits"]:
        if f.backend in fits and not f.holds:
            continue
        if len(f.lengths) < 3:
            text = f"no floor: {f.why_not}"
        elif not f.holds:
            text = f"no floor: r² {fmt.n(f.r2, 2)} < 0.9"
        elif f.a_ms <= 0:
            text = f"no floor: a ≤ 0, TTFT grows faster than linearly (r² {fmt.n(f.r2, 2)})"
        else:
            text = f"{fmt.n(f.a_ms)} ms (r² {fmt.n(f.r2, 2)}{', ' + f.note if f.note else ''})"
        fits[f.backend] = text if f.backend not in fits else f"{fits[f.backend]}; {text}"
    out.append(("per-call floor a of TTFT = a + b·N", fits))
    return out


def _conversation_rows(report: Report) -> Rows:
    out: Rows = []
    conv = _section(report, "conversation")
    if conv is None:
        return out
    tot = conv.data["totals"]
    for col, label, unit in (
        ("ttft", "conversation, summed TTFT full → cached", " ms"),
        ("tokens", "conversation, tokens computed full → cached", ""),
    ):
        cells = {}
        for b, g in tot.groupby("backend", sort=False):
            full, cached = (
                num(g[g["mode"] == m][f"{col}_med"].iloc[0]) if (g["mode"] == m).any() else None
                for m in ("full", "cached")
            )
            cells[b] = (
                f"{fmt.n(full)} → {fmt.n(cached)}{unit}"
                if cached is not None
                else f"{fmt.n(full)}{unit} (full only)"
            )
        out.append((label, cells))
    return out


def _json_rows(report: Report) -> Rows:
    out: Rows = []
    js = _section(report, "json")
    if js is None:
        return out
    over = js.data["overhead"]
    modes = set(over["mode"]) if not over.empty else set()
    rates = js.data["rates"]
    rates = rates[rates["mode"].isin(modes)]
    if not rates.empty:
        out.append(
            (
                "constrained JSON valid, all temperatures",
                {
                    b: (
                        f"{fmt.pct(g['valid'].sum() / g['n'].sum())} "
                        f"({int(g['valid'].sum())} of {int(g['n'].sum())})"
                    )
                    for b, g in rates.groupby("backend", sort=False)
                },
            )
        )
    cells = {}
    for r in over.to_dict("records"):
        c, u = r["constrained"], r["unconstrained"]
        noise = ((c.q3 - c.q1) + (u.q3 - u.q1)) / 2
        text = f"{r['extra_ms']:+.2f} ms ({r['extra_ms'] / u.median:+.1%})".replace("-", "−")
        cells[r["backend"]] = (
            text if abs(r["extra_ms"]) > noise else f"not resolved ({text}, inside ±{fmt.n(noise)} ms)"
        )
    if cells:
        out.append(("grammar cost per decoded token (constrained − strict)", cells))
    return out


def _fact_rows(report: Report) -> Rows:
    out: Rows = []
    facts = {
        "engine start-up s": lambda s: num(s.get("startup_s")),
        "KV-cache capacity, tokens": kv_tokens,
        "peak GPU memory GiB": lambda s: (num(s.get("peak_gpu_memory_bytes")) or 0) / 2**30 or None,
    }
    for label, get in facts.items():
        cells = {}
        for b in report.ds.backends:
            st = spread(get(s) for s in report.ds.start_envs(b))
            if st.ok:
                cells[b] = fmt.n(st.median) + (
                    f" [{fmt.n(st.lo)}–{fmt.n(st.hi)}] ({st.n} starts)" if st.n > 1 else ""
                )
        if cells:
            out.append((label, cells))
    return out


def table(report: Report) -> str:
    backends = [b for b in report.ds.backends if any(b in cells for _, cells in rows(report))]
    lines = ["| | " + " | ".join(backends) + " |", "|---" * (len(backends) + 1) + "|"]
    for label, cells in rows(report):
        lines.append(f"| {label} | " + " | ".join(cells.get(b, "–") for b in backends) + " |")
    return "\n".join(lines) + "\n"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m llm_call_anatomy.reports.readme_tables",
        description=" ".join(__doc__.split("\n\n")[0].split()),
    )
    p.add_argument("run_dirs", nargs="+", type=Path, metavar="RUN_DIR")
    p.add_argument("--drop", type=run_backend, action="append", default=[], metavar="RUN:BACKEND")
    p.add_argument("--copy-gbps", type=copy_bandwidth, default=None, metavar="GBPS|FILE.json")
    p.add_argument("--bandwidth-gbps", type=positive, default=None)
    p.add_argument("--merge-starts", action="store_true")
    p.add_argument(
        "--write", type=Path, default=None, metavar="FILE", help="replace the readme-tables block of FILE"
    )
    return p


def generate(args: argparse.Namespace) -> str:
    report = assemble(
        read_runs(args.run_dirs, drop=args.drop, merge_starts=args.merge_starts),
        bandwidth_gbps=args.bandwidth_gbps,
        copy_gbps=args.copy_gbps,
    )
    return table(report)


def main(argv: list[str] | None = None) -> int:
    """``python -m llm_call_anatomy.reports.readme_tables``: print the tables, or with ``--write FILE``
    replace the file's ``<!-- readme-tables -->`` block with them (the command that made them kept in the
    block's marker)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser().parse_args(argv)
    try:
        text = generate(args)
    except ReportError as exc:
        print(f"python -m llm_call_anatomy.reports.readme_tables: error: {exc}", file=sys.stderr)
        return 2
    if args.write is None:
        print(text, end="")
        return 0
    at = argv.index("--write") if "--write" in argv else None
    kept = argv[:at] + argv[at + 2 :] if at is not None else [a for a in argv if not a.startswith("--write=")]
    block = f"<!-- readme-tables: {shlex.join(kept)} -->\n{text}<!-- /readme-tables -->"
    try:
        old = args.write.read_text(encoding="utf-8")
    except OSError as exc:
        print(
            f"python -m llm_call_anatomy.reports.readme_tables: error: {args.write}: {exc.strerror}",
            file=sys.stderr,
        )
        return 2
    if not BLOCK.search(old):
        print(
            f"python -m llm_call_anatomy.reports.readme_tables: error: {args.write} has no "
            "<!-- readme-tables: ... --> block",
            file=sys.stderr,
        )
        return 2
    args.write.write_text(BLOCK.sub(lambda _: block, old, count=1), encoding="utf-8")
    print(f"{args.write}: table regenerated")
    return 0


if __name__ == "__main__":
    sys.exit(main())
