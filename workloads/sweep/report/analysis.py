"""Length sweep: prefill and decode vs prompt length, the TTFT = a + b·N fit, and the roofline.

Prefill time is the TTFT of a prompt of N tokens from an empty cache; decode is ms per token
after the first. Throughputs are derived from the medians: prefill tokens/s = N / TTFT,
decode tokens/s = 1000 / (ms per token). The roofline compares both with what the GPU's
datasheet allows for this model (see :mod:`reports.roofline`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from llm_call_anatomy.reports import fmt, kvcache, roofline
from llm_call_anatomy.reports.model import Caveat
from llm_call_anatomy.reports.roofline import REPLY_TOKENS, Roof
from llm_call_anatomy.reports.stats import agg, num, over_starts, ratio


def per_length(df: pd.DataFrame, reply_tokens: int = REPLY_TOKENS) -> pd.DataFrame:
    """Per backend and N: prefill ms, decode ms/token (median
    [IQR] n), throughputs, their ratio, decode share."""
    if df.empty:
        return pd.DataFrame()
    df = df.assign(N=df["prompt_tokens"])
    out = agg(df, ["backend", "N"], "ttft_ms", "prefill").merge(
        agg(df, ["backend", "N"], "decode_ms_per_token", "decode"), on=["backend", "N"]
    )
    out["N"] = out["N"].astype(int)
    if "start" in df:  # the spread across engine starts, beside the IQR within (pooled over starts)
        across = []
        for (b, n), g in df.groupby(["backend", "N"], sort=False):
            p, d = over_starts(g["ttft_ms"], g["start"]), over_starts(g["decode_ms_per_token"], g["start"])
            across.append(
                {
                    "backend": b,
                    "N": int(n),
                    "starts": max(p.starts, d.starts),
                    "prefill_across": p.across,
                    "decode_across": d.across,
                }
            )
        out = out.merge(pd.DataFrame(across), on=["backend", "N"], how="left")
    out["prefill_tps"] = [
        ratio(n, p / 1e3) if num(p) else None for n, p in zip(out["N"], out["prefill_med"], strict=True)
    ]
    out["decode_tps"] = [ratio(1e3, d) for d in out["decode_med"].map(num)]
    out["tps_ratio"] = [
        ratio(num(p), num(d)) for p, d in zip(out["prefill_tps"], out["decode_tps"], strict=True)
    ]
    out["decode_share"] = [
        decode_share(num(p), num(d), reply_tokens)
        for p, d in zip(out["prefill_med"], out["decode_med"], strict=True)
    ]
    order = {b: i for i, b in enumerate(dict.fromkeys(df["backend"]))}
    out = out.assign(_o=out["backend"].map(order)).sort_values(["_o", "N"]).drop(columns="_o")
    return out.reset_index(drop=True)


def decode_share(prefill_ms: float | None, decode_ms: float | None, reply_tokens: int) -> float | None:
    """Share of a call spent decoding when the reply has
    ``reply_tokens`` tokens (the first comes from prefill)."""
    if prefill_ms is None or decode_ms is None:
        return None
    decoding = (reply_tokens - 1) * decode_ms
    return decoding / (prefill_ms + decoding)


R2_FLOOR = 0.9  # below this r², the line does not describe TTFT well enough to call ``a`` a floor


@dataclass(frozen=True)
class Fit:
    backend: str
    a_ms: float  # the per-call floor, where the line holds (r² ≥ R2_FLOOR)
    b_ms_per_token: float
    r2: float | None
    points: int
    lengths: list[int]
    note: str = ""  # which region was fitted, when not every length

    @property
    def holds(self) -> bool:
        """The line describes TTFT: three lengths or more (a line through two always fits), r² ≥ R2_FLOOR."""
        return self.why_not is None

    @property
    def why_not(self) -> str | None:
        """Why the line is no law of TTFT (None where it holds): too few lengths, or an r² below R2_FLOOR."""
        if len(self.lengths) < 3:
            return f"{len(self.lengths)} lengths: a line through them always fits"
        if self.r2 is None or self.r2 < R2_FLOOR:
            return f"the line does not hold (r² < {R2_FLOOR})"
        return None

    def knee(self) -> float | None:
        """The N at which the per-token part equals the floor (below it every call costs about ``a``)."""
        return self.a_ms / self.b_ms_per_token if self.b_ms_per_token > 0 else None


def fit_line(x: list[float], y: list[float]) -> tuple[float, float, float | None]:
    """Least squares y = a + b·x; returns (a, b, r²)."""
    xs, ys = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    b, a = np.polyfit(xs, ys, 1)
    total = float(((ys - ys.mean()) ** 2).sum())
    resid = float(((ys - (a + b * xs)) ** 2).sum())
    return float(a), float(b), (1 - resid / total) if total > 0 else None


def _fit(backend: str, g: pd.DataFrame, note: str = "") -> Fit:
    a, b, r2 = fit_line(g["prompt_tokens"].tolist(), g["ttft_ms"].tolist())
    return Fit(backend, a, b, r2, len(g), sorted({int(n) for n in g["prompt_tokens"]}), note)


def fits(df: pd.DataFrame) -> list[Fit]:
    """TTFT = a + b·N per backend, over every measured call (needs at least two lengths).

    Where the line over all lengths fits poorly (r² < R2_FLOOR), the longest run of lengths from
    the top down where it holds (at least three lengths) is fitted as well and listed after it.
    """
    out = []
    for backend, g in df.dropna(subset=["ttft_ms", "prompt_tokens"]).groupby("backend", sort=False):
        lengths = sorted({int(n) for n in g["prompt_tokens"]})
        if len(lengths) < 2:
            continue
        whole = _fit(backend, g)
        out.append(whole)
        if whole.holds:
            continue
        for start in range(1, len(lengths) - 2):
            part = _fit(backend, g[g["prompt_tokens"] >= lengths[start]], f"N ≥ {lengths[start]} only")
            if part.holds:
                out.append(part)
                break
    return out


def against_roof(lengths: pd.DataFrame, roofs: dict[str, Roof]) -> pd.DataFrame:
    """Per backend and N: floors (datasheet and measured copy),
    measured/floor, effective bandwidth and its shares."""
    rows = []
    for r in lengths.to_dict("records"):
        roof = roofs.get(r["backend"])
        if roof is None or not roof.ok:
            continue
        n = r["N"]
        dfloor, cfloor, pfloor = (
            roof.decode_floor_ms(n),
            roof.decode_floor_ms(n, measured=True),
            roof.prefill_floor_ms(n),
        )
        decode = num(r["decode_med"])
        eff = roofline.effective_bandwidth_gbps(roof.step_bytes(n), decode) if decode else None  # type: ignore[arg-type]
        rows.append(
            {
                "backend": r["backend"],
                "N": n,
                "step_bytes": roof.step_bytes(n),
                "prefill_floor_ms": pfloor,
                "prefill_x": ratio(num(r["prefill_med"]), pfloor),
                "decode_floor_ms": dfloor,
                "decode_x": ratio(decode, dfloor),
                "copy_floor_ms": cfloor,
                "decode_x_copy": ratio(decode, cfloor),
                "effective_gbps": eff,
                "bandwidth_share": ratio(eff, roof.peak.bandwidth_gbps),  # type: ignore[union-attr]
                "copy_share": ratio(eff, roof.copy_gbps),
            }
        )
    return pd.DataFrame(rows)


# --- the section: its data and caveats (the kind's report half, ``workloads.sweep.report.KIND``) ---
def data(rows: pd.DataFrame, ctx: Any, name: str) -> dict[str, Any]:
    """The section's data (``ReportKind.analyse``)."""
    roofs = ctx.roofs
    lengths = per_length(rows)
    notes = list(
        dict.fromkeys(roofs[b].note for b in dict.fromkeys(rows["backend"]) if b in roofs and roofs[b].note)
    )
    return {
        "lengths": lengths,
        "fits": fits(rows),
        "roof_notes": notes,
        "vs_roof": against_roof(lengths, roofs) if not lengths.empty else pd.DataFrame(),
        # what the KV cache costs, from env.json only (reports.kvcache), and where KV reads overtake weights
        **kvcache.section_data(ctx.ds, ctx.blocks, list(dict.fromkeys(rows["backend"]))),
        **kv_bend(roofs, list(dict.fromkeys(rows["backend"]))),
    }


def kv_bend(roofs: dict[str, Roof], backends: list[str]) -> dict[str, Any]:
    """The predicted bend (``kv_bend``: :func:`reports.kvcache.bend_table`) for the first backend whose
    decode-step bytes are known, with its GPU's datasheet bandwidth where known (``kv_bend_gpu``)."""
    roof = next((roofs[b] for b in backends if b in roofs and roofs[b].step is not None), None)
    if roof is None or roof.step is None:
        return {"kv_bend": pd.DataFrame(), "kv_bend_gpu": ""}
    bw = roof.peak.bandwidth_gbps if roof.peak else None
    label = f"{roof.peak.label}, {fmt.n(bw)} GB/s datasheet" if roof.peak else ""
    return {"kv_bend": kvcache.bend_table(roof.step, bw), "kv_bend_gpu": label}


def caveats(s: Any, report: Any) -> list[Caveat]:
    """The section's caveats: the TTFT fits, the roofline, launch overhead."""
    out = []
    for f in s.data["fits"]:
        knee = f.knee()
        law = (
            f"TTFT ≈ {fmt.n(f.a_ms)} ms + {fmt.n(f.b_ms_per_token * 1e3)} "
            f"µs × N, r² = {fmt.n(f.r2, 3)}, {f.points} calls"
        )
        if f.note:
            law += f", {f.note}"
        if not f.holds:
            out.append(
                Caveat(
                    s.name,
                    f"{f.backend}: TTFT is not a straight line in N ({law}; {f.why_not}); its a is "
                    "not a per-call floor.",
                )
            )
        elif f.a_ms <= 0:
            out.append(
                Caveat(
                    s.name,
                    f"{f.backend}: TTFT grows faster than linearly with the prompt, "
                    "so the straight-line fit has no positive per-call floor "
                    f"({law}): attention's quadratic cost shows at these lengths.",
                )
            )
        elif knee is None:
            out.append(Caveat(s.name, f"{f.backend}: TTFT does not grow with the prompt here ({law})."))
        elif knee < min(f.lengths):
            out.append(
                Caveat(
                    s.name,
                    f"{f.backend}: at every measured length (N ≥ {min(f.lengths)}) the per-token cost "
                    f"dominates the per-call floor a ≈ {fmt.n(f.a_ms)} ms ({law}).",
                )
            )
        else:
            where = (
                f"N≈{fmt.n(knee)}" if knee <= max(f.lengths) else f"N={max(f.lengths)} (the longest measured)"
            )
            out.append(
                Caveat(
                    s.name,
                    f"{f.backend}: below {where} tokens every prefill costs about the same: the floor "
                    f"a ≈ {fmt.n(f.a_ms)} ms is at least half the TTFT there ({law}).",
                )
            )
    roofs = [report.roofs[b] for b in s.backends if b in report.roofs]
    missing = [r for r in roofs if not r.ok]
    if missing:
        notes = dict.fromkeys(r.note for r in missing)
        out.append(
            Caveat(
                s.name,
                "No roofline for "
                + "; ".join(
                    f"{', '.join(r.backend for r in missing if r.note == note)} ({note})" for note in notes
                )
                + ".",
            )
        )
    vs = s.data["vs_roof"]
    if not vs.empty:
        for backend, g in vs.groupby("backend", sort=False):
            lo, hi = g.iloc[0], g.iloc[-1]
            roof = report.roofs[backend]
            lengths = s.data["lengths"]
            decode = lengths[(lengths["backend"] == backend) & (lengths["N"] == lo["N"])].iloc[0]
            out.append(
                Caveat(
                    s.name,
                    f"{backend}: decode is {fmt.times(lo['decode_x'])} the roofline at N={lo['N']}: "
                    f"{fmt.n(decode['decode_med'])} ms/token vs a floor of {fmt.n(lo['decode_floor_ms'])} ms "
                    f"({fmt.n(lo['step_bytes'] / 1e9)} GB read per step / "
                    f"{fmt.n(roof.peak.bandwidth_gbps)} GB/s, {roof.peak.label} datasheet); effective "
                    f"bandwidth {fmt.n(lo['effective_gbps'])} GB/s = {fmt.pct(lo['bandwidth_share'])} of "
                    f"peak. Prefill at N={hi['N']} is {fmt.times(hi['prefill_x'])} its compute floor "
                    f"({fmt.n(hi['prefill_floor_ms'])} ms at {fmt.n(roof.peak.tflops)} TFLOP/s).",
                )
            )
    out += launch_overhead(s, report)
    return out


def in_process_transformers(engine: dict) -> bool:
    """env.json's engine facts say: HF transformers driven in the measuring process (not behind a server)."""
    return "transformers" in engine and "server_kind" not in engine


def cuda_graphs(engine: dict) -> bool:
    """env.json's engine facts say the decode runs as CUDA graphs:
    ``cuda_graphs`` where the adapter reports it, else HF's ``compile`` entry
    (``mode='reduce-overhead'`` captures CUDA graphs; runs before the flag)."""
    flag = engine.get("cuda_graphs")
    return flag if isinstance(flag, bool) else "compile" in engine


def launch_overhead(s: Any, report: Any) -> list[Caveat]:
    """How much of HF eager's decode gap to the roofline do CUDA graphs close?

    Decided from env.json, not backend names: an HF engine in process without CUDA graphs against
    one with them (``cuda_graphs``), the other engines of the section (not HF in process) shown for
    comparison."""
    engine = {b: report.ds.env_of(b).get("engine") or {} for b in report.ds.backends}
    hf = {b for b, e in engine.items() if in_process_transformers(e)}
    lengths = s.data["lengths"]
    eager = [b for b in s.backends if b in hf and not cuda_graphs(engine[b])]
    graphs = [b for b in report.ds.backends if b in hf and cuda_graphs(engine[b])]
    if not eager or not graphs:
        return []
    if graphs[0] not in s.backends:
        why = next(
            (st.reasons()[0] for st in report.status if st.backend == graphs[0] and st.reasons()),
            "no measurements",
        )
        return [Caveat(s.name, f"Launch overhead not measured: {graphs[0]} did not run ({why}).")]
    e, g = eager[0], graphs[0]
    common = sorted(set(lengths[lengths["backend"] == e]["N"]) & set(lengths[lengths["backend"] == g]["N"]))
    if not common:
        return []
    at = common[0]

    def decode(b: str) -> float | None:
        row = lengths[(lengths["backend"] == b) & (lengths["N"] == at)]
        return num(row["decode_med"].iloc[0]) if len(row) else None

    de, dg = decode(e), decode(g)
    if de is None or dg is None:
        return []
    floor = report.roofs[e].decode_floor_ms() if e in report.roofs else None
    others = [
        f"{b} {fmt.n(decode(b))} ms"
        + (f" ({fmt.times(decode(b) / floor)} floor)" if floor and decode(b) else "")
        for b in s.backends
        if b not in (e, g) and b not in hf
    ]
    text = (
        f"CUDA graphs take HF's decode at N={at} from "
        f"{fmt.n(de)} ms/token ({e}) to {fmt.n(dg)} ms/token ({g})"
    )
    if floor and de > floor:
        share = (de - dg) / (de - floor)
        text += (
            f"; the roofline floor is {fmt.n(floor)} ms, so launch "
            f"overhead explains {fmt.pct(share)} of HF eager's gap to it"
        )
    else:
        text += f" ({fmt.pct((de - dg) / de)} less; no roofline to compare the gap with)"
    if others:
        text += "; for comparison: " + ", ".join(others)
    return [Caveat(s.name, text + ".")]
