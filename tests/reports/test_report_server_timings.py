"""The server's own timings in the Load tables, from hand-made levels whose figures are known: the exact
means carried beside the p50 and its bucket, caller − server as the difference of the means, a p50 in the
first bucket shown as its bucket, a server with an inter-token histogram but no TPOT one (SGLang) shown
by its ITL, and a server that exports no /metrics (transformers serve) saying so."""

from __future__ import annotations

import pandas as pd
import pytest

from llm_call_anatomy.reports import build
from llm_call_anatomy.reports.runs import read_runs
from llm_call_anatomy.workloads.load.report import levels as mu
from llm_call_anatomy.workloads.load.report import server_figures as server
from llm_call_anatomy.workloads.load.report import tables
from tests.reports.records import load_level, load_request, write_run

TTFTS = [10.0, 20.0, 30.0, 40.0, 100.0]  # the caller's TTFTs: mean 40, p50 30
HTTP = "client-stream"  # the OpenAI adapter's timing_source


def level(
    backend: str, c: int, timings: dict | None, timing_source: str | None = HTTP, **facts: float
) -> list[dict]:
    """Five requests 0.1 s apart with TTFTS, 4 tokens each, and the level record (server timings if any,
    and ``facts``)."""
    out = []
    for i, ttft in enumerate(TTFTS):
        first = 0.1 * i + ttft / 1e3
        out.append(
            load_request(
                backend,
                c,
                i,
                0.1 * i,
                [first, first + 0.01, first + 0.02, first + 0.03],
                ttft_ms=ttft,
                decode_ms_per_token=10.0,
                prompt_tokens=100,
                timing_source=timing_source,
            )
        )
    facts = {"served_as": "batched by the engine", **facts}
    if timings is not None:
        facts["server_timings"] = timings
    return [*out, load_level(backend, c, facts)]


def server_timings(**figures: tuple[int, float, float, tuple[float, float]] | float) -> dict:
    """A level's ``server_timings`` as ``backends.openai.metrics.level_timings`` writes them: per figure
    (ttft, tpot, itl, e2e, queue) its histogram's (n, mean ms, p50 ms, the p50's bucket), or its mean
    alone."""
    out: dict = {}
    for figure, value in figures.items():
        if isinstance(value, tuple):
            n, mean, p50, bucket = value
            out |= {f"{figure}_n": n, f"{figure}_ms_p50": p50, f"{figure}_p50_bucket_ms": list(bucket)}
        else:
            mean = value
        out[f"{figure}_ms_mean"] = mean
    return out


# vLLM-like: the server's TTFT 4 ms under the caller's for every request (mean 36), its p50 in the
# first bucket (0, 100 ms], interpolated to 50: a p50 difference would read 30 − 50 = −20 ms.
FIRST_BUCKET = server_timings(
    ttft=(5, 36.0, 50.0, (0.0, 100.0)), tpot=(5, 10.5, 5.0, (0.0, 10.0)), itl=10.5, e2e=70.0, queue=0.25
)
# SGLang-like: a narrow TTFT bucket (20, 30], an inter-token histogram (per token), no TPOT one.
ITL_ONLY = server_timings(ttft=(5, 37.5, 25.5, (20.0, 30.0)), itl=(15, 5.08, 4.93, (4.0, 6.0)))


def levels_of(tmp_path, rows):
    return mu.per_level(read_runs([write_run(tmp_path / "run", rows)]).records).set_index("backend")


def cells(table, backend: str | None = None) -> dict[str, str]:
    """The table's one row (of ``backend``, its first column), by column header."""
    rows = [r for r in table.rows if backend is None or r[0] == backend]
    assert len(rows) == 1
    return dict(zip(table.columns, rows[0], strict=True))


def test_means_and_buckets_are_carried_and_caller_minus_server_is_the_mean_difference(tmp_path):
    levels = levels_of(tmp_path, level("vllm-server", 4, FIRST_BUCKET))
    r = levels.loc["vllm-server"]
    assert r["ttft_mean"] == pytest.approx(40.0) and r["ttft_p50"] == pytest.approx(30.0)
    assert (r["server_ttft_mean"], r["server_ttft_p50"], r["server_ttft_p50_bucket"]) == (
        36.0,
        50.0,
        (0.0, 100.0),
    )
    assert (r["server_tpot_mean"], r["server_e2e_mean"], r["server_queue_mean"]) == (10.5, 70.0, 0.25)
    assert r["server_ttft_n"] == 5 and r["server_metrics"] == "recorded"
    assert r["caller_minus_server_ttft_mean"] == pytest.approx(4.0)  # 40 − 36, not 30 − 50


def test_a_first_bucket_p50_is_shown_as_its_bucket_beside_the_mean(tmp_path):
    levels = levels_of(tmp_path, level("vllm-server", 4, FIRST_BUCKET)).reset_index()
    row = cells(tables.level_table(levels, "vllm-server"))
    assert row["server TTFT ms: mean · p50"] == "36 · p50 in (0, 100]"
    assert row["server TPOT (or ITL) ms: mean · p50"] == "10.5 (TPOT) · p50 in (0, 10]"
    row = cells(tables.caller_engine_table(levels))
    assert row["caller TTFT mean ms"] == "40" and row["server TTFT mean ms (/metrics: sum ÷ count)"] == "36"
    assert row["server TTFT p50 ms (its bucket where wide)"] == "in (0, 100]"
    assert row["caller − server ms (mean − mean)"] == "4"


def test_a_server_count_that_is_not_the_levels_requests_is_shown(tmp_path):
    levels = levels_of(tmp_path, level("vllm-server", 4, {**FIRST_BUCKET, "ttft_n": 6})).reset_index()
    assert (
        cells(tables.caller_engine_table(levels))["server TTFT mean ms (/metrics: sum ÷ count)"] == "36 (n 6)"
    )


def test_a_server_with_an_itl_histogram_but_no_tpot_one_shows_its_itl(tmp_path):
    levels = levels_of(tmp_path, level("sglang-server", 8, ITL_ONLY)).reset_index()
    row = cells(tables.level_table(levels, "sglang-server"))
    assert row["server TTFT ms: mean · p50"] == "37.5 · p50 25.5"  # a narrow bucket: the figure
    assert row["server TPOT (or ITL) ms: mean · p50"] == "5.08 (ITL per token) · p50 4.93"
    row = cells(tables.caller_engine_table(levels))
    assert row["caller − server ms (mean − mean)"] == "2.50"  # 40 − 37.5


def test_a_server_without_metrics_says_not_exported_and_the_page_says_why(tmp_path):
    rows = (
        level("hf-server", 2, None)
        + level("vllm", 2, None, timing_source=None)  # in process: no server, no claim
        + level("vllm-server", 2, FIRST_BUCKET)
        + level("vllm-server", 3, None)  # a level whose scrapes gave nothing, of a server that exports them
        + level("old-server", 2, None, kv_cache_usage_peak=0.4)  # its /metrics gauges, no histograms read
    )
    levels = levels_of(tmp_path, rows).reset_index()
    states = dict(zip(levels["backend"] + " " + levels["case"], levels["server_metrics"], strict=True))
    assert states["hf-server C=2"] == "not exported" and states["vllm-server C=3"] == "not recorded"
    assert states["old-server C=2"] == "not recorded"
    assert pd.isna(states["vllm C=2"])
    hf = cells(tables.level_table(levels, "hf-server"))
    assert hf["server TTFT ms: mean · p50"] == "not exported"
    assert hf["server TPOT (or ITL) ms: mean · p50"] == "not exported"
    assert cells(tables.level_table(levels, "vllm"))["server TTFT ms: mean · p50"] == "–"
    engine = tables.caller_engine_table(levels)
    row = cells(engine, "hf-server")
    assert row["server TTFT mean ms (/metrics: sum ÷ count)"] == "not exported"
    assert row["caller TTFT mean ms"] == "40" and row["caller − server ms (mean − mean)"] == "–"
    assert "vllm" not in {r[0] for r in engine.rows}  # in process, no engine TTFT: no row
    html = build([tmp_path / "run"], tmp_path / "report.html").read_text()
    assert "hf-server: server figures not exported: its server gave no latency histograms at /metrics" in html
    assert "vllm-server: server figures not exported" not in html and "old-server: server" not in html
    assert "not recorded: a level of a server that has /metrics" in html


def test_p50_text_follows_the_written_rule():
    assert server.p50_text(50.0, (0.0, 100.0)) == "p50 in (0, 100]"  # the first bucket
    assert server.p50_text(41000.0, (40000.0, None)) == "p50 > 40,000"  # the +Inf bucket
    assert server.p50_text(175.0, (100.0, 250.0)) == "p50 in (100, 250]"  # upper ≥ 2 × lower
    assert server.p50_text(71.9, (60.0, 80.0)) == "p50 71.9"  # narrow: the interpolated figure
    assert server.p50_text(None, None) == ""
