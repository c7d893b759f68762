"""The seed's reference row (its 5,549 -> 999 tokens, 868 -> 642 ms) stands only under the seed's own
conversation (issue 43): the built-in workload at the seed's ten turns, never under a user's chat."""

from __future__ import annotations

import pandas as pd

from llm_call_anatomy.reports import reference
from llm_call_anatomy.workloads.conversation.report import is_seeds, totals_table


def data() -> dict:
    totals = pd.DataFrame(
        [{"backend": "hf", "mode": m, "turns": 3, "tokens_med": t, "ttft_med": 10.0} for m, t in
         (("full", 300.0), ("cached", 120.0))]
    )  # fmt: skip
    return {"totals": totals, "ratios": []}


def test_the_reference_row_only_under_the_seed_s_conversation():
    assert is_seeds("conversation", reference.CONVERSATION["turns"])
    assert not is_seeds("conversation", 3)  # a user's file may call its 3-turn chat so
    assert not is_seeds("support-agent", 10)
    assert not is_seeds("conversation-long", 10)
    labels = [row[0] for row in totals_table(data(), seeds=False).rows]
    assert reference.LABEL not in labels
    assert totals_table(data(), seeds=True).rows[-1][0] == reference.LABEL
