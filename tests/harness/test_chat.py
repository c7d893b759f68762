"""Prefix helpers: the shared-prefix count and the break report."""

from __future__ import annotations

from transformers import AutoTokenizer

from llm_call_anatomy.contract.chat import Renderer, common_prefix_len


def test_common_prefix_len():
    assert common_prefix_len([1, 2, 3], [1, 2, 4, 5]) == 2
    assert common_prefix_len([], [1]) == 0
    assert common_prefix_len([1, 2], [1, 2, 3]) == 2
    assert common_prefix_len([9], [1]) == 0


def test_prefix_break_shows_the_tokens_around_the_mismatch(tiny_model_dir):
    r = Renderer(AutoTokenizer.from_pretrained(tiny_model_dir))
    assert r.prefix_break([1, 2, 3], [1, 2, 3, 4]) is None  # an extension does not break
    prev = r.chat_ids([{"role": "user", "content": "hi"}])
    cur = r.chat_ids(
        [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "yo"},
            {"role": "user", "content": "more"},
        ]
    )
    br = r.prefix_break(prev, cur)
    assert br["position"] == common_prefix_len(prev, cur) < len(prev)
    assert "<think>" in br["previous"] and "<think>" not in br["current"]
    assert br["tokens_lost"] == len(prev) - br["position"]
