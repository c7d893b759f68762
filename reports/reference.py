"""The seed's reference figures (A100, HF eager, Qwen3-8B bf16, batch 1), shown next to ours.

They are quoted from the study this project grew out of (:data:`SOURCE`), never computed here, and
always labelled :data:`LABEL` on the page so nobody mistakes them for a measurement of this run.
:mod:`reports.analysis.seed_claims` (a module per experiment) checks each of them against the runs.
"""

from __future__ import annotations

LABEL = "reference (seed, A100)"
# The measurement the figures are quoted from, cited on the page (the claims section) and in the README.
SOURCE = {
    "title": "What Happens in 1 LLM API Call? Measured on GPU With Qwen3-8B",
    "author": "Arun Prabhakaran",
    "venue": 'Towards AI, episode 1 of "How AI Agents Actually Work"',
    "url": "https://pub.towardsai.net/what-happens-in-1-llm-api-call-measured-on-gpu-with-qwen3-8b-3654ffb0e290",
}

CONVERSATION = {
    "turns": 10,  # the seed's conversation: its row stands only under a workload of as many turns
    "tokens_full": 5549,
    "tokens_cached": 999,
    "tokens_ratio": 5.55,
    "ttft_full_ms": 868.0,
    "ttft_cached_ms": 642.0,
    "floor_ms": 65.0,  # a flat ~65 ms per forward pass below roughly 500 tokens, whatever the length
    "floor_below_tokens": 500,
}
SWEEP = {"N": 1024, "tps_ratio": 494.0}
DECODE = {"ms_per_token": 64.0, "bandwidth_share": 0.16}
PREFILL = {
    "N_lo": 64,
    "N_hi": 256,
    "decode_steps": 1.0,
}  # prefill of 64-256 tokens costs about one decode step
REPLY_TOKENS = 64
# Decode's share of a 64-token call follows from the seed's own figures: 63 steps of 64 ms after a
# prefill of about one step (64 ms) -> 63 / 64 of the call.
DECODE_SHARE = (REPLY_TOKENS - 1) / REPLY_TOKENS
# One call taken apart, as the article splits it (seed-figures.md, section 3): decode's share of a call with a
# 64-token reply at two prompt lengths, and what its "prefill" (its TTFT) leaves out.
ANATOMY = {
    "decode_share": {1024: 0.969, 2048: 0.928},
    "prefill": "one forward pass plus picking the first token (no tokenization, scheduling or network)",
}
JSON_MASK = {"valid": 80, "calls": 80}  # constrained decoding: every reply valid
REUSE = "prefix reuse stops a few tokens before the end of the previous prompt (the template rewrites it)"
ATTENTION = "attention concentrates on special-token positions"
# The article's token figures beyond the conversation's totals (CONVERSATION), in Qwen3's tokens with
# thinking off: its template experiment's first prompt (the text in workloads/seed.py), the special
# tokens in it, and its conversation's turn-10 prompt. None: the article does not quote it (it gives
# the special tokens' number and IDs, not the positions they sit at; of the conversation's per-turn
# lengths only turn 10's), and the seed-claims section shows ours and says so.
TOKENS = {
    "template_first_prompt": 38,  # tokens
    "template_special_count": 7,  # positions holding an added (special) token: 18.4 % of the 38
    "template_special_ids": [151644, 151645, 151667, 151668],  # <|im_start|> <|im_end|> <think> </think>
    "template_special_positions": None,  # not quoted (list of ints)
    "conversation_turn_10_prompt": 963,  # tokens
    "conversation_turn_prompts": None,  # not quoted beyond turn 10 (list of 10 ints)
}
