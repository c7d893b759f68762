"""Sweep section: prefill and decode vs N (charts with the roofline), per-backend tables, the TTFT fit."""

from __future__ import annotations

from typing import Any

from markupsafe import Markup

from reports import fmt, reference
from reports.analysis.sweep import REPLY_TOKENS
from reports.stats import stat_of
from reports.views import Block, Table, chart, compact, h3, p, side, table


def length_table(d: dict[str, Any], backend: str) -> Table:
    vs = d["vs_roof"]
    roof = vs[vs["backend"] == backend] if not vs.empty else vs
    cols = ["N", "prefill ms", "decode ms/token", "prefill tok/s", "decode tok/s", "ratio", f"decode share, {REPLY_TOKENS}-token reply"]
    if len(roof):
        cols += ["prefill ÷ floor", "decode ÷ floor", "effective GB/s (of peak)"]
    t = Table(cols, numeric=set(range(len(cols))))
    lengths = d["lengths"]
    for x in lengths[lengths["backend"] == backend].to_dict("records"):
        row = [fmt.n(x["N"]), fmt.stat(stat_of(x, "prefill")), fmt.stat(stat_of(x, "decode")), fmt.n(x["prefill_tps"], 0),
               fmt.n(x["decode_tps"], 1), fmt.times(x["tps_ratio"]), fmt.pct(x["decode_share"])]
        if len(roof):
            rf = roof[roof["N"] == x["N"]]
            r = rf.iloc[0].to_dict() if len(rf) else {}
            row += [fmt.times(r.get("prefill_x")), fmt.times(r.get("decode_x")),
                    f"{fmt.n(r.get('effective_gbps'))} ({fmt.pct(r.get('bandwidth_share'))})" if r else "–"]
        t.add(row)
    ref = [fmt.n(reference.SWEEP["N"]), reference.LABEL, f"≈ {fmt.n(reference.DECODE['ms_per_token'])}", "", "",
           fmt.times(reference.SWEEP["tps_ratio"]), ""]
    if len(roof):
        ref += ["", "", f"({fmt.pct(reference.DECODE['bandwidth_share'])})"]
    t.add(ref, "ref")
    return t


def fit_table(fits: list) -> Table:
    t = Table(["backend", "a: per-call floor (ms)", "b (µs per prompt token)", "r²", "calls", "N where b·N = a"], numeric={1, 2, 3, 4, 5})
    for f in fits:
        t.add([f.backend, fmt.n(f.a_ms), fmt.n(f.b_ms_per_token * 1e3), fmt.n(f.r2, 3), f.points,
               fmt.n(f.knee()) if f.a_ms > 0 else "–"])
    return t


def blocks(section, slots: dict[str, Markup]) -> list[Block]:
    d = section.data
    floors = ("No roofline: " + "; ".join(d["roof_notes"]) + ".") if d["roof_notes"] else ""
    if not d["vs_roof"].empty:
        floors += (" Floors: decode = weight bytes ÷ memory bandwidth, prefill = 2 × params × N ÷ peak FLOP/s "
                   "(datasheet values, see the environment card); effective GB/s = weight bytes ÷ decode time.")
    out: list[Block | None] = [
        h3("Prefill and decode vs prompt length"),
        side([("", compact([chart(slots.get("prefill", Markup(""))), chart(slots.get("decode", Markup("")))]))]),
        side([(b, [table(length_table(d, b))]) for b in section.backends]),
        p(f"Ratio = prefill tokens/s ÷ decode tokens/s. Decode share = ({REPLY_TOKENS - 1} × decode) ÷ (prefill + "
          f"{REPLY_TOKENS - 1} × decode): the first of {REPLY_TOKENS} tokens comes from the prefill. {floors}", muted=True),
    ]
    if d["fits"]:
        out += [h3("TTFT = a + b·N (least squares over every call)"), table(fit_table(d["fits"]))]
    return compact(out)
