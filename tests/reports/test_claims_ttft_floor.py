"""The seed's flat ~65 ms floor below ~500 tokens, judged per backend on the conversation's full re-prefill
turns that short (issue 42: "does the floor exist on each stack?"): flat, growing, and too few lengths."""

from __future__ import annotations

from llm_call_anatomy.reports.analysis import claims
from llm_call_anatomy.reports.assemble import assemble
from llm_call_anatomy.reports.runs import read_runs
from tests.reports.records import PROMPTS, conversation_records, write_run


def floor_claim(tmp_path, rows):
    report = assemble(read_runs([write_run(tmp_path / "run", rows)]))
    return next(c for c in claims.check_all(report) if c.statement.startswith("Below about 500 tokens"))


def flat_on(backend: str, rows: list[dict]) -> list[dict]:
    """``backend``'s full re-prefill turns all at 25 ms (a tenth of a ms apart by repeat): a floor."""
    return [
        {**r, "ttft_ms": 25.0 + r["rep"] / 10} if r["backend"] == backend and r["mode"] == "full" else r
        for r in rows
    ]


def test_a_ttft_growing_with_the_length_is_no_floor_and_the_flat_backend_is_named(tmp_path):
    claim = floor_claim(tmp_path, flat_on("hf", conversation_records()))  # vllm: 10, 20, 40 ms by turn
    assert claim.verdict.word == "does not hold"
    assert "grows with the length on vllm; flat on hf" in claim.verdict.reason
    assert claim.here["hf"].startswith(f"25.1 ms over N={PROMPTS[0]}–{PROMPTS[-1]} (3 turns")
    assert "fitted change +0.0 %" in claim.here["hf"]


def test_a_floor_on_every_backend_is_the_seeds_shape_at_the_stacks_level(tmp_path):
    claim = floor_claim(tmp_path, flat_on("vllm", flat_on("hf", conversation_records())))
    assert claim.verdict.word == "setup-specific"
    assert "the floor exists on every backend" in claim.verdict.reason
    assert "25.1 ms here by backend against 65 ms on HF eager on an A100" in claim.verdict.reason


def test_cached_turns_and_long_prompts_are_not_judged(tmp_path):
    """Only full re-prefill turns below 500 tokens count: cached turns (their TTFT is the reuse's) and
    longer prompts leave the claim not measurable."""
    rows = [r for r in conversation_records() if r["mode"] == "cached"]
    assert floor_claim(tmp_path / "a", rows).verdict.word == "not measurable here"
    long = [{**r, "prompt_tokens": r["prompt_tokens"] + 500} for r in conversation_records()]
    claim = floor_claim(tmp_path / "b", long)
    assert claim.verdict.word == "not measurable here" and "shorter than 500 tokens" in claim.verdict.reason
