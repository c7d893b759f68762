"""Views: the analysis results turned into page blocks (headings, tables, charts, replies).

Each workload kind's report half (``workloads/<kind>/report/``) returns a list of :class:`Block`; the page
template renders blocks generically, so the HTML has one code path and every text goes through Jinja's
autoescaping (token chips are built with ``markupsafe`` and escaped piece by piece)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from markupsafe import Markup, escape

from llm_call_anatomy.reports import fmt

Cell = str | Markup


@dataclass
class Table:
    columns: list[str]
    rows: list[list[Cell]] = field(default_factory=list)
    numeric: set[int] = field(default_factory=set)  # right-aligned columns
    row_class: list[str] = field(default_factory=list)

    def add(self, row: list[Any], cls: str = "") -> None:
        self.rows.append([c if isinstance(c, Markup) else ("" if c is None else str(c)) for c in row])
        self.row_class.append(cls)


@dataclass
class Block:
    kind: str  # h3 | p | note | chart | table | side | details | reply | bullets
    text: Cell = ""
    table: Table | None = None
    panels: list[tuple[Cell, list[Block]]] = field(default_factory=list)  # side: (title, blocks)
    children: list[Block] = field(default_factory=list)  # details
    items: list[Cell] = field(default_factory=list)  # bullets


def h3(text: Cell) -> Block:
    return Block("h3", text)


def p(text: Cell, muted: bool = False) -> Block:
    return Block("muted" if muted else "p", text)


def note(text: Cell) -> Block:
    return Block("note", text)


def chart(slot: Markup) -> Block | None:
    return Block("chart", slot) if slot else None


def table(t: Table) -> Block:
    return Block("table", table=t)


def side(panels: list[tuple[Cell, list[Block]]]) -> Block:
    return Block("side", panels=panels)


def details(summary: Cell, children: list[Block]) -> Block:
    return Block("details", summary, children=children)


def reply(text: str) -> Block:
    return Block("reply", text)


def bullets(items: list[Cell]) -> Block:
    return Block("bullets", items=items)


def tokens(texts: list[str], mark_from: int | None = None) -> Markup:
    """Token chips, their text made visible; chips from ``mark_from`` on are highlighted."""
    chips = []
    for i, t in enumerate(texts):
        cls = "tok diverge" if mark_from is not None and i >= mark_from else "tok"
        chips.append(Markup('<code class="{}">{}</code>').format(cls, fmt.token(t)))
    return Markup("").join(chips)


def refcell(text: str) -> Markup:
    return Markup('<span class="refmark">{}</span>').format(escape(text))


def compact(blocks: list[Block | None]) -> list[Block]:
    return [b for b in blocks if b is not None]
