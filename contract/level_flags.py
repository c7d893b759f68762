"""What a level's records say about the load it really got: offered as planned, overloaded, and its
population (users, requests in flight, arrivals/s). Pure functions of request records (dicts with
``submit_s``, ``planned_submit_s``, ``finish_s``, ``user``); ``contract.capacity.judge`` applies them.
:func:`level_kind` names the load a level was planned as (``closed C=8``...), for the page and the
terminal's summary at the end of a run alike; :func:`level_name` is the short name the page and the README
tables show for a level (``U=256`` for users who think, where the record's case says ``C=256``).

- **Not offered as planned**: the load loop submitted a request later than its plan by more than
  :data:`SUBMIT_LAG_MS` at the :data:`LAG_PERCENTILE` th percentile, or (open loop) the achieved arrival
  rate is off the offered one beyond the process's noise: ``(n - 1)`` arrivals between the first and
  last actual submit, against ``rate x span``, in standard deviations of the process's count
  (``contract.arrivals.rate_z``; flagged past ``RATE_Z`` = 3.29, p = 0.001 two-sided). An open-loop level
  without planned submit times (recorded before they were: a fixed 33 requests, a burst) is not offered
  as planned either: nothing says its arrivals were a sustained rate. Such a level never passes.
- **Overloaded**: the queue grows through the window. The time-averaged count of requests in flight
  (submitted, not finished) over the window's last quarter exceeds its first quarter's (after one
  median request of ramp-up: an open level starts empty) by more than :data:`OVERLOAD_SIGMAS` x
  sqrt(first + 1) and at least :data:`OVERLOAD_MIN` requests, and fewer requests finished in the window
  than arrived in it. A steady queue's count is roughly Poisson around its mean, so 3 sd of one
  instant's count is a conservative bound on the drift of two quarters' averages. A closed loop keeps C
  in flight and is never overloaded by this test. An overloaded level misses every target, whatever
  its percentiles: its percentiles only say how long the window was.
- **Young users** (closed loop of users who think): every user started its session with the level
  (``users_start`` not stationary), and the level ended before the population aged: the turns judged in
  the window average under :data:`YOUNG_SHARE` of what users who have run for long average, (T + 1) / 2
  for sessions of T turns (each turn takes one think and one answer, so a long-running user is at any turn
  alike). Its requests are the short early turns only (a 90 s level at a 30 s think judges turns 1-3 of 10),
  so its percentiles say nothing of the population it was planned as: ``contract.capacity.judge`` leaves
  it undecided, pass or miss (a miss on young users is no steady miss either: with a prefix cache a late
  turn's prefill can be the cheaper one), unless it is overloaded.
- **More users than planned** (closed loop of users who think): more sessions were left open (started, not
  at their last turn) than the level has users (:func:`users_over`). The level carried more than its users'
  load: a pass stands (it held more), a miss is undecided (the excess may have made it), overloaded or not.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

from llm_call_anatomy.contract.arrivals import DEFAULT_PROCESS, RATE_Z, rate_z
from llm_call_anatomy.contract.level_facts import LevelFacts
from llm_call_anatomy.contract.records import num

# A request submitted this much after its planned time shifts its TTFT by 1 % of the tightest default
# target (chat: TTFT p90 <= 500 ms), below a level's run-to-run noise; the in-process vLLM loop of issue 39
# lagged up to 590 ms (its step loop, not the plan, decided when a request entered)
SUBMIT_LAG_MS = 5.0
LAG_PERCENTILE = 99.0
OVERLOAD_SIGMAS = 3.0
OVERLOAD_MIN = 2.0
YOUNG_SHARE = 0.8


def _pct(xs: list[float], p: float) -> float | None:
    if not xs:
        return None
    xs = sorted(xs)
    rank = (len(xs) - 1) * p / 100
    lo = math.floor(rank)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (rank - lo)


@dataclass(frozen=True)
class LevelFlags:
    not_offered: str | None = None  # why the level was not offered as planned (None: it was)
    overloaded: str | None = None  # why the queue grew through the window (None: it did not)
    submit_lag_p99_ms: float | None = None
    offered_rps: float | None = None
    achieved_rps: float | None = None
    rate_z: float | None = None
    in_flight_first: float | None = None  # mean in flight over the window's first quarter (after ramp-up)
    in_flight_last: float | None = None
    young_users: str | None = None  # why the users were younger than a long-running population (None: not)
    users_over: str | None = None  # more sessions left open than the level's users (None: not)
    arrivals: int = 0  # requests submitted in the window
    completions: int = 0  # requests finished in the window

    def to_dict(self) -> dict:
        return asdict(self)


def in_flight_steps(rows: list[dict]) -> list[tuple[float, int]]:
    """(time, requests in flight from then on), one entry per submit or finish, in time order."""
    events = []
    for r in rows:
        s, f = num(r.get("submit_s")), num(r.get("finish_s"))
        if s is None:
            continue
        events.append((s, 1))
        if f is not None:
            events.append((f, -1))
    events.sort()
    out, level = [], 0
    for t, d in events:
        level += d
        out.append((t, level))
    return out


def time_shares(steps: list[tuple[float, int]], a: float, b: float) -> dict[int, float]:
    """Seconds spent at each in-flight count between ``a`` and ``b``."""
    shares: dict[int, float] = {}
    level, last = 0, a
    for t, n in steps:
        if t <= a:
            level = n
            continue
        if t >= b:
            break
        shares[level] = shares.get(level, 0.0) + t - last
        level, last = n, t
    shares[level] = shares.get(level, 0.0) + max(0.0, b - last)
    return shares


def mean_in_flight(steps: list[tuple[float, int]], a: float, b: float) -> float | None:
    if b <= a:
        return None
    return sum(k * s for k, s in time_shares(steps, a, b).items()) / (b - a)


def young_users(
    rows: list[dict],
    window: tuple[float, float] | None,
    facts: LevelFacts | dict | None,
    concurrency: int | None,
) -> str | None:
    """Why a closed loop of users who think judged younger users than it was planned as (see the module
    docstring), or None: the turns of the requests submitted in the window against (T + 1) / 2, T the level's
    planned turns a session (``session_turns``; a level recorded before it: requests planned ÷ users)."""
    facts = LevelFacts.of(facts)
    if not concurrency or not num(facts.think_time_s) or facts.users_start == "stationary" or window is None:
        return None
    turns = [
        t
        for r in rows
        if (t := num(r.get("turn")))
        and (s := num(r.get("submit_s"))) is not None
        and window[0] <= s <= window[1]
    ]
    planned = num(facts.session_turns) or (num(facts.requests_planned) or 0) / concurrency
    if not turns or not planned or planned < 2:
        return None
    mean, stationary = sum(turns) / len(turns), (planned + 1) / 2
    if mean >= YOUNG_SHARE * stationary:
        return None
    return (
        f"young users: the turns judged average {mean:.1f}, where users who have run for long average "
        f"{stationary:.1f} (sessions of {planned:.3g} turns): every user started its session with the level "
        "(users_start: stationary starts them where a long-running population is)"
    )


def users_over(rows: list[dict], facts: LevelFacts | dict | None, concurrency: int | None) -> str | None:
    """Why a closed loop of users who think started more sessions than its users could, or None. A worker
    is one user and runs one session at a time, taking another only when its session ends (its last turn,
    ``session_turns``: a stationary user's first session starts mid-way but ends there too), so the sessions
    started (a ``user`` id each: a next session has its own) less those that reached their last turn are at
    most the users. Until the load loop's fix of 2026-12-04 a user whose next turn fell after the level's end
    took another session and drew another think (``backends.load_loop``): the level sent more turns than
    its users would, more of them near its end."""
    facts = LevelFacts.of(facts)
    turns = num(facts.session_turns)
    if not concurrency or not num(facts.think_time_s) or not turns:
        return None
    last: dict[object, float] = {}
    for r in rows:
        if num(r.get("submit_s")) is not None and r.get("user") is not None:
            last[r["user"]] = max(last.get(r["user"], 0.0), num(r.get("turn")) or 0.0)
    open_ = sum(t < turns for t in last.values())
    if open_ <= concurrency:
        return None
    return (
        f"more users than planned: {len(last)} sessions started, {len(last) - open_} ended, {open_} left "
        f"open where U={concurrency} users leave at most {concurrency} (a user who thought past the level's "
        "end took another session, before the load loop's fix of 2026-12-04): the level carried more than "
        "its users' load"
    )


def level_flags(
    rows: list[dict],
    window: tuple[float, float] | None,
    rate_rps: float | None = None,
    process: str = DEFAULT_PROCESS,
    burstiness: float = 1.0,
    facts: LevelFacts | dict | None = None,
    concurrency: int | None = None,
) -> LevelFlags:
    """The flags of one level from its started requests (``rows``: every one, the first wave's too) and its
    steady window; ``rate_rps``: the offered rate of an open-loop level (None: a closed loop); ``facts`` and
    ``concurrency``: a closed loop's users who think, for :func:`young_users`."""
    started = [r for r in rows if num(r.get("submit_s")) is not None]
    lags = [
        (num(r["submit_s"]) - p) * 1e3 for r in started if (p := num(r.get("planned_submit_s"))) is not None
    ]
    lag = _pct(lags, LAG_PERCENTILE)
    why = []
    if rate_rps and len(lags) < len(started):
        subs = sorted(num(r["submit_s"]) for r in started)
        span = subs[-1] - subs[0] if subs else 0.0
        why.append(
            f"no planned submit times: {len(started)} requests over {span:.2f} s, not a sustained rate "
            "(a level recorded before planned arrivals)"
        )
    if lag is not None and lag > SUBMIT_LAG_MS:
        why.append(f"submit lag p{LAG_PERCENTILE:g} {lag:.1f} ms > {SUBMIT_LAG_MS:g} ms")
    achieved = z = None
    if rate_rps and len(started) > 1:
        subs = sorted(num(r["submit_s"]) for r in started)
        span = subs[-1] - subs[0]
        if span > 0:
            achieved = (len(subs) - 1) / span
            z = rate_z(len(subs) - 1, rate_rps, span, process, burstiness)
            if abs(z) > RATE_Z:
                why.append(
                    f"achieved {achieved:.3g} arrivals/s against {rate_rps:g} offered (z = {z:.1f}, "
                    f"beyond {RATE_Z:g})"
                )
    flags = LevelFlags(
        not_offered="; ".join(why) or None,
        submit_lag_p99_ms=lag,
        offered_rps=rate_rps,
        achieved_rps=achieved,
        rate_z=z,
        young_users=young_users(started, window, facts, concurrency),
        users_over=users_over(started, facts, concurrency),
    )
    return _overload(flags, started, window)


def _overload(flags: LevelFlags, rows: list[dict], window: tuple[float, float] | None) -> LevelFlags:
    if window is None or window[1] <= window[0]:
        return flags
    t0, t1 = window
    durations = sorted(
        f - s for r in rows if (s := num(r.get("submit_s"))) is not None and (f := num(r.get("finish_s")))
    )
    ramp = min(durations[len(durations) // 2] if durations else 0.0, (t1 - t0) / 4)
    a = t0 + ramp
    q = (t1 - a) / 4
    steps = in_flight_steps(rows)
    first, last = mean_in_flight(steps, a, a + q), mean_in_flight(steps, t1 - q, t1)
    arrivals = sum(t0 <= num(r["submit_s"]) <= t1 for r in rows)
    completions = sum(t0 <= (num(r.get("finish_s")) or -1) <= t1 for r in rows)
    out = replace(
        flags, in_flight_first=first, in_flight_last=last, arrivals=arrivals, completions=completions
    )
    if first is None or last is None:
        return out
    bound = max(OVERLOAD_MIN, OVERLOAD_SIGMAS * math.sqrt(first + 1))
    if last - first > bound and completions < arrivals:
        return replace(
            out,
            overloaded=(
                f"the queue grew through the window: {first:.1f} -> {last:.1f} in flight (first to last "
                f"quarter, > +{bound:.1f}); {completions} finished of {arrivals} arrived"
            ),
        )
    return out


def population(rows: list[dict], window: tuple[float, float] | None, concurrency: int | None = None) -> dict:
    """A level's population from its records: users (distinct sessions that submitted; in a closed loop at
    most its ``concurrency``, a user who ends a session going on to the next), requests in flight over the
    window (time-weighted mean and p90) and arrivals per second (requests submitted in it ÷ its length).
    Sessions without a user id (fixed shape) count one user a request."""
    started = [r for r in rows if num(r.get("submit_s")) is not None]
    users = len(
        {r.get("user") if r.get("user") is not None else ("request", i) for i, r in enumerate(started)}
    )
    users = min(users, concurrency) if concurrency else users
    out = {"users": users, "in_flight_mean": None, "in_flight_p90": None, "arrivals_per_s": None}
    if window is None or window[1] <= window[0]:
        return out
    t0, t1 = window
    shares = time_shares(in_flight_steps(started), t0, t1)
    total = sum(shares.values())
    out["in_flight_mean"] = sum(k * s for k, s in shares.items()) / total
    acc = 0.0
    for k in sorted(shares):
        acc += shares[k]
        if acc >= 0.9 * total:
            out["in_flight_p90"] = k
            break
    out["arrivals_per_s"] = sum(t0 <= num(r["submit_s"]) <= t1 for r in started) / (t1 - t0)
    return out


def level_name(case: object, think_s: object = None) -> str:
    """The name a reader sees for a level: ``U=N`` where the level is a closed loop of N users who think
    between turns (``think_s``, the level's ``think_time_s``, > 0: fewer requests in flight than users),
    else the recorded case as it is (``C=8``: C requests always in flight; ``rate=4``). The records keep
    the planner's case, ``C=N`` for every closed level (old runs and ``--resume`` key on it): this is
    the one place that tells the two closed loops apart by name, at display time."""
    text = str(case)
    return closed_letter(think_s) + text[1:] if text.startswith("C=") else text


def closed_letter(think_s: object = None) -> str:
    """A closed loop's letter: ``U`` (users) where its users think between turns (``think_s`` > 0: fewer
    requests in flight than users), else ``C`` (requests always in flight)."""
    think = num(think_s)
    return "U" if think and think > 0 else "C"


def level_kind(
    concurrency: int | None, rate: float | None, facts: LevelFacts | dict | None, unit: str = "req/s"
) -> str:
    """What kind of load a level was, in words the page uses for it: ``closed C=8`` (C requests always in
    flight), ``U=8 users, think 30 s (exponential)`` (a closed loop of users who think between turns: fewer
    in flight than users), ``open 8 req/s (poisson, 60 s)`` (a sustained offered rate; ``unit`` sessions/s
    for a sessions load, whose arrivals start sessions). ``facts``: the level's, or its ``extra.level``."""
    facts = LevelFacts.of(facts)
    think = num(facts.think_time_s)
    if concurrency:
        if think:
            return f"U={concurrency} users, think {think:g} s ({facts.think or 'exponential'})"
        return f"closed C={concurrency}"
    if rate is None:
        return "open"
    duration = num(facts.duration_s)
    how = ", ".join(x for x in (facts.arrival, f"{duration:g} s" if duration else "") if x)
    return f"open {rate:g} {unit}" + (f" ({how})" if how else "")
