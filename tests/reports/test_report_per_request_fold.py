"""The caller-vs-engine fold (reports.views.common.per_request_rows): every request up to the limit; above it,
each backend and workload's largest caller − engine differences, in the records' order, the title saying how
many of how many (a load page's tens of thousands of rows made its page megabytes)."""

from __future__ import annotations

import pandas as pd

from llm_call_anatomy.reports.views.common import per_request_rows


def _requests(gaps: dict[tuple[str, str], list[float]]) -> pd.DataFrame:
    rows = [
        {"backend": b, "workload": w, "difference_ms": g, "i": i}
        for (b, w), xs in gaps.items()
        for i, g in enumerate(xs)
    ]
    return pd.DataFrame(rows)


def test_every_request_up_to_the_limit() -> None:
    df = _requests({("vllm", "load"): [1.0, 2.0, 3.0]})
    shown, title = per_request_rows(df, limit=3, largest=1)
    assert len(shown) == 3 and title == "per request"


def test_above_the_limit_each_groups_largest_differences_in_the_records_order() -> None:
    df = _requests({("vllm", "load"): [1.0, -9.0, 3.0, 2.0], ("sglang", "load"): [5.0, None, 4.0, 0.5]})
    shown, title = per_request_rows(df, limit=4, largest=2)
    assert list(zip(shown["backend"], shown["i"], strict=True)) == [
        ("vllm", 1),
        ("vllm", 2),
        ("sglang", 0),
        ("sglang", 2),
    ]  # |−9| is the largest; a request without the engine's figure is never preferred
    assert "2 largest differences" in title and "4 of 8 requests" in title
