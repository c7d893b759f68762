"""The seed's reference figures (A100, HF eager, Qwen3-8B bf16, batch 1), shown next to ours.

They are quoted from the study this project grew out of, never computed here, and always
labelled :data:`LABEL` on the page so nobody mistakes them for a measurement of this run.
:mod:`reports.analysis.seed_claims` (a module per experiment) checks each of them against the runs.
"""

from __future__ import annotations

LABEL = "reference (seed, A100)"

CONVERSATION = {
    "tokens_full": 5549,
    "tokens_cached": 999,
    "tokens_ratio": 5.55,
    "ttft_full_ms": 868.0,
    "ttft_cached_ms": 642.0,
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
JSON_MASK = {"valid": 80, "calls": 80}  # constrained decoding: every reply valid
REUSE = "prefix reuse stops a few tokens before the end of the previous prompt (the template rewrites it)"
ATTENTION = "attention concentrates on special-token positions"
# The article's token figures beyond the conversation's totals: its template experiment's first
# prompt (the text in workloads/seed.py) in Qwen3's tokens, its conversation's per-turn prompt
# lengths, and the special-token positions of that first prompt. None: not quoted in this project
# yet (the seed-claims section then shows ours and says so); fill them in from the article.
TOKENS = {
    "template_first_prompt": None,  # int
    "conversation_turn_prompts": None,  # list of 10 ints
    "template_special_positions": None,  # list of ints
}
