"""Issue 43: a batch target's level (peak steady-window tok/s) and the Summary's peak (peak whole-level
tok/s) agree on a column, or the Load section says why they do not."""

from __future__ import annotations

import pandas as pd

from llm_call_anatomy.workloads.load.report.caveats import peak_disagreements


def data(batch_level: float, summary_case: str, loop: str = "closed") -> dict:
    key = {"backend": "vllm", "workload": "load-fixed", "mode": "S=0"}
    caps = pd.DataFrame(
        [
            {**key, "loop": loop, "target": "batch", "bound": "peak", "value": batch_level},
            {**key, "loop": loop, "target": "chat", "bound": "bracket", "value": 2.0},
        ]
    )
    peaks = pd.DataFrame([{**key, "peak_case": summary_case, "peak_tps": 1000.0}])
    return {"cap": {"capacity": caps}, "peaks": peaks}


def test_levels_that_differ_are_named_with_the_two_definitions():
    (line,) = peak_disagreements(data(8.0, "C=4"))
    assert "batch target's level is C=8" in line and "Summary's peak is C=4" in line
    assert "output tok/s (steady window)" in line and "output tok/s (whole level)" in line


def test_levels_that_agree_or_sit_in_another_loop_get_no_line():
    assert peak_disagreements(data(4.0, "C=4")) == []
    assert peak_disagreements(data(8.0, "rate=16")) == []  # the Summary's peak is an open-loop level
    (line,) = peak_disagreements(data(32.0, "rate=16", loop="open"))
    assert "32 req/s" in line and "16 req/s" in line
