"""Issue 39's verdicts: a rate is sustained (a burst never passes), a growing queue misses, a verdict has an
interval (pass, miss or undecided, an undecided level run once more for twice the time), the search stops
at its ratio with both ends, and users who think keep fewer requests in flight than there are users.

Records are built by hand where the figure is the point (the contract's pure functions), and run through
the runner with stand-in engines where the harness must act (the planner, the extension, the level record).
"""

from __future__ import annotations

import asyncio
import json

import pytest

from llm_call_anatomy.backends.base import TokenClock
from llm_call_anatomy.contract import capacity as cap
from llm_call_anatomy.contract.adapter import RawOutput, Request
from llm_call_anatomy.contract.level_stats import level_stats
from llm_call_anatomy.contract.slo import parse_target
from llm_call_anatomy.harness.load_search import measured_levels
from tests.harness.test_capacity import Knee, plan_of, run

CHAT = parse_target("chat:ttft_p90_ms=500")


def row(submit: float, ttft_s: float, finish: float, rate: float | None = None, planned: float | None = None):
    return {
        "submit_s": submit,
        "planned_submit_s": planned,
        "first_token_s": submit + ttft_s,
        "finish_s": finish,
        "token_times_s": [submit + ttft_s, finish],
        "ttft_ms": ttft_s * 1e3,
        "decode_ms_per_token": (finish - submit - ttft_s) * 1e3,
        "e2e_ms": (finish - submit) * 1e3,
        "prompt_tokens": 16,
        "load_rate_rps": rate,
        "error": None,
    }


def verdict(rows: list[dict], concurrency: int | None = None, target=CHAT):
    return cap.judge(target, level_stats(rows, concurrency))


# --- a burst is not a rate -----------------------------------------------------------------------------
def test_a_burst_can_no_longer_pass_as_a_rate(tiny_model_dir, tmp_path):
    """The capacity page's "≥ 32 req/s": 33 requests arriving over about a second, every TTFT fine. Read
    today it is not offered as planned (nothing says it was a sustained rate) and never a pass; and the
    planner now runs a rate for its duration (60 s by default: some 1,920 requests at 32/s, not 33)."""
    burst = [row(i / 32, 0.05, i / 32 + 0.3, rate=32.0) for i in range(33)]
    v = verdict(burst)
    assert v.decision == "not offered" and v.met is False and not v.passed
    assert "no planned submit times" in v.flags["not_offered"]
    found = cap.capacity(CHAT, "open", {32.0: (v, {})})
    assert found.value is None and found.bound == "none" and "not offered as planned" in found.limiter

    spec = """
workloads:
  - name: rate
    kind: load
    shape: fixed
    prompt_tokens: 16
    shared_prefix_tokens: [0]
    output_tokens: 2
    levels: [1]
    rates: [32]
"""
    plan = plan_of(spec, tiny_model_dir, tmp_path)
    (group,) = [g for g in plan.groups if g.block.endswith("rate=32") and not g.warmup]
    assert group.load["duration_s"] == 60.0 and group.load["arrival"] == "poisson"
    assert 1800 < len(group.steps) < 2050  # 32/s x 60 s, the seeded draw's own count


def test_a_level_whose_submits_lagged_the_plan_is_not_offered_as_planned():
    late = [row(i / 10 + 0.02, 0.05, i / 10 + 0.3, rate=10.0, planned=i / 10) for i in range(100)]
    v = verdict(late)
    assert v.decision == "not offered" and "submit lag p99 20.0 ms > 5 ms" in v.flags["not_offered"]
    on_time = [row(i / 10 + 0.001, 0.05, i / 10 + 0.3, rate=10.0, planned=i / 10) for i in range(100)]
    assert verdict(on_time).decision == "pass"


# --- a growing queue ------------------------------------------------------------------------------------
def test_a_growing_queue_is_a_miss_whatever_its_percentiles():
    """10 arrivals/s for 20 s, every first token within 10 ms, but each request takes 50 ms longer than the
    one before: requests pile up (the queue grows through the window). Its TTFT p90 meets the target; the
    level misses it. The same arrivals served in a steady 200 ms pass."""
    growing = [row(i / 10, 0.01, i / 10 + 0.2 + 0.05 * i, rate=10.0, planned=i / 10) for i in range(200)]
    v = verdict(growing)
    assert v.values["ttft_p90_ms"] == pytest.approx(10.0)
    assert v.decision == "miss" and v.met is False and "queue grew" in v.flags["overloaded"]
    assert v.flags["in_flight_last"] > v.flags["in_flight_first"] + 10
    found = cap.capacity(CHAT, "open", {10.0: (v, {})})
    assert found.next_up == 10.0 and found.limiter.startswith("overloaded: the queue grew")
    steady = [row(i / 10, 0.01, i / 10 + 0.2, rate=10.0, planned=i / 10) for i in range(200)]
    assert verdict(steady).decision == "pass" and verdict(steady).flags["overloaded"] is None


# --- a verdict with an interval ---------------------------------------------------------------------------
def test_an_undecided_verdict_holds_the_target_inside_its_interval():
    """A steady window of five 4-s blocks: in four, TTFT is 400 ms; in one (a fifth of the requests), 600 ms.
    The point p90 is 600 ms, a miss against 500 ms, but a third of the resamples of the blocks hold no slow
    one: the interval (400-600 ms) holds the limit, so the level is undecided, and the capacity a range."""
    rows = [
        row(i / 10, 0.6 if i // 40 == 1 else 0.4, i / 10 + 0.7, rate=10.0, planned=i / 10) for i in range(200)
    ]
    v = verdict(rows)
    assert v.values["ttft_p90_ms"] == pytest.approx(600.0) and v.met is False  # the point verdict: a miss
    assert v.decision == "undecided" and v.intervals["ttft_p90_ms"] == pytest.approx((400.0, 600.0))
    assert "undecided" in v.limiter
    passed = verdict([dict(r, ttft_ms=100.0) for r in rows])
    missed = verdict([dict(r, ttft_ms=900.0) for r in rows])
    assert (passed.decision, missed.decision) == ("pass", "miss")
    found = cap.capacity(CHAT, "open", {5.0: (passed, {}), 10.0: (v, {}), 20.0: (missed, {})})
    assert (found.value, found.next_up, found.bound, found.undecided) == (5.0, 20.0, "range", (10.0,))
    # the search refines below the undecided level, not above it
    assert cap.next_level({5.0: "pass", 10.0: "undecided", 20.0: "miss"}, False, None) == pytest.approx(
        50**0.5
    )


class Coin(Knee):
    """Each level's first two timed requests (counted from its cache reset, which every level starts with)
    wait 300 ms for their first token, the rest 50 ms: at C=1, 20 requests, two slow ones are a tenth of
    the steady window, so TTFT p90 sits on the boundary between them; a limit of 75 ms lies inside its
    interval, at 20 requests and at 40 (the level run again for twice the time) alike."""

    def reset_cache(self) -> None:
        self.n = 0

    async def stream(self, request: Request, clock: TokenClock) -> RawOutput:
        self.n += 1
        await asyncio.sleep(0.3 if 2 <= self.n <= 3 else 0.05)  # the first request is the first wave
        clock.tick(request.max_new_tokens)
        return RawOutput(token_ids=[7] * request.max_new_tokens, text="")


def test_an_undecided_level_is_run_once_more_for_twice_the_time_then_reported_undecided(
    tiny_model_dir, tmp_path
):
    spec = """
workloads:
  - name: coin
    kind: load
    shape: fixed
    prompt_tokens: 16
    shared_prefix_tokens: [0]
    output_tokens: 2
    requests: 20
    warmup_requests: 0
    levels: [1]
    search_levels: 2
    search_targets: ["coin:ttft_p90_ms=75"]
"""
    from llm_call_anatomy.harness.runner import Runner

    target = parse_target("coin:ttft_p90_ms=75")
    plan = plan_of(spec, tiny_model_dir, tmp_path)
    out = tmp_path / "run"
    backend = Coin()
    Runner(backend, plan, out, {"run_id": "coin", "backend": backend.name}, resume=False).run()
    levels = measured_levels(out, "knee", 0, "coin", "S=0", "closed")
    assert list(levels) == [1]  # nothing below C=1, nothing above the stated maximum
    rows, facts = levels[1]
    assert facts.extended == 2 and len(rows) == 40  # the same level, twice the requests, the latest attempt
    all_rows = [json.loads(x) for x in (out / "records.jsonl").read_text().splitlines()]
    assert len({r["extra"]["level_attempt"] for r in all_rows if r.get("case") == "C=1"}) == 2
    v = cap.judge(target, level_stats(rows, 1), facts)
    assert v.decision == "undecided"  # extended once, then reported undecided
    found = cap.capacity(target, "closed", {1: (v, facts)}, ceiling=1)
    assert (found.bound, found.value, found.undecided) == ("range", None, (1,))


# --- the search's bracket ---------------------------------------------------------------------------------
def test_bisection_stops_at_the_ratio_and_reports_both_ends():
    met = {1: True, 4: True, 16: False}
    assert cap.next_level(met, True, None) == 8
    assert cap.next_level({**met, 8: True}, True, None) == 11
    assert cap.next_level({**met, 8: True, 11: True}, True, None) == 13
    assert cap.next_level({**met, 8: True, 11: True, 13: False}, True, None) is None  # 13 / 11 < 1.25
    assert cap.next_level({**met, 8: True, 11: True, 13: False}, True, None, ratio=1.1) == 12
    assert cap.next_level({10.0: True, 12.0: False}, False, None) is None  # rates: 1.2 is within 1.25
    assert cap.next_level({10.0: True, 12.0: False}, False, None, ratio=1.1) == pytest.approx(120**0.5)

    def judged(levels):
        from llm_call_anatomy.contract.slo import Verdict

        return {
            x: (Verdict(ok, {}, {}, None if ok else "TTFT", "pass" if ok else "miss"), {})
            for x, ok in levels.items()
        }

    found = cap.capacity(
        CHAT, "closed", judged({1: True, 4: True, 8: True, 11: True, 13: False, 16: False}), 16
    )
    assert (found.value, found.next_up, found.bound, found.ratio) == (
        11,
        13,
        "bracket",
        pytest.approx(13 / 11),
    )
    # every level passed: "at least" only at the stated maximum; short of it, no floor
    assert cap.capacity(CHAT, "closed", judged({8: True, 16: True}), 16).bound == "floor"
    below = cap.capacity(CHAT, "closed", judged({8: True, 16: True}), 64)
    assert (below.bound, below.value, below.next_up) == ("unbracketed", 16, None)


# --- users who think ----------------------------------------------------------------------------------------
USERS_SPEC = """
workloads:
  - name: users
    kind: load
    shape: sessions
    system: You answer in one short line.
    turns:
      - {user: "First question?", assistant: "First answer."}
      - {user: "Second question?", assistant: "Second answer."}
      - {user: "Third question?", assistant: "Third answer."}
    users: 16
    output_tokens: 3
    warmup_requests: 0
    levels: [16]
    think_s: 0.4
    think: exponential
    users_start: fresh
"""


def test_a_think_time_population_keeps_more_users_than_requests_in_flight(tiny_model_dir, tmp_path):
    """16 users, each thinking 0.4 s on average (exponential, drawn from the seed) between an answer and its
    next turn, served in some 20-200 ms: far fewer than 16 requests are in flight. The level record says
    so (users, requests in flight mean and p90, arrivals/s), and every request its planned submit."""
    plan = plan_of(USERS_SPEC, tiny_model_dir, tmp_path)
    out = tmp_path / "run"
    run(plan, out)
    levels = measured_levels(out, "knee", 0, "users", "sessions", "closed")
    rows, facts = levels[16]
    assert len(rows) == 48 and facts.think == "exponential" and facts.think_time_s == 0.4
    assert facts.users == 16 and facts.in_flight_p90 < 16 and facts.in_flight_mean < 8
    assert facts.arrivals_per_s > 0
    # no user sent two turns back to back: each waited a think time after its previous answer
    by_user = {}
    for r in sorted(rows, key=lambda r: r["submit_s"]):
        by_user.setdefault(r["user"], []).append(r)
    gaps = [
        b["planned_submit_s"] - a["finish_s"]
        for rs in by_user.values()
        for a, b in zip(rs, rs[1:], strict=False)
    ]
    assert len(gaps) == 32 and all(g > 0 for g in gaps) and 0.15 < sum(gaps) / len(gaps) < 1.0
    # users did not all start at once: their first turns are spread over the think time
    firsts = sorted(rs[0]["planned_submit_s"] for rs in by_user.values())
    assert firsts[-1] - firsts[0] > 0.2


def test_a_warm_up_does_not_think(tiny_model_dir, tmp_path, monkeypatch):
    """A level's warm-up primes the engine, it does not model users: its requests go at once, whatever the
    level's think time (on the H200, 32 warm-up turns with a 30 s think took 2.5 minutes a level). The timed
    level keeps its think."""
    import llm_call_anatomy.harness.load_runner as load_runner

    seen = []
    real = load_runner.run_level

    def spy(backend, requests, settings):
        seen.append((len(requests), settings.think_time_s))
        return real(backend, requests, settings)

    monkeypatch.setattr(load_runner, "run_level", spy)
    spec = USERS_SPEC.replace("warmup_requests: 0", "warmup_requests: 4")
    spec = spec.replace("think_s: 0.4", "think_s: 0.05")
    run(plan_of(spec, tiny_model_dir, tmp_path), tmp_path / "run")
    assert seen == [(4, 0.0), (16, 0.05)]


def test_stationary_users_start_mid_session_and_go_on_to_a_next_one(tiny_model_dir, tmp_path):
    """By default users who think start a level where a long-running population is: each at a turn drawn
    evenly over its session (the turns before it are not sent), then on to a next session, so no user leaves
    before the level ends. Every user sends, and together they send fewer first turns than fresh users do."""
    spec = USERS_SPEC.replace("    users_start: fresh\n", "").replace("think_s: 0.4", "think_s: 0.05")
    plan = plan_of(spec, tiny_model_dir, tmp_path)
    level = next(g for g in plan.groups if not g.warmup)
    assert level.load["users_start"] == "stationary"
    firsts = [min(s.turn for s in level.steps if s.user == u) for u in range(16)]
    assert set(firsts) == {1, 2, 3}  # drawn over the three turns, the same draw at every level and start
    nexts = sorted({s.user for s in level.steps} - set(range(16)))
    assert len(nexts) == 16 and all(
        [s.turn for s in level.steps if s.user == u] == [1, 2, 3] for u in nexts
    )  # a next session is whole
    last = {s.user: len(plan.prompts[s.prompt]) for s in level.steps if s.turn == 3}
    # a user's id is in its prompts' text: next sessions' ids keep them as long as the workload's own
    assert max(last[u] for u in nexts) <= max(last[u] for u in range(16))
    out = tmp_path / "run"
    run(plan, out)
    rows, facts = measured_levels(out, "knee", 0, "users", "sessions", "closed")[16]
    assert facts.users_start == "stationary" and facts.session_turns == 3
    assert facts.users == 16  # users, not sessions: a user who ends one goes on to the next
    assert len(rows) == len(level.steps) and {r["user"] for r in rows} == {s.user for s in level.steps}


def test_young_users_leave_a_level_undecided():
    """Users who think and all started with the level: a window of their first two turns (of 10) says
    nothing of the population the level was planned as, pass or miss; users started where a long-running
    population is, or whose judged turns average (T + 1) / 2, are judged as usual."""
    young = [{**row(i / 10, 0.05, i / 10 + 0.3), "turn": 1 + i % 2, "user": i} for i in range(300)]
    facts = {"think_time_s": 30.0, "requests_planned": 1000}  # 100 users x 10 turns, recorded before
    v = cap.judge(CHAT, level_stats(young, 100), facts)
    assert v.decision == "undecided" and "turns judged average 1.5" in v.flags["young_users"]
    assert "5.5 (sessions of 10 turns)" in v.limiter
    assert cap.judge(CHAT, level_stats(young, 100), {**facts, "users_start": "stationary"}).decision == "pass"
    aged = [{**r, "turn": 1 + i % 10} for i, r in enumerate(young)]
    assert cap.judge(CHAT, level_stats(aged, 100), facts).decision == "pass"
    slow = [{**r, "first_token_s": r["submit_s"] + 0.9, "ttft_ms": 900.0} for r in young]
    assert cap.judge(CHAT, level_stats(slow, 100), facts).decision == "undecided"  # a young miss too
    assert cap.judge(CHAT, level_stats(young, 100), {"requests_planned": 1000}).decision == "pass"  # no think


def test_more_sessions_left_open_than_users_keep_a_pass_and_leave_a_miss_undecided():
    """A closed loop of U users who think leaves at most U sessions unfinished (a user takes another session
    only when its own ends); more left open (the load loop before its fix of 2026-12-04) carried more than
    U users' load: a pass stands, a miss is undecided, overloaded or not; at most U open is as usual."""
    facts = {"think_time_s": 30.0, "session_turns": 10, "users_start": "stationary"}
    # 150 sessions left open at turn 5, and 50 ended at turn 10, under U = 100 users
    many = [{**row(i / 10, 0.05, i / 10 + 0.3), "turn": 5 if i < 150 else 10, "user": i} for i in range(200)]
    v = cap.judge(CHAT, level_stats(many, 100), facts)
    assert (
        v.decision == "pass" and "150 left open where U=100 users leave at most 100" in v.flags["users_over"]
    )
    slow = [{**r, "first_token_s": r["submit_s"] + 0.9, "ttft_ms": 900.0} for r in many]
    v = cap.judge(CHAT, level_stats(slow, 100), facts)
    assert v.decision == "undecided" and "more users than planned" in v.limiter
    few = [{**r, "turn": 5 if i < 100 else 10} for i, r in enumerate(slow)]  # 100 open: as many as users
    assert cap.judge(CHAT, level_stats(few, 100), facts).decision == "miss"
    assert cap.judge(CHAT, level_stats(slow, 100), {"session_turns": 10}).decision == "miss"  # no think


def test_an_open_loops_users_start_at_their_first_turn(tiny_model_dir, tmp_path):
    """Stationary users are a closed loop's: an open loop's arrivals are new users, each session whole from
    its first turn, and its level says nothing of users_start."""
    spec = USERS_SPEC.replace("    users_start: fresh\n", "").replace(
        "levels: [16]", "levels: [16]\n    rates: [2]"
    )
    plan = plan_of(spec, tiny_model_dir, tmp_path)
    closed, open_ = (
        next(g for g in plan.groups if not g.warmup and g.load.get(k)) for k in ("concurrency", "rate_rps")
    )
    assert closed.load["users_start"] == "stationary" and "users_start" not in open_.load
    users = {s.user for s in open_.steps}
    assert all([s.turn for s in open_.steps if s.user == u] == [1, 2, 3] for u in users)


def test_a_verdict_names_the_limit_that_decided_it():
    """TTFT well within its limit, TPOT far over it: the miss is TPOT's, and the verdict says so (the page's
    "missed:" figure is read from it, never the first limit's); an undecided level names the limit whose
    interval holds its bound; a pass names the limit nearest its bound (the page's "met:" figure)."""
    target = parse_target("mychat:ttft_p90_ms=1000,tpot_p90_ms=40")
    slow = [row(i / 10, 0.1, i / 10 + 0.3, rate=10.0, planned=i / 10) for i in range(200)]  # TPOT 200 ms
    v = verdict(slow, target=target)
    assert (v.decision, v.deciding) == ("miss", "tpot_p90_ms")
    assert v.values["ttft_p90_ms"] < 1000 and v.values["tpot_p90_ms"] > 40
    from llm_call_anatomy.workloads.load.report.capacity_group import evidence

    assert evidence(v)["limit"] == "tpot_p90_ms"  # the page's "missed:" figure
    fast = verdict(
        [row(i / 10, 0.1, i / 10 + 0.12, rate=10.0, planned=i / 10) for i in range(200)], target=target
    )
    assert (fast.decision, fast.deciding) == ("pass", "tpot_p90_ms")  # TPOT 20 ms of 40, TTFT 100 of 1,000
    early = verdict(
        [row(i / 10, 0.9, i / 10 + 0.91, rate=10.0, planned=i / 10) for i in range(200)], target=target
    )
    assert (early.decision, early.deciding) == ("pass", "ttft_p90_ms")  # TTFT 900 ms of 1,000, TPOT 10 of 40
    edge = [
        row(i / 10, 0.6 if i // 40 == 1 else 0.4, i / 10 + 0.7, rate=10.0, planned=i / 10) for i in range(200)
    ]
    v = verdict(edge)
    assert (v.decision, v.deciding) == ("undecided", "ttft_p90_ms")
