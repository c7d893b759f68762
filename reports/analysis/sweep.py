"""Length sweep: prefill and decode vs prompt length, the TTFT = a + b·N fit, and the roofline.

Prefill time is the TTFT of a prompt of N tokens from an empty cache; decode is ms per token
after the first. Throughputs are derived from the medians: prefill tokens/s = N / TTFT,
decode tokens/s = 1000 / (ms per token). The roofline compares both with what the GPU's
datasheet allows for this model (see :mod:`reports.roofline`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from reports import roofline
from reports.stats import agg, num, over_starts, ratio

REPLY_TOKENS = 64  # "decode share of a call with a 64-token reply"


def per_length(df: pd.DataFrame, reply_tokens: int = REPLY_TOKENS) -> pd.DataFrame:
    """Per backend and N: prefill ms, decode ms/token (median [IQR] n), throughputs, their ratio, decode share."""
    if df.empty:
        return pd.DataFrame()
    df = df.assign(N=df["prompt_tokens"])
    out = agg(df, ["backend", "N"], "ttft_ms", "prefill").merge(
        agg(df, ["backend", "N"], "decode_ms_per_token", "decode"), on=["backend", "N"])
    out["N"] = out["N"].astype(int)
    if "start" in df:  # the spread across engine starts, beside the IQR within (pooled over starts)
        across = []
        for (b, n), g in df.groupby(["backend", "N"], sort=False):
            p, d = over_starts(g["ttft_ms"], g["start"]), over_starts(g["decode_ms_per_token"], g["start"])
            across.append({"backend": b, "N": int(n), "starts": max(p.starts, d.starts), "prefill_across": p.across,
                           "decode_across": d.across})
        out = out.merge(pd.DataFrame(across), on=["backend", "N"], how="left")
    out["prefill_tps"] = [ratio(n, p / 1e3) if num(p) else None for n, p in zip(out["N"], out["prefill_med"], strict=True)]
    out["decode_tps"] = [ratio(1e3, d) for d in out["decode_med"].map(num)]
    out["tps_ratio"] = [ratio(num(p), num(d)) for p, d in zip(out["prefill_tps"], out["decode_tps"], strict=True)]
    out["decode_share"] = [decode_share(num(p), num(d), reply_tokens) for p, d in zip(out["prefill_med"], out["decode_med"], strict=True)]
    order = {b: i for i, b in enumerate(dict.fromkeys(df["backend"]))}
    out = out.assign(_o=out["backend"].map(order)).sort_values(["_o", "N"]).drop(columns="_o")
    return out.reset_index(drop=True)


def decode_share(prefill_ms: float | None, decode_ms: float | None, reply_tokens: int) -> float | None:
    """Share of a call spent decoding when the reply has ``reply_tokens`` tokens (the first comes from prefill)."""
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
        return self.r2 is not None and self.r2 >= R2_FLOOR

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


@dataclass(frozen=True)
class Roof:
    backend: str
    gpu: str | None
    peak: roofline.Peak | None
    size: roofline.ModelSize
    note: str | None  # why there is no roofline, when there is none
    step: roofline.StepBytes | None = None  # bytes a decode step reads
    copy_gbps: float | None = None  # measured device-to-device copy bandwidth: the second decode floor

    @property
    def ok(self) -> bool:
        return self.peak is not None and self.size.params is not None and self.step is not None

    def step_bytes(self, n: float = 0) -> float | None:
        """Bytes a decode step reads with ``n`` prompt tokens: weights + the KV cache at mid-reply."""
        return self.step.at(n + REPLY_TOKENS / 2) if self.step is not None else None

    def decode_floor_ms(self, n: float = 0, measured: bool = False) -> float | None:
        """Decode floor at prompt length ``n``: datasheet bandwidth, or the measured copy (None if not given)."""
        bw = self.copy_gbps if measured else (self.peak.bandwidth_gbps if self.peak else None)
        return roofline.decode_floor_ms(self.step_bytes(n), bw) if self.ok and bw else None  # type: ignore[arg-type]

    def prefill_floor_ms(self, n: float) -> float | None:
        return roofline.prefill_floor_ms(self.size.params, n, self.peak) if self.ok else None  # type: ignore[arg-type]


def roof_for(backend: str, gpu: str | None, run_env: dict, bandwidth_gbps: float | None, tflops: float | None,
             known: bool = True, copy_gbps: float | None = None) -> Roof:
    """The roofline of one backend's run; ``known=False``: env.json does not say which device it ran on."""
    size = roofline.model_size(run_env)
    config, source = roofline.model_config(run_env)
    step = roofline.step_bytes(size, config, source)
    if gpu is None and not known:
        return Roof(backend, None, None, size, "env.json does not say which device it ran on")
    if gpu is None:
        return Roof(backend, None, None, size, "CPU run: the GPU roofline is not applicable")
    peak = roofline.gpu_peak(gpu, bandwidth_gbps, tflops)
    if peak is None:
        return Roof(backend, gpu, None, size, f"{gpu} is not in the table of known GPUs: pass --bandwidth-gbps and --tflops")
    if size.params is None or size.dtype_bytes is None:
        return Roof(backend, gpu, peak, size, size.source if size.params is None else "bytes per parameter unknown")
    return Roof(backend, gpu, peak, size, None, step, copy_gbps)


def against_roof(lengths: pd.DataFrame, roofs: dict[str, Roof]) -> pd.DataFrame:
    """Per backend and N: floors (datasheet and measured copy), measured/floor, effective bandwidth and its shares."""
    rows = []
    for r in lengths.to_dict("records"):
        roof = roofs.get(r["backend"])
        if roof is None or not roof.ok:
            continue
        n = r["N"]
        dfloor, cfloor, pfloor = roof.decode_floor_ms(n), roof.decode_floor_ms(n, measured=True), roof.prefill_floor_ms(n)
        decode = num(r["decode_med"])
        eff = roofline.effective_bandwidth_gbps(roof.step_bytes(n), decode) if decode else None  # type: ignore[arg-type]
        rows.append({
            "backend": r["backend"], "N": n, "step_bytes": roof.step_bytes(n), "prefill_floor_ms": pfloor,
            "prefill_x": ratio(num(r["prefill_med"]), pfloor), "decode_floor_ms": dfloor, "decode_x": ratio(decode, dfloor),
            "copy_floor_ms": cfloor, "decode_x_copy": ratio(decode, cfloor), "effective_gbps": eff,
            "bandwidth_share": ratio(eff, roof.peak.bandwidth_gbps),  # type: ignore[union-attr]
            "copy_share": ratio(eff, roof.copy_gbps),
        })
    return pd.DataFrame(rows)
