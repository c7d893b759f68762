"""The Load section's answers to a deployment's questions (issue 40), on the page, in the exports and in the
terminal: which targets the capacities were judged against, the run that would narrow a wide bracket, GPUs
for U users who think (``sizing``), and what a GPU-hour buys (``cost``).

The exports take the same tables by the same names: ``capacity`` (the capacity table as the page prints
it), ``sizing`` and ``cost`` (``reports.export``: ``<workload>.capacity.csv`` and so on).
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from llm_call_anatomy.contract.price import GpuPrice
from llm_call_anatomy.reports import fmt
from llm_call_anatomy.reports.model import Job
from llm_call_anatomy.reports.stats import num
from llm_call_anatomy.reports.views import Block, Table, compact, h3, p, table
from llm_call_anatomy.workloads.load.report.capacity_cells import level_text
from llm_call_anatomy.workloads.load.report.capacity_tables import capacity_table, differ
from llm_call_anatomy.workloads.load.report.cost import FIGURES, OUTPUT_COST_RATIO, PRICE


def capacity_frame(cap: dict[str, Any]) -> pd.DataFrame:
    """The capacity table as the page prints it (its columns and cells), for the exports."""
    caps = cap["capacity"]
    if caps.empty:
        return pd.DataFrame()
    t = capacity_table(caps, cap.get("via"), cap.get("mix_classes"), differ=differ(cap.get("targets_of")))
    return pd.DataFrame([[str(c) for c in row] for row in t.rows], columns=t.columns)


def money(v: Any) -> str:
    """Dollars to 3 significant digits (a request costs a fraction of a cent)."""
    if v is None or v != v:
        return ""
    places = max(0, 2 - math.floor(math.log10(abs(v)))) if v else 0
    return f"{v:.{places}f}"


def _range(lo: Any, point: Any, hi: Any) -> str:
    if point is None or point != point:
        return ""
    ends = [x for x in (lo, hi) if x is not None and x == x]
    return f"{money(point)} [{money(lo)}–{money(hi)}]" if len(ends) == 2 else money(point)


def ask_text(ask) -> str:
    return (
        f"GPUs for {ask.users:,} users at a {ask.think_s:g} s think, {ask.slo or 'the first latency target'}"
    )


def gpus_range(r: dict) -> str:
    """A sizing row's range of GPUs: ``7–13``; ``at most 13`` where no miss was measured above the capacity
    (a floor: the users a GPU holds could be more)."""
    if num(r.get("GPUs lo")) is None:
        return f"at most {fmt.n(r['GPUs hi'])}: no miss measured above {fmt.n(r['users a GPU'])} users"
    return f"range {fmt.n(r['GPUs lo'])}–{fmt.n(r['GPUs hi'])}"


def sizing_lines(sizing: pd.DataFrame | None, ask) -> list[str]:
    """The answer to ``--size`` in lines: the ask, then a line a backend and workload."""
    if ask is None:
        return []
    out = [f"{ask_text(ask)}:"]
    if sizing is None or sizing.empty:
        return [
            *out,
            "  no sessions population (users with a think time) in this section for that target: no sizing",
        ]
    for r in sizing.to_dict("records"):
        gpus = r["GPUs"]
        if r["from"] == "no target":
            out.append(f"  {r['how']}")
            continue
        if gpus is None or gpus != gpus:
            out.append(f"  {r['backend']} {r['variant']}: no answer — {r['how']}")
            continue
        span = f" ({gpus_range(r)})"
        kv = ""
        if r["KV tokens a GPU"] is not None and r["KV tokens a GPU"] == r["KV tokens a GPU"]:
            pool = r["KV pool"]
            fits = "fits" if r["KV fits"] else "does not fit: evicted between turns"
            kv = f"; KV: {fmt.n(r['KV tokens a GPU'])} history tokens a GPU" + (
                f" vs a {fmt.n(pool)}-token pool ({fits})"
                if pool == pool and pool is not None
                else " (the engine's KV pool not recorded)"
            )
        out.append(
            f"  {r['backend']} {r['variant']} ({r['target']}): {fmt.n(gpus)} GPUs{span}, "
            f"{fmt.n(r['users a GPU'])} users a GPU, {r['from']}{kv}. {r['how']}"
        )
    return out


def ranged(cost: pd.DataFrame | None) -> bool:
    """Whether the cost table was priced at a range's two ends (``--gpu-hour-usd LO-HI``)."""
    return cost is not None and PRICE in cost and cost[PRICE].nunique() > 1


def cost_lines(cost: pd.DataFrame | None, target: str | None) -> list[str]:
    """$ per M input and output tokens at each capacity point of ``target`` (all targets: None): a line a
    cost row, so a price range gives each point two lines, each naming its price (one price: as it was)."""
    if cost is None or cost.empty:
        return []
    rows = cost if target is None else cost[cost["target"] == target]
    at = ranged(cost)
    out = []
    for r in rows.to_dict("records"):
        usd = f" at ${r[PRICE]:.2f} a GPU-hour" if at else ""  # a price in cents, as contract.price writes it
        out.append(
            f"  {r['backend']} {r['variant']} {r['loop']} at {fmt.n(r['level'])} ({r['target']}){usd}: "
            + ", ".join(
                f"{name} {_range(r[f'{name}, lo'], r[name], r[f'{name}, hi'])}"
                for name in FIGURES
                if r[name] is not None and r[name] == r[name]
            )
        )
    return out


def between_lines(d: dict[str, Any], section: str) -> list[str]:
    """Under a report's own ``--slo``: each bracket wider than the search's ratio, with the run between."""
    cap = d["cap"]
    caps = cap["capacity"]
    if not str(cap.get("targets_source", "")).startswith("given") or "between" not in caps:
        return []
    wide = [r for r in caps.to_dict("records") if r.get("between")]
    out = (
        [f"{section}: {len(wide)} brackets wider than 1.25× at the targets given; the level between:"]
        if wide
        else []
    )
    for r in wide:
        ends = f"{level_text(r, r['value'])}–{level_text(r, r['next_up'])}"
        out.append(
            f"  {r['backend']} {r['workload']} · {r['mode']} {r['target']} {ends}: {r['between']['command']}"
        )
    return out


def printed(section) -> list[str]:
    """What ``python compare.py report`` prints for the section: under its own ``--slo`` the runs that would
    narrow a wide bracket; the sizing asked for, the cost at its target."""
    d = section.data
    ask = d.get("size_ask")
    between = between_lines(d, section.name)
    if ask is None:
        return between
    lines = sizing_lines(d.get("sizing"), ask)
    lines[0] = f"{section.name}: {lines[0]}"
    sized = d.get("sizing")
    target = ask.slo or (sized["target"].iloc[0] if sized is not None and len(sized) else None)
    cost = cost_lines(d.get("cost"), target)
    head = "  cost at its capacity points, $ [5–95 %]" + (
        ", at each end of the price range" if ranged(d.get("cost")) else ""
    )
    return between + lines + ([f"{head}:", *cost] if cost else [])


def blocks(d: dict[str, Any]) -> list[Block]:
    """The page's blocks: under the report's own ``--slo``, where the targets came from and the level between
    a wide bracket's ends; the sizing and the cost tables where asked for (``--size``, a price)."""
    cap = d["cap"]
    caps = cap["capacity"]
    # re-targeted (the report's own --slo): which targets, and the runs that would narrow a wide bracket; a
    # page judged against each run's own targets says so in its capacity paragraph (capacity_blocks)
    given = str(cap.get("targets_source", "")).startswith("given")
    out: list[Block | None] = [p(f"Targets: {cap.get('targets_source')}.", muted=True) if given else None]
    wide = [r for r in caps.to_dict("records") if r.get("between")] if given and "between" in caps else []
    if wide:
        t = Table(["backend", "variant", "target", "bracket", "level between", "the run that measures it"])
        for r in wide:
            t.add(
                [
                    r["backend"],
                    f"{r['workload']} · {r['mode']}",
                    r["target"],
                    f"{level_text(r, r['value'])}–{level_text(r, r['next_up'])}",
                    level_text(r, r["between"]["level"]),
                    r["between"]["command"],
                ]
            )
        out += [
            p(
                "A target between two measured levels farther apart than the search's ratio (1.25×): "
                "the bracket stands, and this run measures the level between (a new run directory beside "
                "the run: the run's plan fixes its levels and targets, so --resume of the run itself would "
                "refuse it; --resume continues the new one; report both with python compare.py report RUN "
                "NEW).",
                muted=True,
            ),
            table(t),
        ]
    ask = d.get("size_ask")
    if ask is not None:
        out += [h3(ask_text(ask)), *[p(line.strip()) for line in sizing_lines(d.get("sizing"), ask)[1:]]]
        sized = d.get("sizing")
        if sized is not None and len(sized):
            out.append(table(frame_table(sized.drop(columns=["how"]))))
    cost = d.get("cost")
    if cost is not None and len(cost):
        out += [
            h3("What a GPU-hour buys at each capacity point"),
            p(
                "Over the steady window at the capacity level: blended $ per M tokens = PRICE ÷ 3600 ÷ "
                "(input + output tok/s) × 10⁶; input and output apart split the GPU-second at an "
                f"output:input cost ratio of {OUTPUT_COST_RATIO:g} (GKE Inference Quickstart's default); "
                "$ per request ÷ steady requests a second, per session × its turns. [lo, hi]: the steady "
                "output tok/s's bootstrap interval carried over."
                + (
                    f" {PRICE}: the price a row is worked out at (--gpu-hour-usd LO-HI: a row at each end)."
                    if ranged(cost)
                    else ""
                ),
                muted=True,
            ),
            # one price: the page as it always was (the price is the capacity paragraph's PRICE); the exports
            # keep the column either way, so that a sheet reads the same columns however the price was given
            table(frame_table(cost if ranged(cost) else cost.drop(columns=[PRICE]))),
        ]
    return compact(out)


def frame_table(df: pd.DataFrame) -> Table:
    """A DataFrame as a page table: dollars to 3 significant digits, other numbers as the page prints them."""
    t = Table(list(df.columns))
    for r in df.to_dict("records"):
        t.add(
            [
                (f"{v:.2f}" if k == PRICE else money(v) if k.startswith("$") else fmt.n(v, 1))
                if isinstance(v, float)
                else v
                for k, v in r.items()
            ]
        )
    return t


def jobs(d: dict[str, Any]) -> list:
    """The summary's rows for the sizing asked for: per workload, each backend's GPUs with their range and
    the $ per M input and output tokens at the capacity it rests on (where priced and measured)."""
    ask, sized, cost = d.get("size_ask"), d.get("sizing"), d.get("cost")
    if ask is None or sized is None or sized.empty:
        return []
    out = []
    for workload, g in sized.groupby("variant", sort=False):
        values = []
        for r in g.to_dict("records"):
            if r["from"] == "no target":
                continue
            if r["GPUs"] is None or r["GPUs"] != r["GPUs"]:
                why = (
                    "outside the measured think times" if r["from"] == "outside" else "no capacity to size on"
                )
                values.append((r["backend"], why))
                continue
            text = f"{fmt.n(r['GPUs'])} GPUs [{gpus_range(r)}]"
            fits = r["KV fits"]
            text += ", KV over the pool" if fits is not None and fits == fits and not fits else ""
            price = _price_at(cost, r)
            values.append((r["backend"], text + (f"; {price}" if price else "")))
        out.append(
            Job(
                f"Sizing: {ask_text(ask)} ({workload})",
                "GPUs [range: capacity bracket and engine starts]; $ per M input / output tokens there",
                values,
                None,
                "levels are searched per backend: compare the numbers, not a rank",
            )
        )
    return out


def _price_at(cost: pd.DataFrame | None, r: dict) -> str | None:
    """$ per M input / output tokens at the sizing row's measured capacity (its workload, target, level): at
    one price ``$X / $Y per M in / out``; at a range each figure's two ends and the range they are at,
    ``$a–$b / $c–$d per M in / out at $2.50–7.00 a GPU-hour``, from the cost table's rows at each end."""
    if cost is None or cost.empty or r["from"] != "measured":
        return None
    hit = cost[
        (cost["backend"] == r["backend"])
        & (cost["target"] == r["target"])
        & (cost["loop"] == "closed")
        & (cost["level"] == r["users a GPU"])
        & cost["variant"].str.startswith(f"{r['variant']} · ")
    ]
    if hit.empty:
        return None
    hit = hit[hit["variant"] == hit["variant"].iloc[0]].sort_values(PRICE, kind="stable")
    low, high = hit.iloc[0], hit.iloc[-1]
    if not ranged(hit):
        return f"${money(low['$ per M input tok'])} / ${money(low['$ per M output tok'])} per M in / out"
    ends = [
        f"${money(low[name])}–${money(high[name])}" for name in ("$ per M input tok", "$ per M output tok")
    ]
    price = GpuPrice(float(low[PRICE]), float(high[PRICE]))
    return f"{ends[0]} / {ends[1]} per M in / out at {price.text()} a GPU-hour"
