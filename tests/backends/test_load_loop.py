"""The load loop's users who think (backends/load_loop.py): a closed loop's worker is one user, so a user
whose next turn falls after the level's end takes no other session (issue 39: it drew think after think
until one fell inside the level, and a 90 s level of 256 users who think sent 1.4x the turns of 256 users
on the H200, more of them near its end); and each session's think times are seeded by its index in the
level, never by its place in a client process's shard (two processes' users thought alike)."""

from __future__ import annotations

import asyncio
import random
import time

from llm_call_anatomy.backends.load_loop import Drive, LoadSettings, drive, new_outcomes
from llm_call_anatomy.contract.adapter import BackendSettings, Request
from tests.harness.fakes import echo_backend_class


def _backend():
    return echo_backend_class()(BackendSettings(model_path="none", model_label="none"))


def test_a_user_who_thinks_past_the_levels_end_takes_no_other_session():
    """20 users (workers) who think 0.3 s on average, sessions of 100 turns, a 0.8 s level: no session ends,
    so only the 20 sessions the users start with may send anything."""
    backend = _backend()
    request = Request(prompt_ids=[1, 2, 3], max_new_tokens=2)
    sessions = [[request] * 100 for _ in range(220)]
    outs = new_outcomes(sessions)
    s = LoadSettings(concurrency=20, think_time_s=0.3, think="exponential", seconds=0.8, seed=7)
    asyncio.run(drive(Drive(backend.stream, 30.0, time.perf_counter()), sessions, outs, s))
    started = [k for k, o in enumerate(outs) if any(x.started for x in o)]
    assert len(started) <= 20, f"{len(started)} sessions sent turns with 20 users"
    assert started, "the level sent nothing"


def test_a_sessions_think_times_are_seeded_by_its_index_in_the_level(monkeypatch):
    """A client process's session 0 is the level's session ``keys[0]``: its think draws are that session's."""
    drawn: list[float] = []

    def record(self, rng, residual=False):
        drawn.append(rng.random())
        return 0.0

    monkeypatch.setattr(LoadSettings, "think_draw", record)
    backend = _backend()
    sessions = [[Request(prompt_ids=[1, 2], max_new_tokens=1)]]
    s = LoadSettings(concurrency=1, think_time_s=30.0, think="exponential", seed=13)
    asyncio.run(
        drive(
            Drive(backend.stream, 30.0, time.perf_counter()),
            sessions,
            new_outcomes(sessions),
            s,
            None,
            1,
            [5],
        )
    )
    asyncio.run(drive(Drive(backend.stream, 30.0, time.perf_counter()), sessions, new_outcomes(sessions), s))
    assert drawn == [random.Random("13:think:5").random(), random.Random("13:think:0").random()]
