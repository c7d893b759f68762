"""The quality rows' ranking (reports.analysis.summary.rate_ranking): valid-JSON and clean-answer rates are
counts, so a winner is named only when strictly ahead of the next; one backend or a tie names none."""

from __future__ import annotations

from llm_call_anatomy.reports.analysis.summary import rate_ranking


def test_a_winner_only_when_strictly_ahead_of_the_next() -> None:
    assert rate_ranking({"hf": 0.5, "vllm": 0.75, "sglang": 0.25}) == (["vllm", "hf", "sglang"], "vllm", "")
    order, best, verdict = rate_ranking({"hf": 0.5, "vllm": 0.5, "sglang": 0.25})
    assert order[2] == "sglang" and best is None and verdict == "a tie"


def test_one_backend_is_no_ranking() -> None:
    assert rate_ranking({"hf": 1.0}) == (["hf"], None, "one backend")
