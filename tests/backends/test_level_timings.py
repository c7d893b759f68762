"""The server's own latency per load level (backends/openai/metrics.py): the histograms' difference over a
level and its bucket-interpolated percentiles, against figures computed by hand."""

from __future__ import annotations

import pytest

from llm_call_anatomy.backends.openai.metrics import bucket_quantile, level_timings, parse_buckets


def ttft_text(sets: list[dict[str, float]], total: float) -> str:
    """vLLM's TTFT histogram with one label set per dict of {le: cumulative count}; the sum split evenly."""
    lines = ["# HELP vllm:time_to_first_token_seconds x", "# TYPE vllm:time_to_first_token_seconds histogram"]
    for i, counts in enumerate(sets):
        labels = f'engine="{i}",model_name="m"'
        for le, c in counts.items():
            lines.append(f'vllm:time_to_first_token_seconds_bucket{{{labels},le="{le}"}} {c}')
        lines += [
            f"vllm:time_to_first_token_seconds_count{{{labels}}} {counts['+Inf']}",
            f"vllm:time_to_first_token_seconds_sum{{{labels}}} {total / len(sets)}",
        ]
    return "\n".join(lines) + "\n"


def test_the_level_difference_matches_the_hand_computed_percentiles() -> None:
    before = ttft_text([{"0.1": 2, "0.5": 3, "1.0": 4, "+Inf": 4}], 1.0)
    # after, in two label sets that add up to 0.1: 2, 0.5: 7, 1.0: 12, +Inf: 13 (sum 9.0 s)
    after = ttft_text(
        [{"0.1": 1, "0.5": 4, "1.0": 6, "+Inf": 7}, {"0.1": 1, "0.5": 3, "1.0": 6, "+Inf": 6}], 9.0
    )
    t = level_timings(parse_buckets(before), parse_buckets(after))
    # the level: 0 in (0, 0.1], 4 in (0.1, 0.5], 4 in (0.5, 1], 1 above 1 s; n = 9, sum 8 s
    assert t["ttft_n"] == 9
    assert t["ttft_ms_mean"] == pytest.approx(8000 / 9)
    assert t["ttft_ms_p50"] == pytest.approx(562.5)  # rank 4.5: 0.5 + 0.5 x (4.5 - 4) / 4 s
    assert t["ttft_ms_p90"] == pytest.approx(1000.0)  # rank 8.1 falls in +Inf: the highest finite bound
    assert t["ttft_p50_bucket_ms"] == [500.0, 1000.0]  # how fine the p50 is
    assert t["ttft_histogram"] == "vllm:time_to_first_token_seconds" and "interpolated" in t["source"]
    assert "itl_n" not in t  # a histogram the server does not export is left out, not zero


def test_quantile_edges() -> None:
    assert bucket_quantile({0.1: 0.0, float("inf"): 0.0}, 0.5) is None
    assert bucket_quantile({0.1: 4.0, float("inf"): 4.0}, 0.5) == pytest.approx(0.05)  # first bucket from 0
    assert bucket_quantile({0.1: 0.0, 0.2: 10.0, float("inf"): 10.0}, 0.99) == pytest.approx(0.199)


def test_no_new_observations_give_nothing() -> None:
    text = ttft_text([{"0.1": 2, "+Inf": 2}], 0.1)
    assert level_timings(parse_buckets(text), parse_buckets(text)) == {}
