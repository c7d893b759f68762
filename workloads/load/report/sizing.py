"""GPUs for U users who think (``python compare.py report RUNS --size users=N,think_s=Z[,slo=NAME]``), from
the measured populations.

A **population** is a sessions-shape closed group of levels (its requests carry user ids) whose level
records carry ``think_time_s`` (``contract.level_facts``): a level there is C = U users, each thinking Z s
between an answer and the next turn. Its capacity row (``capacity_group``) gives the users one GPU holds at
the target, as a bracket: the last pass U and the first miss U'.

- **Z measured**: users a GPU = U (the median engine start's last pass); GPUs = ⌈N ÷ U⌉; the range is
  ⌈N ÷ U'⌉ (the capacity could reach just under the first miss) to ⌈N ÷ min over engine starts of U⌉.
- **Z between two measured think times** Z₁ < Z < Z₂ (one backend and workload): Little's law at each
  capacity level, X_i = U_i ÷ (Z_i + R_i) requests a second with R_i the steady mean end-to-end latency;
  X and R linear in Z between them, U(Z) = X(Z) · (Z + R(Z)). The range: the same from the first misses
  and from each population's lowest engine start. Never beyond the measured think times: outside them the
  row says so and gives the run that would measure Z (``retarget.command``'s shape, ``think_time_s=Z``).
  Where no population missed above the capacity (a floor), the GPU count is an upper bound and the row gives
  the run that measures it and twice it in one plan (a bracket of its own; ``retarget.command``).
- **KV residency**: users a GPU × the mean prompt tokens of the capacity level's requests (a user's
  history when it sends its turn) against the engine's KV pool in tokens (env.json ``kv_cache_tokens``,
  ``max_total_num_tokens``, or blocks × block size: ``reports.kvcache.kv_tokens``); more than the
  pool means histories are evicted between turns, and the capacity of the cached runs above it is an
  upper bound.
"""

from __future__ import annotations

import math
import shlex
from typing import Any

import pandas as pd

from llm_call_anatomy.contract.options import parse_pairs
from llm_call_anatomy.contract.slo import Target
from llm_call_anatomy.reports import fmt
from llm_call_anatomy.reports.kvcache import kv_tokens
from llm_call_anatomy.reports.stats import num
from llm_call_anatomy.workloads.load.report.retarget import command

COLUMNS = [
    "backend",
    "variant",
    "target",
    "users",
    "think s",
    "from",
    "users a GPU",
    "users a GPU, lo",
    "users a GPU, hi",
    "GPUs",
    "GPUs lo",
    "GPUs hi",
    "KV tokens a GPU",
    "KV pool",
    "KV fits",
    "how",
]


def kv_pool(starts: list[dict]) -> float | None:
    """The engine's KV pool in tokens (the smallest over its engine starts); None where none says."""
    pools = [t for t in (kv_tokens(s) for s in starts) if t is not None]
    return min(pools) if pools else None


def _target(targets: tuple[Target, ...], name: str | None) -> Target | None:
    if name:
        return next((t for t in targets if t.name == name), None)
    return next((t for t in targets if not t.throughput_only), None)


def _steady_at(steady: pd.DataFrame, r: dict, value: Any) -> dict | None:
    if num(value) is None:
        return None
    g = steady[
        (steady["backend"] == r["backend"])
        & (steady["workload"] == r["workload"])
        & (steady["mode"] == r["mode"])
        & (steady["concurrency"] == value)
    ]
    return g.iloc[0].to_dict() if len(g) else None


def populations(cap: dict, backend: str, target: Target) -> dict[str, list[dict]]:
    """Per workload: its think-time populations for ``target``, sorted by think time, each ``{"think",
    "row", "at", "levels"}`` (the capacity row; the steady level row at its last pass; every steady level
    row of the group by its users)."""
    caps, steady = cap["capacity"], cap["steady"]
    out: dict[str, dict[float, dict]] = {}
    if caps.empty or steady.empty or "think_time_s" not in steady:
        return {}
    mine = caps[(caps["backend"] == backend) & (caps["target"] == target.name) & (caps["loop"] == "closed")]
    for r in mine.to_dict("records"):
        g = steady[
            (steady["backend"] == backend)
            & (steady["workload"] == r["workload"])
            & (steady["mode"] == r["mode"])
        ]
        thinks = {float(z) for z in g["think_time_s"] if num(z) is not None}
        sessions = "requests_per_session" in g and g["requests_per_session"].notna().any()
        if len(thinks) != 1 or not sessions:
            continue  # not a population (fixed shape: no user ids), or several think times in one group
        z = thinks.pop()
        entry = {
            "think": z,
            "row": r,
            "at": _steady_at(steady, r, r["value"]),
            "levels": {float(c): x for c, x in zip(g["concurrency"], g.to_dict("records"), strict=True)},
        }
        out.setdefault(r["workload"], {}).setdefault(z, entry)
    return {w: [by[z] for z in sorted(by)] for w, by in out.items()}


def _gpus(users: int, per_gpu: float | None) -> int | None:
    return math.ceil(users / per_gpu - 1e-9) if per_gpu and per_gpu > 0 else None


def _r_s(at: dict | None) -> float | None:
    e2e = num((at or {}).get("e2e_mean"))
    return e2e / 1e3 if e2e is not None else None


def little(users: float, think: float, r_s: float) -> float:
    """Little's law: a population of ``users`` thinking ``think`` s with responses of ``r_s`` s sends
    users ÷ (think + R) requests a second."""
    return users / (think + r_s)


def lowest(p: dict) -> float | None:
    """A population's lowest last pass over its engine starts (the row's is the median start's)."""
    r = p["row"]
    starts = [num(s.get("value")) for s in r.get("starts") or [] if num(s.get("value"))]
    return min([num(r["value"]), *starts]) if num(r["value"]) else None


def interpolate(z: float, p1: dict, p2: dict, u1: float | None, u2: float | None) -> float | None:
    """Users a GPU at think ``z`` between populations ``p1`` and ``p2``, from their levels of ``u1`` and
    ``u2`` users (each at its steady mean end-to-end latency R), by Little's law, X and R linear in Z."""
    if u1 is None or u2 is None:
        return None
    r1, r2 = _r_s(p1["levels"].get(float(u1))), _r_s(p2["levels"].get(float(u2)))
    if r1 is None or r2 is None:
        return None
    w = (z - p1["think"]) / (p2["think"] - p1["think"])
    x = little(u1, p1["think"], r1) + w * (little(u2, p2["think"], r2) - little(u1, p1["think"], r1))
    r = r1 + w * (r2 - r1)
    return x * (z + r)


def think_command(env: dict, backend: str, think: float) -> str:
    """The ``compare.py`` run that measures a population at ``think`` s: the run's own command line for that
    backend, with ``think_time_s`` set and a new ``--out`` beside the run's."""
    argv = [str(a) for a in env.get("argv") or []]
    words, load, out_dir, i = ["python", "compare.py", "--backend", backend], "", None, 0
    while i < len(argv):
        a = argv[i]
        v = argv[i + 1] if i + 1 < len(argv) and not argv[i + 1].startswith("--") else None
        if a in ("--load", "--out", "--backend"):
            load, out_dir = (v or "", out_dir) if a == "--load" else (load, v if a == "--out" else out_dir)
        elif a != "--resume":
            words += [a] if v is None else [a, v]
        i += 2 if v is not None else 1
    try:
        fields = parse_pairs(load, "--load") if load else {}
    except ValueError:
        fields = {}
    fields["think_time_s"] = f"{think:g}"
    out_dir = out_dir or f"runs/{env.get('run_id', 'run')}"
    return shlex.join(
        [
            *words,
            "--load",
            ",".join(f"{k}={v}" for k, v in fields.items()),
            "--out",
            f"{out_dir}-think{think:g}",
        ]
    )


def _row(ask, backend: str, workload: str, target: Target, **fields: Any) -> dict[str, Any]:
    return {
        **dict.fromkeys(COLUMNS),
        "backend": backend,
        "variant": workload,
        "target": target.name,
        "users": ask.users,
        "think s": ask.think_s,
        **fields,
    }


def answer(
    ask,
    backend: str,
    workload: str,
    target: Target,
    pops: list[dict],
    pool: float | None,
    env: dict,
    name: str,
) -> dict:
    """One backend and workload's sizing row (see the module docstring)."""
    z = ask.think_s
    thinks = [p["think"] for p in pops]
    exact = next((p for p in pops if abs(p["think"] - z) < 1e-9), None)
    measured = "measured think times: " + ", ".join(f"{t:g} s" for t in thinks)
    if exact is not None:
        r = exact["row"]
        per_gpu, hi = num(r["value"]), num(r["next_up"])
        mean_prompt = num((exact["at"] or {}).get("mean_prompt"))
        how = (
            f"measured at a {z:g} s think ({r['mode']}): U={fmt.n(per_gpu)} users met {target.name}"
            if per_gpu
            else f"measured at a {z:g} s think ({r['mode']}): no level met {target.name}"
        ) + (f", U={fmt.n(hi)} missed" if hi else "")
        source = "measured"
        lo_users = lowest(exact)
    elif thinks and thinks[0] < z < thinks[-1]:
        p1 = max((p for p in pops if p["think"] < z), key=lambda p: p["think"])
        p2 = min((p for p in pops if p["think"] > z), key=lambda p: p["think"])
        per_gpu = interpolate(z, p1, p2, num(p1["row"]["value"]), num(p2["row"]["value"]))
        hi = interpolate(z, p1, p2, num(p1["row"]["next_up"]), num(p2["row"]["next_up"]))
        lo_users = interpolate(z, p1, p2, lowest(p1), lowest(p2))
        w = (z - p1["think"]) / (p2["think"] - p1["think"])
        m1, m2 = num((p1["at"] or {}).get("mean_prompt")), num((p2["at"] or {}).get("mean_prompt"))
        mean_prompt = m1 + w * (m2 - m1) if m1 is not None and m2 is not None else None
        how = (
            f"Little's law between the {p1['think']:g} s and {p2['think']:g} s populations "
            f"(U={fmt.n(p1['row']['value'])} and U={fmt.n(p2['row']['value'])} met {target.name}): "
            "X = U ÷ (Z + R) at each, X and R linear in Z, U = X (Z + R)"
        )
        source = "interpolated"
    else:
        span = (
            f"{thinks[0]:g}–{thinks[-1]:g} s" if len(thinks) > 1 else f"{thinks[0]:g} s" if thinks else "none"
        )
        how = (
            f"{z:g} s is outside the measured think times ({span}): Little's law is not carried beyond them. "
            f"Measure it: {think_command(env, name, z)}"
        )
        return _row(ask, backend, workload, target, **{"from": "outside", "how": how, "KV pool": pool})
    if not per_gpu:
        how += f"; no GPU count: no capacity at {target.name} to size on"
        undecided = sorted(num(x) for x in (exact["row"].get("undecided") or []) if num(x)) if exact else []
        if undecided:
            flags = exact["row"].get("undecided_flags") or []  # capacity_group: what the verdicts raised
            why = (
                " (young users: a run now starts them where a long-running population is)"
                if "young_users" in flags
                else " (more users than planned: the load loop now keeps each user to its sessions)"
                if "users_over" in flags
                else ""
            )
            run = command(
                env, name, {"loop": "closed", "think_s": z}, undecided[-1], target, also=tuple(undecided)
            )
            how += f"; undecided at U={', '.join(fmt.n(x) for x in undecided)}{why}: measure again: {run}"
        return _row(ask, backend, workload, target, **{"from": source, "how": how, "KV pool": pool})
    if exact is not None and not hi:  # a floor: the users a GPU holds could be more; the run that finds out
        above = 2 * per_gpu
        run = command(env, name, {"loop": "closed", "think_s": z}, above, target, also=(per_gpu,))
        how += (
            f"; no miss measured above U={fmt.n(per_gpu)}, so the GPU count is at most: measure "
            f"U={fmt.n(per_gpu)} and U={fmt.n(above)} in one run (a bracket of its own): {run}"
        )
    kv = per_gpu * mean_prompt if mean_prompt is not None else None
    return _row(
        ask,
        backend,
        workload,
        target,
        **{
            "from": source,
            "users a GPU": per_gpu,
            "users a GPU, lo": lo_users,
            "users a GPU, hi": hi,
            "GPUs": _gpus(ask.users, per_gpu),
            "GPUs lo": _gpus(ask.users, hi) if hi else None,
            "GPUs hi": _gpus(ask.users, lo_users),
            "KV tokens a GPU": kv,
            "KV pool": pool,
            "KV fits": None if kv is None or pool is None else bool(kv <= pool),
            "how": f"{how}; {measured}",
        },
    )


def size(ask, cap: dict, pools: dict, envs: dict, runs: dict, sources: dict) -> pd.DataFrame:
    """The sizing table: a row per backend column and workload with a think-time population (see the module
    docstring); an empty table where none was measured (the page and the printed lines say so)."""
    rows = []
    targets_of = cap.get("targets_of") or {}
    if ask.slo and targets_of and not any(_target(ts, ask.slo) for ts in targets_of.values()):
        names = ", ".join(dict.fromkeys(t.name for ts in targets_of.values() for t in ts))
        how = f"no target named {ask.slo!r} (the targets: {names}; --slo NAME:... adds one)"
        return pd.DataFrame([{**dict.fromkeys(COLUMNS), "from": "no target", "how": how}], columns=COLUMNS)
    for backend, targets in targets_of.items():
        target = _target(targets, ask.slo)
        if target is None:
            continue
        env = envs.get(runs.get(backend, ""), {})
        name = sources.get(backend, ("", backend))[1]
        for workload, pops in populations(cap, backend, target).items():
            rows.append(answer(ask, backend, workload, target, pops, pools.get(backend), env, name))
    return pd.DataFrame(rows, columns=COLUMNS)
