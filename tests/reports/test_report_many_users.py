"""The Load section from hand-made load records whose figures are known: percentiles, throughput, goodput,
prefix reuse, the engine's level facts, summary rows, a chart key naming no chart, and the page in
Chromium."""

from __future__ import annotations

import pandas as pd
import pytest

from llm_call_anatomy.reports import build, kinds
from llm_call_anatomy.reports.assemble import assemble
from llm_call_anatomy.reports.runs import read_runs
from llm_call_anatomy.workloads.load.report import levels as mu
from tests.reports.chromium import Chromium, chromium_path, problems
from tests.reports.records import load_level, load_request, write_run
from tests.reports.test_report_browser import ALL_DRAWN

TTFTS = [10.0, 20.0, 30.0, 40.0, 100.0]  # one level's five requests


def level_records(backend: str, c: int, scale: float, served_as: str) -> list[dict]:
    """Five requests 0.1 s apart; request i: TTFT TTFTS[i] * scale, 4 tokens 10 ms apart (the last 30 ms
    apart)."""
    out = []
    for i, ttft in enumerate(TTFTS):
        submit = 0.1 * i
        first = submit + ttft * scale / 1e3
        times = [first, first + 0.010, first + 0.020, first + 0.050]
        out.append(
            load_request(
                backend,
                c,
                i,
                submit,
                times,
                ttft_ms=ttft * scale,
                decode_ms_per_token=50.0 / 3,
                output_token_ids=[1, 2, 3, 4],
                prompt_tokens=100,
                shared_prefix_tokens=40,
                cached_tokens=32 if backend == "vllm" else 0,
                queue_ms=5.0 if backend == "hf" else None,
            )
        )
    level = (
        {
            "wall_s": 1.0,
            "served_as": served_as,
            "kv_cache_usage_peak": 0.25,
            "preemptions": 2.0,
            "prefix_cache_queries": 500.0,
            "prefix_cache_hits": 160.0,
        }
        if backend == "vllm"
        else {"served_as": served_as}
    )
    out.append(load_level(backend, c, level))
    return out


def load_run(tmp_path, slo=None):
    rows = []
    for c, scale in ((1, 1.0), (4, 3.0)):
        rows += level_records("hf", c, scale * 2, "one at a time, queued (FIFO)")
        rows += level_records("vllm", c, scale, "batched by the engine")
    return write_run(tmp_path / "run", rows, {"slo": slo} if slo else None)


def test_percentile_matches_hand_computed_linear_interpolation():
    assert mu.percentile(TTFTS, 50) == 30.0
    assert mu.percentile(TTFTS, 90) == pytest.approx(76.0)  # rank 3.6: 40 + 0.6 * (100 - 40)
    assert mu.percentile(TTFTS, 99) == pytest.approx(97.6)  # rank 3.96
    assert mu.percentile([None, float("nan")], 50) is None  # not reported is not zero


def test_levels_throughput_latency_goodput_and_reuse(tmp_path):
    ds = read_runs([load_run(tmp_path)])
    levels = mu.per_level(ds.records, {"ttft_ms": 35.0, "tpot_ms": 20.0}).set_index(["backend", "case"])
    v1 = levels.loc[("vllm", "C=1")]
    window = 0.4 + 0.100 + 0.050  # last submit + its TTFT + its last token
    assert v1["requests"] == 5 and v1["window_s"] == pytest.approx(window)
    assert v1["output_tps"] == pytest.approx(20 / window) and v1["rps"] == pytest.approx(5 / window)
    assert (v1["ttft_p50"], v1["ttft_p90"]) == (30.0, pytest.approx(76.0))
    # gaps per request 10, 10, 30 ms: pooled 15 gaps, p50 10, p99 at rank 13.86 of the sorted gaps (all 30
    # from 10 on)
    assert v1["itl_p50"] == pytest.approx(10.0) and v1["itl_p99"] == pytest.approx(30.0) and v1["itl_n"] == 15
    assert v1["slo_met"] == 3 and v1["goodput_rps"] == pytest.approx(
        3 / window
    )  # TTFT 10, 20, 30 within 35 ms
    assert levels.loc[("vllm", "C=4")]["slo_met"] == 1  # TTFT 30, 90, 120...: only 30 within 35 ms
    assert (
        levels.loc[("hf", "C=1")]["slo_met"] == 1 and levels.loc[("hf", "C=4")]["slo_met"] == 0
    )  # 20, 40...; 60...
    assert v1["expected_reuse"] == pytest.approx(0.4) and v1["reported_reuse"] == pytest.approx(0.32)
    assert (v1["kv_cache_usage_peak"], v1["preemptions"], v1["prefix_hit_rate"]) == (
        0.25,
        2.0,
        pytest.approx(0.32),
    )
    assert (
        levels.loc[("hf", "C=1")]["queue_p50"] == 5.0
        and levels.loc[("hf", "C=1")]["prefix_hit_rate"] != levels.loc[("hf", "C=1")]["prefix_hit_rate"]
    )  # NaN: not reported


def test_a_tpot_over_the_target_fails_the_slo():
    assert mu.slo_met(10, 19.9, {"ttft_ms": 35, "tpot_ms": 20}) and not mu.slo_met(
        10, 20.1, {"ttft_ms": 35, "tpot_ms": 20}
    )
    assert not mu.slo_met(None, 1, {"ttft_ms": 35, "tpot_ms": 20})  # no first token: not met


def test_section_summary_rows_and_caveats(tmp_path):
    report = assemble(read_runs([load_run(tmp_path, slo={"ttft_ms": 35.0, "tpot_ms": 20.0})]))
    section = next(s for s in report.sections if s.kind == "load")
    assert section.data["slo"] == {"ttft_ms": 35.0, "tpot_ms": 20.0}  # the run's --slo
    jobs = {j.job: j for j in report.jobs}
    peak = jobs["Many users (lf · S=0)"]
    assert peak.values[0][0] == "vllm"  # vLLM's levels are twice as fast in every request
    held = dict(jobs["Many users: custom (lf · S=0)"].values)  # the run's --slo pair, as a p90 target
    assert held["vllm"].startswith("none") and held["hf"].startswith(
        "none"
    )  # TTFT p90 above 35 ms at C=1 already
    texts = " ".join(c.text for c in report.caveats)
    assert "vllm preempted 2 requests" in texts and "hf served one request at a time behind a queue" in texts
    assert report.agreement_cases.empty  # load requests are not compared token by token


def test_a_chart_key_that_names_no_chart_fails_loudly():
    slots = kinds.Slots("load", {"throughput": "x"})
    assert slots["throughput"] == "x"
    with pytest.raises(KeyError, match="chart 'latency' is not registered for workload kind 'load'"):
        slots["latency"]
    for name in kinds.names():  # every view asks only for charts its kind registers
        kind = kinds.report_kind(name)
        assert kind is not None and kind.name == name


@pytest.mark.browser
@pytest.mark.skipif(chromium_path() is None, reason="chromium is not installed")
def test_load_section_in_chromium(tmp_path):
    page = build([load_run(tmp_path)], tmp_path / "report.html")
    with Chromium() as browser:
        browser.open_page()
        browser.navigate(page.resolve().as_uri())
        assert browser.wait_until(ALL_DRAWN, timeout=60), "a chart container has no svg or canvas"
        charts = browser.evaluate("document.querySelectorAll('div.chart').length")
        text = browser.evaluate("document.body.innerText")
        errors, _ = problems(browser.drain())
    assert charts == len(kinds.report_kind("load").charts)  # every Load chart drawn
    assert errors == []
    assert (
        "Every request of every level, the first wave included" in text
        and "TTFT ≤ 2,000 ms and TPOT ≤ 200 ms" in text
    )
    assert "Many users (lf · S=0)" in text


def test_server_timings_chunk_gaps_and_a_busy_client_are_shown(tmp_path):
    rows = level_records("vllm-server", 4, 1.0, "batched by the engine")
    for r in rows[:-1]:  # two chunks per request: the first token alone, then three together
        r["chunk_times_s"] = [r["token_times_s"][0], r["token_times_s"][-1]]
    rows[-1]["extra"]["level"].update(
        server_timings={"ttft_ms_p50": 7.5, "tpot_ms_p50": 9.0, "ttft_n": 5},
        client_busy_max=0.62,
        client_limited=True,
        client_cpu_share=[0.62, 0.2],
    )
    engine = level_records("vllm", 4, 1.0, "batched by the engine")
    for r in engine[:-1]:
        r["engine_ttft_ms"] = r["ttft_ms"] - 4.0  # the caller saw every first token 4 ms after the engine
    engine[-1]["extra"]["level"].update(engine_step_s=0.5, engine_steps=100.0)
    rows += engine
    report = assemble(read_runs([write_run(tmp_path / "run", rows)]))
    levels = mu.per_level(read_runs([tmp_path / "run"]).records).set_index("backend")
    server, engine = levels.loc["vllm-server"], levels.loc["vllm"]
    assert server["itl_chunk_p50"] == pytest.approx(
        50.0
    )  # one gap per request: first token to the last chunk
    assert (server["server_ttft_p50"], server["server_tpot_p50"]) == (7.5, 9.0)
    assert server["client_limited"] and server["client_busy_max"] == pytest.approx(0.62)
    assert (
        pd.isna(engine["server_ttft_p50"])
        and not engine["client_limited"]
        and pd.isna(engine["itl_chunk_p50"])
    )
    assert engine["caller_minus_engine_ttft_p50"] == pytest.approx(4.0) and engine[
        "engine_step_ms"
    ] == pytest.approx(5.0)
    assert engine["engine_ttft_p50"] == pytest.approx(26.0) and pd.isna(
        server["caller_minus_engine_ttft_p50"]
    )
    texts = " ".join(c.text for c in report.caveats)
    assert "vllm-server at lf · S=0 C=4: a client process was busy 62" in texts and mu.CLIENT_LIMITED in texts
    html = build([tmp_path / "run"], tmp_path / "report.html").read_text()
    assert (
        mu.CLIENT_LIMITED in html and "ITL per chunk p50 ms" in html and "server TTFT ms: mean · p50" in html
    )
    assert (
        "The caller&#39;s TTFT against the engine&#39;s and the server&#39;s own" in html
        or "The caller's TTFT against the engine's and the server's own" in html
    )
    assert "caller − server ms (mean − mean)" in html and "engine step mean ms" in html
