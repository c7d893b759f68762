"""workloads.load.report.caching (what prefix caching buys): tok/s on ÷ off at the levels both runs share,
marked as within the spread where the two levels' bootstrap intervals overlap (the S=0 control on the H200
read 2.19 at an open-loop level of 33 requests), never where they are apart, and not marked at all where a
side has no interval or the two ran other requests."""

from __future__ import annotations

import pandas as pd
import pytest

from llm_call_anatomy.workloads.load.report.caching import caching_ratios
from llm_call_anatomy.workloads.load.report.caching_tables import caching_table


def _level(backend: str, case: str, tps: float, lo: float | None, hi: float | None, mix: str = "m") -> dict:
    return {
        "backend": backend,
        "workload": "load-fixed",
        "mode": "S=0",
        "case": case,
        "level": case,  # as shown (the analysis's steady rows: U=N for users who think)
        "mix": mix,
        "output_tps": tps,
        "output_tps_lo": lo,
        "output_tps_hi": hi,
        "ttft_p50": 100.0,
    }


@pytest.mark.parametrize(
    ("off", "within", "cell"),
    [
        ((690.0, 600.0, 760.0), True, "2.00 (within the spread)"),  # on 1,380 [700, 1,500] reaches 760
        ((690.0, 600.0, 680.0), False, "2.00"),  # apart: a difference beyond the spread
        ((690.0, None, None), None, "2.00"),  # no interval on one side: nothing to say either way
    ],
)
def test_a_tok_s_ratio_is_marked_only_where_the_intervals_overlap(off, within, cell) -> None:
    steady = pd.DataFrame([_level("on", "rate=32", 1380.0, 700.0, 1500.0), _level("off", "rate=32", *off)])
    ratios = caching_ratios(steady, pd.DataFrame(), {"on": True, "off": False}, {"on": "vllm", "off": "vllm"})
    (row,) = ratios.to_dict("records")
    assert row["tps_ratio"] == pytest.approx(2.0) and row["tps_within_spread"] is within
    assert caching_table(ratios).rows[0][3] == cell


def test_levels_of_other_requests_give_no_ratio_and_no_mark() -> None:
    steady = pd.DataFrame(
        [_level("on", "C=8", 900.0, 800.0, 1000.0), _level("off", "C=8", 900.0, 800.0, 1000.0, mix="other")]
    )
    ratios = caching_ratios(steady, pd.DataFrame(), {"on": True, "off": False}, {"on": "vllm", "off": "vllm"})
    (row,) = ratios.to_dict("records")
    assert row["tps_within_spread"] is None and caching_table(ratios).rows[0][3] == "other mix"


def _capacity(backend: str, value: float | None, bound: str, next_up: float | None) -> dict:
    return {
        "backend": backend,
        "workload": "load-sessions",
        "mode": "sessions",
        "loop": "open",
        "target": "chat",
        "value": value,
        "bound": bound,
        "next_up": next_up,
        "not_run": [],
        "rate_unit": "sessions/s",
    }


@pytest.mark.parametrize(
    ("on", "off", "cell"),
    [
        # the H200's vLLM sessions, chat, open loop: >= 32 sessions/s on, none (missed at 4) off: read '–'
        ((32.0, "floor", None), (None, "none", 4.0), "> 8.00 (off: none, missed at 4 sessions/s)"),
        ((16.0, "bracket", 32.0), (None, "none", 4.0), "> 4.00 (off: none, missed at 4 sessions/s)"),
        ((None, "none", 8.0), (16.0, "bracket", 32.0), "< 0.50 (on: none, missed at 8 sessions/s)"),
        (
            (None, "none", 8.0),
            (None, "none", 4.0),
            "– (neither met it: missed at 8 sessions/s on, 4 sessions/s off)",
        ),
    ],
)
def test_a_side_that_met_the_target_at_no_level_bounds_the_capacity_ratio(on, off, cell) -> None:
    caps = pd.DataFrame([_capacity("on", *on), _capacity("off", *off)])
    steady = pd.DataFrame(
        [_level("on", "C=8", 900.0, 800.0, 1000.0), _level("off", "C=8", 800.0, 700.0, 900.0)]
    )
    ratios = caching_ratios(steady, caps, {"on": True, "off": False}, {"on": "vllm", "off": "vllm"})
    (capacity_row,) = [r for r in caching_table(ratios).rows if r[2] == "open · chat"]
    assert capacity_row[5] == cell


# --- the effective setting (issue 44 item 2): the engine's word, not the flag's ---------------------------
def _engine(name: str, on: bool | None) -> dict:
    """env.json's backend block with the engine's own word on its prefix cache (None: it says nothing)."""
    scheduler = {} if on is None else {"prefix_caching": on}
    return {"backends": {name: {"engine": {"scheduler": scheduler}}}}


def _server_runs(tmp_path, on_env: dict, off_env: dict):
    from tests.reports.test_report_capacity import run, section

    on = run(tmp_path, "on", backend="vllm-server", env=on_env)
    off = run(tmp_path, "off", backend="vllm-server", scale=2.0, env=off_env)
    report, sec = section([on, off])
    return report, sec


def test_columns_are_paired_by_the_cache_their_servers_ran_not_by_the_flag(tmp_path):
    # two runs against servers started with the cache on and off (the flag left alone: a remote server's
    # cache is its own); each server said at /metrics how it ran
    _, sec = _server_runs(tmp_path, _engine("vllm-server", True), _engine("vllm-server", False))
    assert list(sec.data["cap"]["caching_of"].values()) == [True, False]
    ratios = sec.data["cap"]["caching"]
    capacity = ratios[ratios["what"] == "capacity"].set_index("case")
    assert capacity.loc["closed · chat", "capacity_ratio"] == pytest.approx(2.0)


def test_an_engine_that_ran_otherwise_than_asked_is_named_as_it_ran_and_the_page_says_so(tmp_path):
    from llm_call_anatomy.reports.analysis.caveats import derive

    asked_off = {"prefix_caching": False, **_engine("vllm-server", True)}  # asked off, the server ran it on
    report, sec = _server_runs(tmp_path, _engine("vllm-server", True), asked_off)
    assert list(sec.data["cap"]["caching_of"].values()) == [True, True]
    assert sec.data["cap"]["caching"].empty  # both ran it on: nothing to pair
    said = [c.text for c in derive(report) if c.topic == "caching"]
    assert any("asked off and its engine says it ran on" in t for t in said), said


def test_a_backend_that_does_not_apply_the_setting_is_not_said_unless_its_engine_says(tmp_path):
    from llm_call_anatomy.workloads.load.report.caching import CachingSetting, caching_caveats

    not_applied = {"settings_not_applied": {"vllm-server": {"prefix_caching": "default"}}}
    _, sec = _server_runs(
        tmp_path, not_applied, {**not_applied, "prefix_caching": False, **_engine("vllm-server", None)}
    )
    assert list(sec.data["cap"]["caching_of"].values()) == [None, None]
    assert sec.data["cap"]["caching"].empty  # never paired on a setting the backend did not apply
    said = caching_caveats({"a": CachingSetting(None, None), "b": CachingSetting(True, False)})
    assert any(c.text.startswith("a: the backend does not apply --no-prefix-caching") for c in said)
