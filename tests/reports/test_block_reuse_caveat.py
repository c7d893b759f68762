"""Prefix reuse under load is counted in whole KV blocks (issue 43): vLLM on a CPU with 128-token blocks and
prompts sharing 50-135 tokens reuses nothing of a 'reuse expected' of half the prompt; the page says why."""

from __future__ import annotations

import pandas as pd

from llm_call_anatomy.reports.analysis.caveats import block_reuse


def rows(
    shared: list[int], prompt: int = 200, backend: str = "vllm-server", load: bool = True
) -> pd.DataFrame:
    return pd.DataFrame(
        [{"backend": backend, "workload": "my-load", "shared_prefix_tokens": s, "prompt_tokens": prompt,
          "load_concurrency": 4 if load else None, "load_rate_rps": None} for s in shared]
    )  # fmt: skip


def test_short_shared_prefixes_under_a_large_block_are_said_with_their_figures():
    (caveat,) = block_reuse(rows([50, 90, 135, 135]), {"vllm-server": 128})
    assert caveat.topic == "my-load"
    assert "whole blocks of 128 tokens" in caveat.text
    assert "of the 410 prompt tokens" in caveat.text and "256 (62%) fall in whole blocks" in caveat.text
    assert "2 of 4 requests share fewer than 128 tokens and reuse none" in caveat.text


def test_nothing_to_say_where_blocks_cost_little_or_reuse_is_to_the_token():
    long = rows([960, 1000, 2048], prompt=3000)
    assert block_reuse(long, {"vllm-server": 16}) == []  # under 10 % lost to rounding
    assert block_reuse(rows([50, 90]), {"vllm-server": 1}) == []  # SGLang's default page: to the token
    assert block_reuse(rows([50, 90]), {"vllm-server": None}) == []  # no block size known
    assert block_reuse(rows([50, 90], load=False), {"vllm-server": 128}) == []  # not under load
    assert block_reuse(pd.DataFrame(), {}) == []
