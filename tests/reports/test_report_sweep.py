"""Sweep analysis: throughputs, the TTFT fit and the roofline, on records with known answers."""

from __future__ import annotations

import pandas as pd
import pytest

from llm_call_anatomy.reports import roofline
from llm_call_anatomy.workloads.sweep.report import analysis as sw
from tests.reports.records import sweep_records


@pytest.fixture
def df() -> pd.DataFrame:
    return pd.DataFrame(
        sweep_records("hf", a=30.0, b=0.05, decode=20.0) + sweep_records("vllm", a=5.0, b=0.01, decode=4.0)
    )


def test_per_length(df):
    lengths = sw.per_length(df)
    assert list(zip(lengths.backend, lengths.N, strict=True))[:3] == [("hf", 64), ("hf", 256), ("hf", 1024)]
    row = lengths[(lengths.backend == "hf") & (lengths.N == 1024)].iloc[0]
    prefill = 30 + 0.05 * 1024  # 81.2 ms
    assert (row.prefill_med, row.prefill_q1, row.prefill_q3, row.prefill_n) == pytest.approx(
        (prefill, prefill - 0.5, prefill + 0.5, 3)
    )
    assert row.decode_med == pytest.approx(20.0)
    assert row.prefill_tps == pytest.approx(1024 / prefill * 1e3)
    assert row.decode_tps == pytest.approx(50.0)
    assert row.tps_ratio == pytest.approx(1024 / prefill * 1e3 / 50)
    assert row.decode_share == pytest.approx(63 * 20 / (prefill + 63 * 20))


def test_fit_recovers_the_line(df):
    fits = {f.backend: f for f in sw.fits(df)}
    assert fits["hf"].a_ms == pytest.approx(30.0) and fits["hf"].b_ms_per_token == pytest.approx(0.05)
    assert fits["vllm"].a_ms == pytest.approx(5.0) and fits["vllm"].knee() == pytest.approx(500.0)
    assert fits["hf"].points == 9 and fits["hf"].lengths == [64, 256, 1024]
    assert 0.99 < fits["hf"].r2 <= 1.0


def test_fit_needs_two_lengths():
    one = pd.DataFrame(sweep_records("hf", 1.0, 0.1, 2.0, lengths=(64,)))
    assert sw.fits(one) == []
    a, b, r2 = sw.fit_line([1, 2, 3], [3, 5, 7])
    assert (a, b, r2) == pytest.approx((1.0, 2.0, 1.0))


def test_a_line_through_two_lengths_is_no_law():
    """Two lengths always fit a line exactly (r² 1): that is no per-call floor (the H200 long-context sweep,
    whose longer lengths ran out of memory, read "-53.3 ms (r² 1.00)"). A law needs three lengths or more."""
    two = pd.DataFrame(sweep_records("hf", a=30.0, b=0.05, decode=20.0, lengths=(1024, 4096)))
    (fit,) = sw.fits(two)
    assert fit.r2 > 0.99 and not fit.holds
    assert fit.why_not == "2 lengths: a line through them always fits"
    three = pd.DataFrame(sweep_records("hf", a=30.0, b=0.05, decode=20.0, lengths=(64, 1024, 4096)))
    assert [f.holds for f in sw.fits(three)] == [True]


def test_roofline_against_h200(df):
    env = {
        "dtype": "bfloat16",
        "model": {"params": 8_190_735_360, "label": "qwen3-8b-shape", "builtin": True},
    }
    roofs = {
        "hf": roofline.roof_for("hf", "NVIDIA H200", env, None, None, copy_gbps=4245.0),
        "vllm": roofline.roof_for("vllm", None, env, None, None),
    }
    assert roofs["hf"].ok and not roofs["vllm"].ok and "not applicable" in roofs["vllm"].note
    vs = sw.against_roof(sw.per_length(df), roofs)
    assert set(vs.backend) == {"hf"}
    row = vs[vs.N == 1024].iloc[0]
    # weights less the input embedding, plus the KV cache at mid-reply (N + 32 tokens of context)
    step = 8_190_735_360 * 2 - 151_936 * 4096 * 2 + 36 * 2 * 8 * 128 * 2 * (1024 + 32)
    assert row.step_bytes == pytest.approx(step)
    floor, copy_floor = step / 4800e9 * 1e3, step / 4245e9 * 1e3
    assert row.decode_floor_ms == pytest.approx(floor) and row.copy_floor_ms == pytest.approx(copy_floor)
    assert row.decode_x == pytest.approx(20.0 / floor) and row.decode_x_copy == pytest.approx(
        20.0 / copy_floor
    )
    assert row.effective_gbps == pytest.approx(step / 0.020 / 1e9)
    assert row.bandwidth_share == pytest.approx(row.effective_gbps / 4800)
    assert row.copy_share == pytest.approx(row.effective_gbps / 4245)
    assert row.prefill_floor_ms == pytest.approx(
        roofline.prefill_floor_ms(8_190_735_360, 1024, roofline.gpu_peak("H200"))
    )


def test_roofline_notes():
    unknown = roofline.roof_for(
        "x", "Mystery GPU", {"dtype": "bfloat16", "model": {"params": 10}}, None, None
    )
    assert not unknown.ok and "--bandwidth-gbps" in unknown.note
    no_params = roofline.roof_for("x", "NVIDIA L4", {"dtype": "bfloat16", "model": {}}, None, None)
    assert not no_params.ok and "not available" in no_params.note
    unknown_device = roofline.roof_for(
        "x", None, {"dtype": "bfloat16", "model": {"params": 10}}, None, None, known=False
    )
    assert not unknown_device.ok and "does not say which device" in unknown_device.note
    forced = roofline.roof_for(
        "x", "Mystery GPU", {"dtype": "bfloat16", "model": {"params": 10}}, 100.0, 10.0
    )
    assert forced.ok and forced.decode_floor_ms() == pytest.approx(
        20 / 100e9 * 1e3
    )  # no config: all weights, no KV
    assert forced.decode_floor_ms(measured=True) is None  # no measured copy bandwidth given
