"""The claims section: each claim, its source's figure, every backend's figure here, and the verdict."""

from __future__ import annotations

from markupsafe import Markup

from llm_call_anatomy.reports import reference
from llm_call_anatomy.reports.analysis.seed_claims import SEED
from llm_call_anatomy.reports.model import Claim
from llm_call_anatomy.reports.views import Block, Table, p, table


def citation() -> Markup:
    """The seed article by title, author and address (:data:`reports.reference.SOURCE`); the address as text,
    not a link: the page makes no request of its own (tests/reports/test_report_page.py)."""
    src = reference.SOURCE
    return Markup("The seed article: “{title}”, {author} ({venue}), <code>{url}</code>.").format(**src)


def claims_table(claims: list[Claim], backends: list[str]) -> Table:
    shown = [b for b in backends if any(b in c.here for c in claims)]
    t = Table(["claim", "their figure", *[f"here: {b}" for b in shown], "verdict"])
    for c in claims:
        verdict = Markup('<span class="verdict v-{}">{}</span>: {}').format(
            c.verdict.word.replace(" ", "-"), c.verdict.word, c.verdict.reason
        )
        t.add([c.statement, c.theirs, *[c.here.get(b, "–") for b in shown], verdict])
    return t


def blocks(claims: list[Claim], backends: list[str]) -> list[Block]:
    """The claims section: one table per source, in the order its claims were registered, and the key to the
    verdicts; one muted line where no claim applies to these runs."""
    if not claims:
        return [p("No claims to check against these runs.", muted=True)]
    out: list[Block] = []
    for source in dict.fromkeys(c.source for c in claims):
        mine = [c for c in claims if c.source == source]
        out.append(Block("h3", f"Claims of the {source}"))
        if source == SEED:
            out.append(p(citation(), muted=True))
        out.append(table(claims_table(mine, backends)))
    out.append(
        p(
            "Verdicts: holds — the claim is true of every backend here; setup-specific — its figure belongs "
            "to the source's stack, GPU or workload (the reason says which); does not hold; not measurable "
            "here — the reason says why; not decided — the 95 % interval of the data crosses the edge of the "
            "claim's band (the noise is larger than the question: more repeats or engine starts would "
            "decide). Our figures are computed from these runs, never typed in.",
            muted=True,
        )
    )
    return out
