"""What a finished request's answer must agree with: the request that was sent and the stream that was seen.

One client-agnostic check for every backend's outputs, one request at a time
(:meth:`backends.base.Backend.generate`) and under load (``backends.load_loop``) alike, so a new
client gets it by returning a :class:`~contract.adapter.RawOutput`. A server's usage counts and
finish reason are claims; a claim that contradicts what was sent or seen makes the request an
error (:class:`AnswerContradicts`), never a figure:

- output tokens above ``max_tokens``; a server's own count (``reported_output_tokens``, where the
  stream has text only) below the chunks that carried text (a chunk carries at least one token;
  above them is possible: a chunk may carry several, a text streamer holds back partial words);
- cached tokens above the prompt's tokens, or below zero;
- the server's prompt tokens (``reported_prompt_tokens``) unlike the ids sent, when the prompt
  went as token ids (exactly);
- a short answer under ``ignore_eos`` (fewer tokens than ``max_tokens``, whatever the finish
  reason): the server did not honour ``ignore_eos``, and a level would mix answer lengths.

A prompt sent as text is tokenized again by the server, and its count may differ for a true
reason (random token ids decoded and read back by a tokenizer become other, often more, tokens):
beyond :data:`TEXT_PROMPT_SLACK` that is a note on the record (``extra.answer_notes``), which says
the server computed another prompt than the plan's, not an error.
"""

from __future__ import annotations

from llm_call_anatomy.contract.adapter import RawOutput, Request

TEXT_PROMPT_SLACK = (
    0.1  # a text prompt tokenized again by the server: its count may differ by this share (and 2 tokens)
)


class AnswerContradicts(RuntimeError):
    """The server's answer contradicts what was sent or seen (one line naming each contradiction)."""


def contradictions(request: Request, output: RawOutput, chunks_with_tokens: int | None = None) -> list[str]:
    """Each way ``output`` contradicts ``request`` and the stream (``chunks_with_tokens``: the clock's
    ticks, None where the backend ticks no clock); empty when it agrees."""
    out = []
    n, limit = output.output_tokens, request.max_new_tokens
    if n > limit:
        out.append(f"{n} output tokens for max_tokens {limit}")
    reported = output.reported_output_tokens
    if reported is not None and chunks_with_tokens and reported < chunks_with_tokens:
        out.append(
            f"usage says {reported} output tokens, the stream carried {chunks_with_tokens} chunks with text"
        )
    sent = len(request.prompt_ids)
    cached = output.cached_tokens
    if cached is not None and not 0 <= cached <= sent:
        out.append(f"{cached} cached tokens for a prompt of {sent}")
    said = output.reported_prompt_tokens
    if said is not None and not output.prompt_as_text and said != sent:
        out.append(f"usage says {said} prompt tokens, {sent} were sent")
    if request.ignore_eos and n < limit:
        out.append(
            f"a short answer under ignore_eos: {n} of {limit} tokens, finish {output.finish_reason!r} "
            "(the server did not honour ignore_eos)"
        )
    return out


def notes(request: Request, output: RawOutput) -> list[str]:
    """What is true but worth saying on the record: a text prompt the server read as another number of
    tokens."""
    said, sent = output.reported_prompt_tokens, len(request.prompt_ids)
    if (
        said is not None
        and output.prompt_as_text
        and abs(said - sent) > max(2, round(TEXT_PROMPT_SLACK * sent))
    ):
        return [
            f"the server counted {said} prompt tokens for the {sent} sent as text (its tokenizer's "
            "reading of the decoded ids): it computed another prompt than the plan's"
        ]
    return []


def check_answer(request: Request, output: RawOutput, chunks_with_tokens: int | None = None) -> None:
    """Raise :class:`AnswerContradicts` when the answer contradicts the request or the stream; notes go
    into ``output.extra["answer_notes"]``."""
    said = notes(request, output)
    if said:
        output.extra["answer_notes"] = said
    found = contradictions(request, output, chunks_with_tokens)
    if found:
        raise AnswerContradicts("the answer contradicts what was sent or seen: " + "; ".join(found))
