"""The seed's reference figures (A100, HF eager, Qwen3-8B bf16, batch 1), shown next to ours.

They are quoted from the study this project grew out of, never computed here, and always
labelled :data:`LABEL` on the page so nobody mistakes them for a measurement of this run.
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
