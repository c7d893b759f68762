"""The levels the load kind's capacity search adds (``Kind.search_groups``), cut from the plan's pool.

The planner (``workloads/load/planner.py``) puts a pool of warm-up and timed steps at the search's
ceiling into every variant that searches; the harness's capacity search (``harness/load_search.py``), having
chosen the next level (``contract.capacity``), asks the kind through the registry for that level's
groups: a prefix of the pool's users or requests, the same ones a planned level at that load has.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from llm_call_anatomy.contract.arrivals import arrival_times
from llm_call_anatomy.contract.plan import Group, Step
from llm_call_anatomy.workloads.load.planner import fixed_requests


def search_groups(
    info: dict[str, Any],
    pool_warm: list[Step],
    pool_timed: list[Step],
    block: str,
    concurrency: int | None,
    rate_rps: float | None,
    searched_for: str,
    extend: int = 1,
) -> list[Group]:
    """The warm-up and timed groups of a level the capacity search adds, cut from the variant's pool (the
    same requests a planned level at that load has: a prefix of the pool's users or requests). ``extend``
    (2: an undecided level run again for more time): twice the window, as a new attempt of the same level
    (open loop: ``duration_s`` x 2; closed: twice the requests, or sessions, the pool has them)."""
    case = f"C={concurrency}" if concurrency else f"rate={rate_rps:g}"
    c = concurrency or 1
    warm_n = info["warmup_requests"] if info["warmup_requests"] is not None else c
    settings = {
        **info["settings"],
        "concurrency": concurrency,
        "rate_rps": rate_rps,
        "searched_for": searched_for,
        "search_ceiling": info["ceiling"],
        "search_ratio": info.get("ratio"),
        # the engine's limit on requests running at once, where the search stopped at it (harness.load_search)
        **(
            {
                "search_engine_limit": info["engine_limit"],
                "search_engine_limit_name": info["engine_limit_name"],
            }
            if info.get("engine_limit")
            else {}
        ),
        **({"extended": extend} if extend > 1 else {}),
        # a closed level cut from a pool of stationary users (the planner's next_session: it keeps them)
        **({"users_start": "stationary"} if concurrency and info.get("next_session") is not None else {}),
    }
    duration = (settings.get("duration_s") or 0) * extend
    if rate_rps:
        settings["duration_s"] = duration
        n = len(
            arrival_times(
                rate_rps,
                until_s=duration,
                process=settings.get("arrival") or "poisson",
                burstiness=settings.get("burstiness") or 1.0,
                seed=settings.get("seed", 13),
            )
        )
    if info["shape"] == "sessions":
        users = min(info["users"], max(c, 4)) * extend if concurrency else max(info["users"], n)
        pooled = sorted({s.user for s in pool_timed})
        base = info.get("next_session")  # stationary users: each user's next session comes along
        first = [u for u in pooled if base is None or u < base][:users]
        keep = {*first, *(u for u in pooled if base is not None and u >= base and u - base in first)}
        timed = [s for s in pool_timed if s.user in keep]
    else:
        timed = pool_timed[: n if rate_rps else fixed_requests(info["requests"], concurrency) * extend]
    warm = pool_warm[:warm_n]
    groups = (
        [
            Group(
                block=block + f"/{case}",
                steps=[dataclasses.replace(s, case=case) for s in warm],
                warmup=True,
                reset_cache=True,
                load=settings,
            )
        ]
        if warm
        else []
    )
    return groups + [
        Group(
            block=block + f"/{case}",
            steps=[dataclasses.replace(s, case=case) for s in timed],
            reset_cache=not warm,
            load=settings,
        )
    ]
