"""The load kind's planner: per variant and level, an unrecorded warm-up group and the level's group
of steps (a user's turns, or fixed-shape requests), and the pool the capacity search cuts from.

``plan`` is the kind's ``Kind.plan``; the groups' ``load`` settings tell the harness's concurrent
runner (``harness/load_runner.py``) the level's concurrency or rate. The levels the search adds
are cut from the pool by ``workloads/load/search.py``.
"""

from __future__ import annotations

import random
from typing import Any

from llm_call_anatomy.contract.arrivals import arrival_times
from llm_call_anatomy.contract.chat import Renderer, common_prefix_len
from llm_call_anatomy.contract.plan import Group, Plan, Step
from llm_call_anatomy.workloads.load.prompts import (
    RANDOM_SEED,
    SessionPrompts,
    fixed_prompt,
    shared_prefix_ids,
)
from llm_call_anatomy.workloads.load.spec import DEFAULT_USERS, STEADY_REQUESTS, LoadSpec


def _users(spec: LoadSpec, concurrency: int | None, rate_rps: float | None = None) -> int:
    """Sessions a level runs, each whole: C of them (at least 4, so a level is not over after one
    session at C=1), at most the spec's users; an open-loop rate runs every user, and more where its
    arrivals over ``duration_s`` need more (a new user an arrival: a sustained rate of new sessions)."""
    users = spec.user_count() or DEFAULT_USERS
    if concurrency is None:
        return max(users, open_requests(spec, rate_rps)) if rate_rps else users
    return min(users, max(concurrency, 4))


def stationary_start(user: int, turns: int) -> int:
    """The turn (0-based) a stationary user is at when a level starts: drawn evenly over its session's turns
    from the seed (a user who has run sessions for long is at any turn alike: each takes one think and one
    answer), the same for a user at every level and start."""
    return random.Random(f"{RANDOM_SEED}:start:{user}").randrange(turns) if turns else 0


def pool_users(spec: LoadSpec) -> int:
    """The users a variant's search pool holds: every user an open-loop level may run (an extended one's)."""
    rate_ceiling = max([*spec.rates, spec.search_max_rate or 0]) if spec.rates else None
    return max(
        spec.user_count() or DEFAULT_USERS, open_requests(spec, rate_ceiling, 2) if rate_ceiling else 0
    )


def next_session(spec: LoadSpec) -> int:
    """The user id from which stationary users' next sessions are numbered (user u's is this + u): above
    every user a plan of ``spec`` runs (its users, the warm-up users after them, a search pool's), and no
    more digits than it needs: a user's id is in its prompts' text (its incident numbers), so ids far larger
    would make the next sessions' prompts longer than the workload's own."""
    return 2 * max(pool_users(spec), spec.warmup_requests or 0, *spec.levels)


def _timed_users(spec: LoadSpec, users: int, stationary: bool) -> list[int]:
    """A level's users: ``users`` of them; with stationary users (a closed loop's, who think) each has a next
    session after its first, so that no user leaves before the level ends (a level of 90 s at a 30 s think
    ends before a 10-turn session does, but a user who starts at its 9th turn is done after two)."""
    first = list(range(users))
    if stationary:
        base = next_session(spec)
        return first + [base + u for u in first]
    return first


def _stationary(spec: LoadSpec, concurrency: int | None) -> bool:
    """Users start mid-session in a closed loop of users who think (an open loop's arrivals are new users,
    at their first turn)."""
    return bool(concurrency) and spec.stationary_users


def open_requests(spec: LoadSpec, rate_rps: float, extend: float = 1) -> int:
    """An open-loop level's requests (sessions): the arrivals its process draws, with the level's seed, over
    ``duration_s`` (x ``extend``) — the same draw the load loop starts them at (``contract.arrivals``)."""
    return len(
        arrival_times(
            rate_rps,
            until_s=spec.duration_s * extend,
            process=spec.arrival,
            burstiness=spec.burstiness,
            seed=RANDOM_SEED,
        )
    )


def fixed_requests(requests: int | None, concurrency: int | None) -> int:
    """A closed fixed-shape level's requests (``requests`` when given): the first wave (C) and a steady
    window of STEADY_REQUESTS x C, at least 32 (an open-loop rate runs for a time: ``open_requests``)."""
    return requests if requests is not None else max(32, (1 + STEADY_REQUESTS) * (concurrency or 3))


# ``repeats`` is not used: levels, not repeats
def plan(spec: LoadSpec, renderer: Renderer, out: Plan, repeats: int, start: int = 0) -> None:
    """Per variant and level: an unrecorded warm-up group (the cache reset before it), then the level's group,
    which inherits the warm-up's cache. With the capacity search on, the variant's last closed-loop and
    last open-loop group carry the search's settings, and a pool of steps (warm-up and timed, at the
    search's ceiling) lets the runner cut the levels it adds (``search_groups``)."""
    sessions = SessionPrompts(spec, renderer)
    variants = ["sessions"] if spec.shape == "sessions" else [f"S={s}" for s in spec.shared_prefix_tokens]
    ceiling = max([*spec.levels, spec.search_max or 0]) if spec.levels else None
    rate_ceiling = max([*spec.rates, spec.search_max_rate or 0]) if spec.rates else None
    for variant in variants:
        prefix = shared_prefix_ids(renderer, int(variant[2:])) if spec.shape == "fixed" else []
        last: dict[str, Group] = {}
        for case, load in spec.loads():
            warm, timed = _level_steps(
                spec,
                sessions,
                renderer,
                out,
                variant,
                case,
                prefix,
                load.get("concurrency"),
                load.get("rate_rps"),
            )
            settings = _settings(spec, load)
            block = f"{spec.name}/{variant}/{case}"
            if warm:
                out.groups.append(
                    Group(block=block, steps=warm, warmup=True, reset_cache=True, load=settings)
                )
            out.groups.append(Group(block=block, steps=timed, reset_cache=not warm, load=settings))
            last["closed" if load.get("concurrency") else "open"] = out.groups[-1]
        if not spec.search_levels or not last:
            continue
        pooled = pool_users(spec)
        # the pool's users start mid-session where only closed levels are cut from it (an open loop's are new)
        pool_stationary = _stationary(spec, ceiling) and not spec.rates
        pool = f"{spec.name}/{variant}/search-pool"
        for loop, group in last.items():
            group.load = {
                **group.load,
                "search": {
                    "loop": loop,
                    "levels": spec.search_levels,
                    "pool": pool,
                    "ceiling": ceiling if loop == "closed" else rate_ceiling,
                    "ratio": spec.search_ratio,
                    "targets": spec.search_targets,
                    "shape": spec.shape,
                    "users": _users(spec, None),
                    "pool_users": pooled,
                    **({"next_session": next_session(spec)} if pool_stationary else {}),
                    "requests": spec.requests,
                    "warmup_requests": spec.warmup_requests,
                    "settings": _settings(spec, {"concurrency": None}),
                },
            }
        warm = _level_steps(spec, sessions, renderer, out, variant, "pool", prefix, ceiling)[0]
        if spec.shape == "sessions":  # every user an open-loop level may run, an extended one's too
            users = _timed_users(spec, pooled, pool_stationary)
            timed = _session_steps(spec, sessions, out, "pool", users, stationary=pool_stationary)
        else:  # as many requests as the largest level the search may add (extended: twice), closed or open
            n = max(2 * fixed_requests(spec.requests, ceiling), open_requests(spec, rate_ceiling or 1, 2))
            timed = _fixed_steps(spec, renderer, out, variant, "pool", prefix, range(n))
        if warm:
            out.groups.append(Group(block=pool, steps=warm, warmup=True, load={"pool": "warmup"}))
        out.groups.append(Group(block=pool, steps=timed, warmup=True, load={"pool": "timed"}))


def _settings(spec: LoadSpec, load: dict[str, Any]) -> dict[str, Any]:
    return {
        **load,
        "think_time_s": spec.mean_think_s if spec.shape == "sessions" else 0.0,
        "think": spec.think,
        **({"users_start": "stationary"} if _stationary(spec, load.get("concurrency")) else {}),
        "seconds": spec.seconds,
        "seed": RANDOM_SEED,
        "duration_s": spec.duration_s,  # open loop only (the load loop reads it with a rate)
        "arrival": spec.arrival,
        "burstiness": spec.burstiness,
    }


def _level_steps(
    spec: LoadSpec,
    sessions: SessionPrompts,
    renderer: Renderer,
    out: Plan,
    variant: str,
    case: str,
    prefix: list[int],
    concurrency: int | None,
    rate_rps: float | None = None,
) -> tuple[list[Step], list[Step]]:
    """A level's warm-up steps and timed steps."""
    c = concurrency or 1
    warm_n = spec.warmup_requests if spec.warmup_requests is not None else c
    if spec.shape == "sessions":
        users = spec.user_count() or DEFAULT_USERS  # warm-up users come after every timed one
        warm = _session_steps(spec, sessions, out, case, range(users, users + warm_n), warm_turns=1)
        stationary = _stationary(spec, concurrency)
        users = _timed_users(spec, _users(spec, concurrency, rate_rps), stationary)
        return warm, _session_steps(spec, sessions, out, case, users, stationary=stationary)
    n = open_requests(spec, rate_rps) if rate_rps else fixed_requests(spec.requests, concurrency)
    warm = _fixed_steps(spec, renderer, out, variant, case, prefix, range(10**6, 10**6 + warm_n))
    return warm, _fixed_steps(spec, renderer, out, variant, case, prefix, range(n))


def _step(spec: LoadSpec, mode: str, case: str, key: str, rep: int, **kw: Any) -> Step:
    return Step(
        workload=spec.name,
        kind="load",
        mode=mode,
        case=case,
        prompt=key,
        max_new_tokens=spec.output_tokens,
        rep=rep,
        temperature=0.0,
        ignore_eos=True,
        reuse_prefix=True,
        needs=["load"],
        **kw,
    )


def _session_steps(
    spec: LoadSpec,
    sessions: SessionPrompts,
    out: Plan,
    case: str,
    users: range | list[int],
    warm_turns: int | None = None,
    stationary: bool = False,
) -> list[Step]:
    """Every user's turns, user by user (the load loop runs a user's turns in order, users concurrently);
    ``stationary``: a user's first session from its :func:`stationary_start` turn on (the turns before it ran
    before the level: not sent), its next session (:func:`next_session` and above) whole."""
    steps: list[Step] = []
    base = next_session(spec) if stationary else None
    sessions.prefetch(users, warm_turns)
    for u in users:
        prompts = sessions(u, warm_turns)
        start = stationary_start(u, len(prompts)) if base is not None and u < base else 0
        for t, ids in enumerate(prompts[start:], start):
            # what a prefix cache can hold for this request: the user's previous turn (sent in this level),
            # else what other users' first requests share with it (the system prompt and tools, at least)
            shared = common_prefix_len(prompts[t - 1], ids) if t > start else sessions.across(u, users)
            steps.append(
                _step(
                    spec,
                    "sessions",
                    case,
                    out.add_prompt(ids),
                    rep=u,
                    turn=t + 1,
                    user=u,
                    shared_prefix_tokens=shared,
                )
            )
    return steps


def _fixed_steps(
    spec: LoadSpec, renderer: Renderer, out: Plan, variant: str, case: str, prefix: list[int], requests: range
) -> list[Step]:
    return [
        _step(
            spec,
            variant,
            case,
            out.add_prompt(fixed_prompt(renderer, prefix, spec.prompt_tokens, r)),
            rep=r,
            shared_prefix_tokens=len(prefix),
        )
        for r in requests
    ]
