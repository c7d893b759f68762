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


def test_a_batch_renders_each_conversation_as_one_at_a_time_does(tiny_model_dir):
    """chats_ids tokenizes a load plan's histories in one batch: the ids and the kept messages must be those
    of chat_ids one by one (a batch that padded, or lost its order, would change every prompt)."""
    history = [{"role": "user", "content": "hi"}]
    conversations = [
        history,
        [*history, {"role": "assistant", "content": "yo"}, {"role": "user", "content": "a longer turn"}],
        [{"role": "user", "content": "x"}],
    ]
    one = Renderer(AutoTokenizer.from_pretrained(tiny_model_dir))
    many = Renderer(AutoTokenizer.from_pretrained(tiny_model_dir))
    expected = [one.chat_ids(c) for c in conversations]
    assert many.chats_ids(conversations) == expected
    assert len({len(ids) for ids in expected}) == 3  # unequal lengths: padding would show
    assert many.chats == one.chats
    assert many.chats_ids([]) == []


def test_the_prompt_key_is_the_hash_of_the_ids_json_text():
    """Keys in committed plans and chat_prompts.json are sha1 of json.dumps(ids): the faster text matches."""
    import hashlib
    import json

    from llm_call_anatomy.contract.chat import prompt_key

    for ids in ([], [7], [151643, 0, 12, 99999]):
        assert prompt_key(ids) == hashlib.sha1(json.dumps(ids).encode()).hexdigest()[:16]
