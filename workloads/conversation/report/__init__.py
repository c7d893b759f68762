"""Conversation section: totals full vs cached (with the
seed's reference), TTFT per turn, reuse, prefix breaks."""

from __future__ import annotations

from typing import Any

from markupsafe import Markup

from llm_call_anatomy.reports import fmt, reference
from llm_call_anatomy.reports.kinds import ReportKind
from llm_call_anatomy.reports.stats import stat_of
from llm_call_anatomy.reports.views import Block, Table, bullets, chart, compact, h3, p, side, table, tokens
from llm_call_anatomy.workloads.conversation.report import analysis as conv
from llm_call_anatomy.workloads.conversation.report import charts, jobs


def _row(df, backend: str, mode: str, turn: int | None = None) -> dict[str, Any] | None:
    sel = df[(df["backend"] == backend) & (df["mode"] == mode)]
    if turn is not None:
        sel = sel[sel["turn"] == turn]
    return sel.iloc[0].to_dict() if len(sel) else None


def _stat(row: dict[str, Any] | None, prefix: str) -> str:
    return fmt.stat(stat_of(row, prefix)) if row else "–"


# the built-in workload that replays the seed's conversation at its size (builtin.yaml)
SEED_WORKLOAD = "conversation"


def is_seeds(name: str, turns: int | None) -> bool:
    """The section replays the seed's own conversation: the built-in workload, at the seed's number of turns.
    The seed's figures stand beside no other conversation (a user's 3-turn chat is not the seed's)."""
    return name == SEED_WORKLOAD and turns == reference.CONVERSATION["turns"]


def totals_table(d: dict[str, Any], seeds: bool = True) -> Table:
    """Conversation totals per backend: tokens processed and summed TTFT, full vs cached, as median and
    spread, with the ratios; the seed's figures as a last reference row where the workload is the seed's
    own conversation (``seeds``)."""
    t = Table(
        [
            "backend",
            "tokens processed, full",
            "tokens processed, cached",
            "ratio",
            "summed TTFT full (ms)",
            "summed TTFT cached (ms)",
            "ratio",
        ],
        numeric={1, 2, 3, 4, 5, 6},
    )
    tot = d["totals"]
    for m in d["ratios"]:
        full, cached = _row(tot, m.backend, "full"), _row(tot, m.backend, "cached")
        t.add(
            [
                m.backend,
                _stat(full, "tokens"),
                _stat(cached, "tokens"),
                fmt.times(m.tokens_ratio),
                _stat(full, "ttft"),
                _stat(cached, "ttft"),
                fmt.times(m.ttft_ratio),
            ]
        )
    if not seeds:
        return t
    c = reference.CONVERSATION
    t.add(
        [
            reference.LABEL,
            fmt.n(c["tokens_full"]),
            fmt.n(c["tokens_cached"]),
            fmt.times(c["tokens_ratio"]),
            fmt.n(c["ttft_full_ms"]),
            fmt.n(c["ttft_cached_ms"]),
            fmt.times(c["ttft_full_ms"] / c["ttft_cached_ms"]),
        ],
        "ref",
    )
    return t


def turn_table(d: dict[str, Any], backend: str) -> Table:
    """One backend's per-turn table: prompt length, tokens shared with the previous prompt, the reuse expected
    beside the cached and computed tokens the engine reported, TTFT full vs cached, and why the reuse differs
    from the expectation."""
    t = Table(
        [
            "turn",
            "prompt",
            "shared with previous",
            "expected reuse",
            "reported cached",
            "computed (cached)",
            "TTFT full ms",
            "TTFT cached ms",
            "why",
        ],
        numeric={0, 1, 2, 3, 4, 5, 6, 7},
    )
    turns, reuse = d["turns"], d["reuse"]
    for turn in list(dict.fromkeys(turns[turns["backend"] == backend]["turn"])):
        full, cached = _row(turns, backend, "full", turn), _row(turns, backend, "cached", turn)
        any_row = full or cached or {}
        rr = reuse[(reuse["backend"] == backend) & (reuse["turn"] == turn)] if not reuse.empty else reuse
        r = rr.iloc[0].to_dict() if len(rr) else {}
        t.add(
            [
                turn,
                fmt.n(any_row.get("prompt_tokens")),
                fmt.n(any_row.get("shared_prefix_tokens")),
                fmt.n(r.get("expected")),
                fmt.n(cached.get("cached_med")) if cached else "–",
                fmt.n(cached.get("computed_med")) if cached else "–",
                _stat(full, "ttft"),
                _stat(cached, "ttft"),
                r.get("why", ""),
            ]
        )
    return t


def breaks_table(breaks: list[dict[str, Any]], verdicts: dict[int, dict[str, Any]]) -> Table:
    """Where each turn's prompt stops matching the previous one: the position, tokens lost and both prompts'
    tokens, highlighted from the break. With ``verdicts`` (the stability check by turn), a column says where
    it broke and whether the chat template makes that expected."""
    cols = ["turn", "position", "tokens lost", "previous prompt", "this prompt"]
    if verdicts:
        cols.append("where")
    t = Table(cols, numeric={0, 1, 2})
    for b in breaks:
        at = (b.get("position") or 0) - (b.get("context_start") or 0)
        row = [
            b["turn"],
            f"{fmt.n(b.get('position'))} of {fmt.n(b.get('previous_prompt_tokens'))}",
            fmt.n(b.get("tokens_lost")),
            tokens(b.get("previous") or [], at),
            tokens(b.get("current") or [], at),
        ]
        if verdicts:
            v = verdicts.get(b["turn"], {})
            verdict = {True: "expected (template)", False: "unexpected"}.get(v.get("expected"), "")
            row.append(" · ".join(str(x) for x in (v.get("where"), verdict, v.get("origin")) if x))
        t.add(row)
    return t


def blocks(section, slots: dict[str, Markup]) -> list[Block]:
    """The conversation section's blocks: totals, TTFT per turn cached vs full, each backend's reuse per turn
    (expected vs reported), first-token agreement, and where the prefix breaks."""
    d = section.data
    turns_n = int(d["totals"]["turns"].iloc[0]) if not d["totals"].empty else None
    out: list[Block | None] = [
        h3(f"Totals over {turns_n} turns" if turns_n else "Totals"),
        table(totals_table(d, is_seeds(section.name, turns_n))),
        p(
            "Tokens processed = tokens the engine computed: the prompt minus reported "
            "cache hits (the whole prompt in full mode, where the cache is reset "
            "before every call). Sums are per repeat, then the median over repeats.",
            muted=True,
        ),
        h3("TTFT per turn, cached vs full"),
        chart(slots["ttft"]),
        h3("Per turn: shared prefix, expected vs reported reuse"),
    ]
    panels = []
    for b in section.backends:
        block = d["blocks"].get(b)
        unit = (
            f"block {block}"
            if block and block > 1
            else ("page size 1: " if block == 1 else "no block: ") + "reuses to the token"
        )
        title = Markup('{} <span class="muted">({})</span>').format(b, unit)
        panels.append((title, [table(turn_table(d, b))]))
    out.append(side(panels))
    ft = d["first_tokens"]
    if not ft.empty:
        out.append(h3("Same first token, cached vs full?"))
        out.append(
            bullets(
                [
                    f"{r['backend']}: the same first token on {r['same']} of {r['compared']} calls"
                    + (
                        f"; different on turns {', '.join(map(str, r['differing_turns']))}"
                        if r["differing_turns"]
                        else ""
                    )
                    for r in ft.to_dict("records")
                ]
            )
        )
    if d["breaks"]:
        out += [
            h3("Where the prefix breaks"),
            p(
                "Each prompt is the whole history rendered again; from the first token where it stops "
                "extending the previous prompt (highlighted), nothing can be reused."
            ),
            table(breaks_table(d["breaks"], d.get("verdicts") or {})),
        ]
    return compact(out)


KIND = ReportKind(
    "conversation",
    conv.data,
    blocks=lambda s, slots, report: blocks(s, slots),
    charts={"ttft": (lambda d, r: charts.conversation_ttft(d["turns"]), "TTFT per turn")},
    caveats=lambda s, report: conv.caveats(s),
    jobs=lambda s, rows, report: jobs.conversation_jobs(s, rows),
    cached_vs_full=True,
)
