"""The seed's token-saving claim says "of the same order on every backend" only where every backend saved
(issue 43: vllm on a CPU, KV blocks of 128 against a 3-turn chat sharing 68-112 tokens, saved nothing and
the page read "the saving is of the same order (1.0× here vs 5.5×)")."""

from __future__ import annotations

from llm_call_anatomy.workloads.conversation.report.claims import tokens_reason


def test_every_backend_saving_reads_as_the_same_order():
    text = tokens_reason([2.2, 3.0], 5.5)
    assert "the saving is of the same order (2.2–3.0× here vs 5.5×) on every backend" in text


def test_a_backend_that_saved_nothing_is_not_said_to_save_the_same_order():
    text = tokens_reason([1.0, 2.2], 5.5)
    assert "same order" not in text
    assert "the saving here is 1.0–2.2× (vs 5.5×)" in text
    assert "Caveats say why" in text
