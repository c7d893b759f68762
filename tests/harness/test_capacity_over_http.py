"""The capacity search and Poisson rates end to end over HTTP, from two client processes (issue 22, "for the
servers"): ``compare.py --backend openai --client-procs 2`` against the fake server of
``tests/harness/faulty_server.py`` with a latency that grows with load and a known knee.

The server's first token waits ``UNIT_S`` x (completions in flight when it arrived) plus ``SATURATED_S`` once
more than ``KNEE`` are in flight. In a closed loop at C every request after the first wave arrives with C in
flight, so TTFT p90 <= ``LIMIT_MS`` holds up to C = KNEE and fails from KNEE + 1 on, with wide margins (60 ms
against 680 ms at C = 3 and 4, the limit at 500 ms: a loaded machine's jitter only adds, and would need a
third of a second on most requests to cross it). The planned levels 2 and 8 bracket the knee; the search's two
levels are the geometric midpoint (4: missed) and then 3 (met): the knee, exactly. At 8 requests/s the server
is mostly idle, at 200/s (each rate sustained for 2 s) it is far past its knee, so the open loop's search adds
rates between them; where they land depends on the machine's timing (a loaded machine may not offer even 8/s),
so the test replays the search's rule on what was judged. Every level, planned or added, closed or open, runs
from two client processes and records its whole key set.
"""

from __future__ import annotations

import pytest

from llm_call_anatomy.backends.load_loop import LoadSettings, arrival_times
from llm_call_anatomy.contract import capacity as cap
from llm_call_anatomy.contract.level_facts import LevelFacts
from llm_call_anatomy.contract.level_stats import level_stats
from llm_call_anatomy.contract.records import row_key
from llm_call_anatomy.contract.slo import parse_target
from llm_call_anatomy.harness.load_search import measured_levels
from llm_call_anatomy.harness.records import read_records
from llm_call_anatomy.workloads.load.prompts import RANDOM_SEED
from tests.conftest import compare
from tests.harness.faulty_server import Faults, faulty_server
from tests.harness.search_replay import replay_open_search

pytestmark = [pytest.mark.openai, pytest.mark.slow]  # one compare.py run of 8 levels, each from 2 processes

UNIT_S, SATURATED_S, KNEE, LIMIT_MS = 0.020, 0.600, 3, 500
TARGET = f"knee:ttft_p90_ms={LIMIT_MS}"
REQUESTS, TOKENS, RATES, DURATION_S = 24, 3, (8.0, 200.0), 2.0
TIMER_S = 0.002  # an event loop's sleep may end this much early (libuv's loop clock counts milliseconds)
SPEC = f"""
workloads:
  - name: knee
    kind: load
    shape: fixed
    prompt_tokens: 16
    shared_prefix_tokens: [0]
    output_tokens: {TOKENS}
    requests: {REQUESTS}
    warmup_requests: 0
    levels: [2, 8]
    rates: [{RATES[0]:g}, {RATES[1]:g}]
    duration_s: {DURATION_S:g}
    search_levels: 2
"""


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("capacity-http")
    spec, out = folder / "knee.yaml", folder / "run"
    spec.write_text(SPEC)
    faults = Faults(ttft_unit_s=UNIT_S, knee=KNEE, saturated_s=SATURATED_S)
    with faulty_server(faults) as server:
        done = compare(
            "--backend", "openai", "--base-url", server.url, "--model", "tiny", "--workload-file", str(spec),
            "--slo", TARGET, "--client-procs", "2", "--request-timeout", "60",
            "--out", str(out), "--no-report",
            timeout=400, check=False,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return out


def open_requests(rate: float, facts: LevelFacts) -> int:
    """A rate level's requests: the seeded arrivals over its duration (twice it for a level run again)."""
    return len(
        arrival_times(10**6, LoadSettings(rate_rps=rate, seed=RANDOM_SEED, duration_s=facts.duration_s))
    )


def judged(out, loop: str) -> tuple[dict, dict]:
    """The loop's levels on disk (level -> (rows, facts)) and each one's verdict against the target."""
    levels = measured_levels(out, "openai", 0, "knee", "S=0", loop)
    target = parse_target(TARGET)
    return levels, {
        x: (cap.judge(target, level_stats(rows, x if loop == "closed" else None), facts), facts)
        for x, (rows, facts) in levels.items()
    }


def added(levels: dict) -> list[float]:
    return sorted(x for x, (_, facts) in levels.items() if facts.searched_for == "knee")


def test_the_closed_loop_search_finds_the_servers_knee_from_two_client_processes(run):
    levels, verdicts = judged(run, "closed")
    assert sorted(levels) == [2, 3, 4, 8] and added(levels) == [3, 4]  # 4 (the midpoint of 2 and 8), then 3
    found = cap.capacity(parse_target(TARGET), "closed", verdicts)
    assert (found.value, found.next_up, found.bound) == (KNEE, KNEE + 1, "exact")
    assert found.limiter.startswith("TTFT p90 ") and f"> {LIMIT_MS} ms (n=" in found.limiter


def test_the_open_loop_search_adds_the_rates_its_rule_picks(run):
    """Each added rate is the one the search's rule picks from the rates judged before it (in the order
    their level records were written), whatever the machine's timing made of each: at 8 req/s a loaded CI
    machine may not offer the rate (submit lag past its bound), and the search then goes below it."""
    levels, verdicts = judged(run, "open")
    new = added(levels)
    assert set(levels) == {*RATES, *new} and 1 <= len(new) <= 2
    target = parse_target(TARGET)
    named = {f"rate={x:g}": x for x in levels}  # a case names its rate to 6 digits
    order = [
        named[r["case"]]
        for r in read_records(run)
        if r["rep"] is None and r["kind"] == "load" and r["case"].startswith("rate=")
    ]
    assert sorted(order) == sorted(levels) and order[: len(RATES)] == list(RATES)  # planned first
    seen = replay_open_search(target, [(x, levels[x][1], verdicts[x][0].decision) for x in order])
    assert seen[RATES[1]] != cap.PASS  # 200 req/s is far past the knee
    found = cap.capacity(target, "open", verdicts)
    lo, hi, _ = cap.bracket({x: v for x, (v, _) in verdicts.items()})
    assert (found.value, found.next_up) == (lo, hi) and hi <= RATES[1]


def test_every_level_ran_from_two_processes_and_is_whole(run):
    """Planned and added, closed and open: every level's own record and its 24 requests, each key once, each
    request served whole (its stamps in order, its tokens), the level driven from two client processes."""
    rows = read_records(run)
    levels = {r["case"]: r for r in rows if r["rep"] is None and r["kind"] == "load"}
    closed, opened = (measured_levels(run, "openai", 0, "knee", "S=0", loop) for loop in ("closed", "open"))
    cases = {f"C={c}" for c in closed} | {f"rate={r:g}" for r in opened}
    assert set(levels) == cases and len(cases) == 4 + 2 + len(added(opened))
    size = {f"C={c}": REQUESTS for c in closed} | {
        f"rate={r:g}": open_requests(r, facts) for r, (_, facts) in opened.items()
    }
    expected = {("openai", 0, "knee", "S=0", case, None, None, None) for case in cases} | {
        ("openai", 0, "knee", "S=0", case, rep, None, 0.0) for case in cases for rep in range(size[case])
    }
    keys = [tuple(row_key(r)) for r in rows if r["kind"] == "load"]
    assert sorted(keys, key=repr) == sorted(expected, key=repr)  # the exact key set, each key once
    for r in rows:
        if r["rep"] is None:
            facts = r["extra"]["level"]
            assert (
                r["error"] is None
                and facts["client_procs"] == 2
                and facts["requests_started"] == size[r["case"]]
            )
            continue
        assert r["error"] is None and r["output_tokens"] == TOKENS and len(r["token_times_s"]) == TOKENS
        assert r["submit_s"] <= r["first_token_s"] <= r["finish_s"]
        assert (r["load_concurrency"], r["load_rate_rps"]) == (
            levels[r["case"]]["load_concurrency"],
            levels[r["case"]]["load_rate_rps"],
        )


def test_open_loop_arrivals_across_client_processes_keep_the_levels_poisson_schedule(run):
    """The parent draws every request's arrival with the level's seed and each process starts its share at
    those times: no request of a rate level, planned or added, was submitted before its arrival (give or take
    the event loop's timer granularity: uvloop's clock, libuv's, counts milliseconds, so a sleep may end up to
    one early). Had each process drawn its own share's arrivals, its k-th request would start at the level's
    k-th arrival, whole gaps early."""
    for rate, (rows, facts) in measured_levels(run, "openai", 0, "knee", "S=0", "open").items():
        due = arrival_times(10**6, LoadSettings(rate_rps=rate, seed=RANDOM_SEED, duration_s=facts.duration_s))
        assert len(rows) == len(due) and all(
            r["planned_submit_s"] == pytest.approx(due[r["rep"]]) for r in rows
        )
        early = [
            (r["rep"], due[r["rep"]] - r["submit_s"]) for r in rows if r["submit_s"] < due[r["rep"]] - TIMER_S
        ]
        assert early == [], rate
