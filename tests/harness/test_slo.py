"""Targets (contract.slo): the --slo syntax, the defaults, the older unnamed form, and judging a level
against a target with failed requests counted as misses."""

from __future__ import annotations

import math

import pytest

from llm_call_anatomy.contract.slo import (
    DEFAULT_SPECS,
    Limit,
    evaluate,
    legacy_slo,
    parse_target,
    parse_targets,
    percentile,
)


def test_a_named_target_reads_its_limits_and_writes_itself_back():
    t = parse_target("chat:ttft_p90_ms=500,tpot_p99.5_ms=50")
    assert t.name == "chat" and t.limits == (Limit("ttft", 90.0, 500.0), Limit("tpot", 99.5, 50.0))
    assert parse_target(t.spec()) == t and t.label() == "chat (TTFT p90 ≤ 500 ms, TPOT p99.5 ≤ 50 ms)"
    assert parse_target("batch:").throughput_only


def test_the_defaults_are_chat_agent_and_batch():
    targets = parse_targets(None)
    assert [t.spec() for t in targets] == list(DEFAULT_SPECS)
    chat, agent, batch = targets
    assert legacy_slo(chat) == {"ttft_ms": 500.0, "tpot_ms": 50.0} and legacy_slo(agent) == {
        "ttft_ms": 2000.0,
        "tpot_ms": 100.0,
    }
    assert batch.throughput_only and legacy_slo(batch) is None


def test_the_unnamed_form_of_older_runs_needs_both_keys():
    t = parse_target("ttft_ms=2000,tpot_ms=200")
    assert t.name == "custom" and t.limits == (Limit("ttft", 90.0, 2000.0), Limit("tpot", 90.0, 200.0))
    with pytest.raises(
        ValueError,
        match="needs both ttft_ms and tpot_ms .missing tpot_ms.; to limit TTFT only, name it: "
        "custom:ttft_p90_ms=500",
    ):
        parse_target("ttft_ms=500")


@pytest.mark.parametrize(
    "text,message",
    [
        ("chat:ttft_p90=5", "unknown key 'ttft_p90'"),
        ("chat:latency_p90_ms=5", "unknown metric 'latency'"),
        ("chat:ttft_p0_ms=5", "outside (0, 100]"),
        ("chat:ttft_p150_ms=5", "outside (0, 100]"),
        ("chat:ttft_p90_ms=0", "must be a positive number"),
        ("chat:ttft_p90_ms=inf", "must be a positive number"),
        ("chat:ttft_p90_ms=1,ttft_p90_ms=2", "given twice"),
        ("9lives:ttft_p90_ms=1", "a target's name"),
    ],
)
def test_bad_targets_are_one_line_mistakes(text, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        parse_target(text)


def test_percentile_is_numpys_and_reaches_infinity_only_where_its_rank_does():
    xs = [10.0, 20.0, 30.0, 40.0, 100.0]
    assert percentile(xs, 90) == pytest.approx(76.0)
    assert percentile([*xs, math.inf], 50) == pytest.approx(35.0)  # rank 2.5 among six: between 30 and 40
    assert percentile([*xs, math.inf], 90) == math.inf  # rank 4.5 reaches the failure
    assert percentile([], 90) is None


def test_a_level_meets_a_target_only_with_every_limit_and_failures_count_as_misses():
    t = parse_target("chat:ttft_p90_ms=100,tpot_p50_ms=20")
    good = {"ttft": [10.0] * 9 + [50.0], "tpot": [15.0] * 10}
    v = evaluate(t, good, failed=0)
    assert v.met and v.limiter is None and v.n == {"ttft_p90_ms": 10, "tpot_p50_ms": 10}
    slow = evaluate(t, {**good, "tpot": [25.0] * 10}, failed=0)
    assert slow.met is False and slow.limiter == "TPOT p50 25 ms > 20 ms (n=10)"
    # two failures of ten: the p90 reaches them, the level misses though every served request was fast
    failing = evaluate(t, {"ttft": [10.0] * 8, "tpot": [15.0] * 8}, failed=2)
    assert failing.met is False and failing.limiter == "TTFT p90 failures > 100 ms (n=10)"
    assert evaluate(t, {}, failed=0).met is None  # nothing to judge is not a pass
    batch = parse_target("batch:")
    assert evaluate(batch, good, 0).met is True and evaluate(batch, good, 1).met is False
