"""Conversation analysis on hand-made records with known answers
(workloads/conversation/report/analysis.py)."""

from __future__ import annotations

import pandas as pd
import pytest

from llm_call_anatomy.workloads.conversation.report import analysis as conv
from tests.reports.records import conversation_records


@pytest.fixture
def df() -> pd.DataFrame:
    return pd.DataFrame(conversation_records())


def test_per_turn_medians(df):
    turns = conv.per_turn(df)
    row = turns[(turns.backend == "vllm") & (turns["mode"] == "cached") & (turns.turn == 3)].iloc[0]
    assert row.prompt_tokens == 400 and row.shared_prefix_tokens == 220
    assert row.cached_med == 208 and row.computed_med == 192
    assert (row.ttft_med, row.ttft_q1, row.ttft_q3, row.ttft_n) == (23.0, 22.5, 23.5, 3)
    assert list(turns[(turns.backend == "hf") & (turns["mode"] == "full")].turn) == [1, 2, 3]


def test_totals_and_ratios(df):
    tot = conv.totals(df)
    full = tot[(tot.backend == "hf") & (tot["mode"] == "full")].iloc[0]
    assert full.tokens_med == 730 and full.turns == 3  # 100 + 230 + 400
    assert full.ttft_med == 10 + 20 + 40 + 3  # median repeat: ttft + rep
    ratios = {r.backend: r for r in conv.mode_ratios(tot)}
    assert ratios["hf"].tokens_cached == 100 + 140 + 180
    assert ratios["vllm"].tokens_cached == 100 + 150 + 192
    assert ratios["hf"].tokens_ratio == pytest.approx(730 / 420)
    assert ratios["hf"].ttft_ratio == pytest.approx(73 / (10 + 11 + 12 + 3))


def test_incomplete_repeat_is_left_out(df):
    df = df[~((df.backend == "hf") & (df["mode"] == "full") & (df.rep == 2) & (df.turn == 3))]
    full = conv.totals(df).query("backend == 'hf' and mode == 'full'").iloc[0]
    assert full.tokens_n == 2 and full.ttft_n == 2


def test_processed_tokens_falls_back_to_the_prompt_only_after_a_reset():
    assert (
        conv.processed_tokens(
            pd.Series({"computed_tokens": None, "prompt_tokens": 50, "cache_state": "reset-before-request"})
        )
        == 50
    )
    assert (
        conv.processed_tokens(
            pd.Series({"computed_tokens": None, "prompt_tokens": 50, "cache_state": "reuse-allowed"})
        )
        is None
    )
    assert (
        conv.processed_tokens(
            pd.Series({"computed_tokens": 7, "prompt_tokens": 50, "cache_state": "reuse-allowed"})
        )
        == 7
    )


@pytest.mark.parametrize(
    ("shared", "prompt", "block", "expected"),
    [
        (90, 230, 16, 80),
        (220, 400, 16, 208),
        (220, 400, None, 220),
        (220, 400, 1, 220),
        (400, 400, None, 399),
        (400, 400, 16, 384),
        (None, 100, 16, 0),
        (15, 100, 16, 0),
    ],
)
def test_expected_cached_block_rounding(shared, prompt, block, expected):
    assert conv.expected_cached(shared, prompt, block) == expected


def test_reuse_explanations(df):
    reuse = conv.reuse(conv.per_turn(df), {"hf": None, "vllm": 16})
    why = {(r.backend, r.turn): r.why for r in reuse.itertuples()}
    assert why[("hf", 2)] == "all of the shared prefix"
    assert why[("vllm", 2)] == "block granularity: ⌊90/16⌋×16 = 80"
    assert why[("vllm", 1)] == "first turn: nothing shared yet"
    assert (
        conv.explain_reuse(220, 400, 150, 16) == "58 fewer than expected (block 16): evicted, or not reused"
    )
    assert conv.explain_reuse(220, 400, None, 16) == "not reported by the engine"
    assert conv.explain_reuse(400, 400, 399, None).startswith("all of the shared prefix but the last")
    assert conv.explain_reuse(220, 400, 219, None) == "1 fewer than expected: evicted, or not reused"


def test_first_tokens_and_prefix_breaks(df):
    first = conv.first_tokens(df).set_index("backend")
    assert first.loc["hf", "compared"] == 9 and first.loc["hf", "same"] == 9
    assert first.loc["vllm", "same"] == 8 and first.loc["vllm", "differing_turns"] == [3]
    breaks = conv.prefix_breaks(df)
    assert [b["turn"] for b in breaks] == [2, 3] and breaks[0]["tokens_lost"] == 10
    summary = conv.break_summary(breaks)
    assert (
        summary["first_lost_tokens"] == ["<think>", "\n", "\n", "</think>"] and summary["lost"].median == 10
    )


def test_repeats_of_two_engine_starts_stay_apart(tmp_path):
    from llm_call_anatomy.reports.runs import read_runs
    from tests.reports.records import write_run

    rows = conversation_records()
    again = [{**r, "engine_start": 1} for r in rows]
    df = read_runs([write_run(tmp_path / "run", rows + again)]).measured()
    tot = conv.totals(df)
    full = tot[(tot.backend == "hf") & (tot["mode"] == "full")].iloc[0]
    assert full.tokens_med == 730 and full.tokens_n == 6  # 100 + 230 + 400 per repeat; 3 repeats x 2 starts
    first = conv.first_tokens(df)
    assert (
        first[first.backend == "vllm"].iloc[0].compared == 18
        and first[first.backend == "vllm"].iloc[0].same == 16
    )
