"""A capacity on the page is a bracket with its evidence, over every engine start (issue 39): both ends and
how far apart; the median start's, never the best; "≥" only at the stated maximum, "no miss up to" below
it; a burst never passes as a rate; each level named by its kind, with its population and verdicts."""

from __future__ import annotations

import pytest

from tests.reports.records import load_level, load_request, write_run
from tests.reports.test_report_capacity import caps, level, section

# chat (TTFT p90 <= 500 ms): start 0 holds to C=4, start 1 to C=2, start 2 to C=8
STARTS = {
    0: {1: 100.0, 2: 150.0, 4: 300.0, 8: 900.0, 16: 1200.0},
    1: {1: 100.0, 2: 300.0, 4: 700.0, 8: 900.0, 16: 1200.0},
    2: {1: 100.0, 2: 150.0, 4: 200.0, 8: 400.0, 16: 1200.0},
}


def starts_run(tmp_path, starts=STARTS):
    rows = [
        {**r, "engine_start": s}
        for s, knee in starts.items()
        for c, ms in knee.items()
        for r in level("vllm", c, ms)
    ]
    return write_run(tmp_path / "starts", rows)


def cells(sec) -> dict[str, list]:
    from llm_call_anatomy.workloads.load.report.capacity_tables import capacity_table

    return {row[4]: row for row in capacity_table(sec.data["cap"]["capacity"]).rows}


def test_three_engine_starts_give_the_median_starts_bracket_and_list_every_start(tmp_path):
    _, sec = section([starts_run(tmp_path)])
    chat = caps(sec).loc[("vllm", "chat")]
    assert (chat["value"], chat["next_up"], chat["bound"]) == (4, 8, "bracket")  # start 0's: the median
    assert chat["start"].endswith("#0")
    assert sorted((s["value"], s["next_up"]) for s in chat["starts"]) == [(2, 4), (4, 8), (8, 16)]
    row = cells(sec)["chat"]
    assert row[5] == "C=4–8 (met at 4, missed at 8, 2.00× apart)", row
    assert row[7] == "3 starts: C=4–8 (median), C=2–4, C=8–16", row


def test_the_best_start_never_decides_two_starts_take_the_lower(tmp_path):
    _, sec = section([starts_run(tmp_path, {s: STARTS[s] for s in (0, 2)})])
    chat = caps(sec).loc[("vllm", "chat")]
    assert (chat["value"], chat["next_up"]) == (4, 8)


def test_each_end_carries_its_deciding_percentile_and_interval(tmp_path):
    _, sec = section([starts_run(tmp_path, {0: STARTS[0]})])
    chat = caps(sec).loc[("vllm", "chat")]
    assert chat["pass_at"]["decision"] == "pass" and chat["miss_at"]["decision"] == "miss"
    assert chat["pass_at"]["value"] == 300.0 and chat["miss_at"]["value"] == 900.0
    assert cells(sec)["chat"][6] == "met: ttft p90 300 ms [300–300] · missed: ttft p90 900 ms [900–900]"
    assert chat["decisions"] == {1.0: "pass", 2.0: "pass", 4.0: "pass", 8.0: "miss", 16.0: "miss"}


def test_no_miss_below_the_searchs_maximum_is_no_floor(tmp_path):
    """Every level passed, and the search could have gone to C=64: "no miss up to", never "≥"."""
    easy = {1: 100.0, 2: 150.0, 4: 200.0}
    rows = [r for c, ms in easy.items() for r in level("vllm", c, ms, facts={"search_ceiling": 64})]
    _, sec = section([write_run(tmp_path / "r", rows)])
    chat = caps(sec).loc[("vllm", "chat")]
    assert (chat["value"], chat["bound"], chat["ceiling"]) == (4, "unbracketed", 64)
    assert cells(sec)["chat"][5] == "no miss up to C=4 (the search stopped below its maximum, C=64)"
    rows = [r for c, ms in easy.items() for r in level("vllm", c, ms, facts={"search_ceiling": 4})]
    _, sec = section([write_run(tmp_path / "top", rows)])
    assert cells(sec)["chat"][5] == "≥ C=4 (every level tested met it)"  # the stated maximum


def burst(rate: float, planned: bool) -> list[dict]:
    """An open-loop level of 32 requests over its first second, TTFT 200 ms: a burst. ``planned``: with the
    planned submit times of a sustained ``rate`` (so the submits lag their plan)."""
    out = []
    for i in range(32):
        t = i / 32
        times = [t + 0.2 + k * 0.02 for k in range(4)]
        r = load_request(
            "vllm", 8, i, t, times, ttft_ms=200.0, e2e_ms=(times[-1] - t) * 1e3, prompt_tokens=100
        )
        out.append(r)
    out.append(load_level("vllm", 8, {"requests_planned": 32, "requests_started": 32}))
    for r in out:
        r.update(load_concurrency=None, load_rate_rps=rate, case=f"rate={rate:g}")
        if r["rep"] is not None:
            r["planned_submit_s"] = r["rep"] / rate if planned else None
    return out


def test_a_burst_never_passes_as_a_rate(tmp_path):
    """33 requests in a second, TTFT 200 ms, read "≥ 32 req/s" on the H200 page: without planned submit times
    nothing says the arrivals were a sustained rate, and with them the submits lag the plan: not offered."""
    for planned in (False, True):
        _, sec = section([write_run(tmp_path / f"b{planned}", burst(4.0, planned))])
        open_rows = sec.data["cap"]["capacity"]
        chat = open_rows[(open_rows["loop"] == "open") & (open_rows["target"] == "chat")].iloc[0]
        assert chat["value"] is None or chat["value"] != chat["value"], chat.to_dict()
        assert chat["decisions"] == {4.0: "not offered"}
        assert "not offered" in chat["limiter"]
        assert cells(sec)["chat"][5] == "none (not offered as planned at 4 req/s)"


def test_a_level_is_named_by_its_kind_with_its_population_and_verdicts(tmp_path):
    from llm_call_anatomy.workloads.load.report.capacity_cells import verdicts_by_level
    from llm_call_anatomy.workloads.load.report.capacity_tables import steady_table

    think = {"think_time_s": 30.0, "think": "exponential", "users": 8, "in_flight_mean": 2.5}
    rows = level("vllm", 8, 300.0, facts=think) + level("vllm", 2, 100.0)
    _, sec = section([write_run(tmp_path / "r", rows)])
    cap = sec.data["cap"]
    table = steady_table(
        cap["steady"], "vllm", {("lf", "S=0"): ["C=2", "C=8"]}, verdicts_by_level(cap["capacity"])
    )
    by_load = {row[1]: row for row in table.rows}
    assert set(by_load) == {"closed C=2", "U=8 users, think 30 s (exponential)"}
    users = by_load["U=8 users, think 30 s (exponential)"]
    assert users[2] == "chat pass · agent pass" and users[3].startswith("8 · 2.5 / ")


def test_a_level_run_by_several_starts_is_not_twice_as_fast(tmp_path):
    """Two starts of one level, each on its own clock: the load table's tok/s is their total over their total
    time (pooled on one clock, it read twice the tok/s: 3,139 at C=23 on the H200 where each start made
    1,556)."""
    from llm_call_anatomy.reports.runs import read_runs
    from llm_call_anatomy.workloads.load.report.levels import per_level

    one = per_level(read_runs([starts_run(tmp_path / "one", {0: STARTS[0]})]).records)
    two = per_level(read_runs([starts_run(tmp_path / "two", {0: STARTS[0], 1: STARTS[0]})]).records)
    for a, b in zip(one.to_dict("records"), two.to_dict("records"), strict=True):
        assert b["requests"] == 2 * a["requests"] and b["output_tps"] == pytest.approx(a["output_tps"])


def test_a_range_names_its_undecided_levels():
    from llm_call_anatomy.workloads.load.report.capacity_cells import capacity_text

    row = {"loop": "open", "rate_unit": "req/s", "value": 16.0, "next_up": None, "bound": "range"}
    row |= {"undecided": [32.0], "non_monotone": False, "unjudged": [], "not_run": []}
    assert capacity_text(row) == "16–32 req/s (met at 16; undecided at 32 req/s)"
    row |= {"next_up": 64.0, "undecided": [32.0], "ratio": 4.0}
    assert capacity_text(row) == "16–64 req/s (met at 16, missed at 64, 4.00× apart; undecided at 32 req/s)"


def test_a_capacity_of_users_who_think_reads_in_users(tmp_path):
    """A closed loop of users who think holds U users, not C requests in flight: its capacity cell says
    U=..., where a loop without think says C=...."""
    think = {"think_time_s": 30.0, "think": "exponential"}
    rows = [
        r for u in (4, 16) for r in level("vllm", u, 300.0 if u == 4 else 900.0, facts={**think, "users": u})
    ]
    _, sec = section([write_run(tmp_path / "r", rows)])
    chat = cells(sec)["chat"][5]
    assert chat.startswith("U=4–16 (met at 4, missed at 16") and "C=" not in chat


def test_a_search_stopped_at_the_engines_limit_says_so_not_below_its_maximum(tmp_path):
    from llm_call_anatomy.workloads.load.report.capacity_cells import capacity_text
    from tests.reports.test_report_capacity import KNEE, run

    # the search's maximum C=16; the engine runs 8 at most (max_num_seqs): the levels stopped at C=8
    limit = {"search_ceiling": 16, "search_engine_limit": 8, "search_engine_limit_name": "max_num_seqs"}
    _, sec = section([run(tmp_path, "r", facts=limit, levels=KNEE)])
    agent = caps(sec).loc[("vllm", "agent")]  # 900 ms <= 2 s at every level: no miss up to the engine's limit
    assert (agent["value"], agent["bound"], agent["engine_limit"]) == (8, "unbracketed", 8)
    text = capacity_text({**agent.to_dict(), "backend": "vllm", "target": "agent"})
    assert text == "no miss up to C=8 (the engine's max running sequences, max_num_seqs = 8)", text
    chat = caps(sec).loc[("vllm", "chat")]  # a miss at C=8: a bracket, the engine's limit has no say
    assert capacity_text({**chat.to_dict(), "backend": "vllm", "target": "chat"}).startswith("C=4–8")


def test_a_start_whose_range_ends_undecided_lists_both_ends_not_a_floor():
    """A start that met U=256 and left U=512 undecided (nothing above it ran) is the range U=256–512 in the
    list of starts, as its own cell says: never the bare "U=256", which reads as a floor (H200,
    2026-12-04)."""
    from llm_call_anatomy.workloads.load.report.capacity_cells import capacity_text, starts_text

    ranged = {"start": "a#0", "value": 256.0, "next_up": None, "bound": "range", "undecided": [512.0]}
    bracket = {"start": "b#0", "value": 512.0, "next_up": 1024.0, "bound": "bracket", "undecided": []}
    row = {
        **ranged,
        "loop": "closed",
        "think_s": 30.0,
        "ratio": None,
        "not_run": [1024.0],
        "unjudged": [],
        "non_monotone": False,
        "starts": [ranged, bracket],
    }
    assert capacity_text(row).startswith("U=256–512 (met at 256; undecided at U=512")
    assert starts_text(row).startswith("2 starts: U=256–512 (median), U=512–1,024"), starts_text(row)
