"""Sweep section: prefill and decode vs N (charts with the roofline), per-backend tables, the TTFT fit."""

from __future__ import annotations

from typing import Any

from markupsafe import Markup

from llm_call_anatomy.reports import fmt, reference
from llm_call_anatomy.reports.kinds import ReportKind
from llm_call_anatomy.reports.roofline import REPLY_TOKENS
from llm_call_anatomy.reports.stats import stat_of
from llm_call_anatomy.reports.views import Block, Table, chart, compact, h3, p, side, table
from llm_call_anatomy.workloads.sweep.report import analysis as sw
from llm_call_anatomy.workloads.sweep.report import charts, jobs, kv
from llm_call_anatomy.workloads.sweep.report.analysis import R2_FLOOR


def length_table(d: dict[str, Any], backend: str) -> Table:
    """One backend's sweep table: per prompt length the prefill and decode medians, rates, decode share and,
    where a roofline is known, the floors and effective bandwidth; the seed's reference row last."""
    vs = d["vs_roof"]
    roof = vs[vs["backend"] == backend] if not vs.empty else vs
    cols = [
        "N",
        "prefill ms",
        "decode ms/token",
        "prefill tok/s",
        "decode tok/s",
        "ratio",
        f"decode share, {REPLY_TOKENS}-token reply",
    ]
    copy = len(roof) and roof["copy_floor_ms"].notna().any()
    if len(roof):
        cols += ["prefill ÷ compute floor", "decode ÷ floor (datasheet)"] + (
            ["decode ÷ floor (measured copy)"] if copy else []
        )
        cols += ["effective GB/s (of datasheet" + (" / of copy)" if copy else ")")]
    lengths = d["lengths"]
    starts = "starts" in lengths and (lengths["starts"] > 1).any()
    if starts:
        cols[3:3] = ["starts: prefill / decode ± across"]
    t = Table(cols, numeric=set(range(len(cols))))
    for x in lengths[lengths["backend"] == backend].to_dict("records"):
        row = [fmt.n(x["N"]), fmt.stat(stat_of(x, "prefill")), fmt.stat(stat_of(x, "decode"))]
        if starts:
            row.append(
                f"{fmt.n(x['starts'])}: ±{fmt.rel(x['prefill_across'])} / ±{fmt.rel(x['decode_across'])}"
                if x.get("starts", 0) > 1
                else "1: –"
            )
        row += [
            fmt.n(x["prefill_tps"], 0),
            fmt.n(x["decode_tps"], 1),
            fmt.times(x["tps_ratio"]),
            fmt.pct(x["decode_share"]),
        ]
        if len(roof):
            rf = roof[roof["N"] == x["N"]]
            r = rf.iloc[0].to_dict() if len(rf) else {}
            row += [fmt.times(r.get("prefill_x")), fmt.times(r.get("decode_x"), 2)] + (
                [fmt.times(r.get("decode_x_copy"), 2)] if copy else []
            )
            share = fmt.pct(r.get("bandwidth_share")) + (f" / {fmt.pct(r.get('copy_share'))}" if copy else "")
            row += [f"{fmt.n(r.get('effective_gbps'))} ({share})" if r else "–"]
        t.add(row)
    ref = (
        [fmt.n(reference.SWEEP["N"]), reference.LABEL, f"≈ {fmt.n(reference.DECODE['ms_per_token'])}"]
        + ([""] if starts else [])
        + ["", "", fmt.times(reference.SWEEP["tps_ratio"]), ""]
    )
    if len(roof):
        ref += (
            ["", ""]
            + ([""] if copy else [])
            + [f"({fmt.pct(reference.DECODE['bandwidth_share'])} of the A100's)"]
        )
    t.add(ref, "ref")
    return t


def fit_table(fits: list) -> Table:
    """The TTFT = a + b·N fit per backend: lengths fitted, a, b in µs per prompt token, r², calls, whether
    a is a per-call floor (only where r² ≥ R2_FLOOR; rows below it styled 'poor-fit'), and the N where
    b·N = a."""
    t = Table(
        [
            "backend",
            "lengths fitted",
            "a (ms)",
            "b (µs per prompt token)",
            "r²",
            "calls",
            "a is",
            "N where b·N = a",
        ],
        numeric={2, 3, 4, 5, 7},
    )
    for f in fits:
        what = (
            ("the per-call floor" if f.a_ms > 0 else "no floor (a ≤ 0)")
            if f.holds
            else f"not a floor: {f.why_not}"
        )
        t.add(
            [
                f.backend,
                f.note or f"all ({', '.join(map(str, f.lengths))})",
                fmt.n(f.a_ms),
                fmt.n(f.b_ms_per_token * 1e3),
                fmt.n(f.r2, 3),
                f.points,
                what,
                fmt.n(f.knee()) if f.holds and f.a_ms > 0 else "–",
            ],
            "" if f.holds else "poor-fit",
        )
    return t


def blocks(section, slots: dict[str, Markup], roofs: dict | None = None) -> list[Block]:
    """The sweep section's blocks: the prefill and decode charts, each backend's length table, how to read it
    (the floors' definitions), what the KV cache costs (``kv.py``), and the TTFT = a + b·N fits."""
    d = section.data
    roofs = {b: r for b, r in (roofs or {}).items() if b in section.backends}
    floors = ("No roofline: " + "; ".join(d["roof_notes"]) + ".") if d["roof_notes"] else ""
    vs = d["vs_roof"]
    if not vs.empty:
        lo, hi = vs.iloc[0], vs[vs["backend"] == vs["backend"].iloc[0]].iloc[-1]
        notes = "; ".join(dict.fromkeys(r.step.note for r in roofs.values() if r.ok and r.step is not None))
        floors += (
            f" Decode floor = bytes a decode step reads ÷ memory bandwidth: {notes}, the cache taken at "
            f"mid-reply (N + {REPLY_TOKENS // 2}): {fmt.n(lo['step_bytes'] / 1e9)} GB at N={lo['N']}, "
            f"{fmt.n(hi['step_bytes'] / 1e9)} GB at N={hi['N']}. Two floors: the datasheet bandwidth and, "
            "where given (--copy-gbps), a measured device-to-device copy. Prefill's is a compute floor: 2 × "
            "params × N ÷ peak FLOP/s. Effective GB/s = bytes read per step ÷ decode time."
        )
    out: list[Block | None] = [
        h3("Prefill and decode vs prompt length"),
        side([("", compact([chart(slots["prefill"]), chart(slots["decode"]), chart(slots["decode_x"])]))]),
        side([(b, [table(length_table(d, b))]) for b in section.backends]),
        p(
            "Medians and IQRs pool every call of every engine start; with several starts, '± across' is half "
            "the range of the per-start medians, relative to the median. Ratio = prefill tokens/s ÷ decode "
            f"tokens/s. Decode share = ({REPLY_TOKENS - 1} × decode) ÷ (prefill + {REPLY_TOKENS - 1} × "
            f"decode): the first of {REPLY_TOKENS} tokens comes from the prefill. {floors}",
            muted=True,
        ),
    ]
    out += kv.blocks(d)
    if d["fits"]:
        out += [
            h3("TTFT = a + b·N (least squares over every call)"),
            table(fit_table(d["fits"])),
            p(
                f"r² below {R2_FLOOR}: a straight line does not describe TTFT against N for that backend, so "
                "its a is not a per-call floor; where a region of lengths from the top down fits (r² ≥ "
                f"{R2_FLOOR}, three lengths or more), that fit is listed below it.",
                muted=True,
            ),
        ]
    return compact(out)


KIND = ReportKind(
    "sweep",
    sw.data,
    blocks=lambda s, slots, report: blocks(s, slots, roofs=report.roofs),
    charts={
        "prefill": (
            lambda d, r: charts.sweep_phase(d["lengths"], r.roofs, "prefill", r.ds.backends),
            "prefill vs N",
        ),
        "decode": (
            lambda d, r: charts.sweep_phase(d["lengths"], r.roofs, "decode", r.ds.backends),
            "decode vs N",
        ),
        "decode_x": (
            lambda d, r: charts.decode_vs_floor(d["lengths"], d["vs_roof"], r.ds.backends),
            "decode as a multiple of the floor",
        ),
    },
    caveats=sw.caveats,
    jobs=lambda s, rows, report: jobs.sweep_jobs(s, rows),
)
