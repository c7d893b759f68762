"""A server's answer is checked against what was sent and seen (issue 26, items 4, 5, 16): usage counts
above max_tokens or below the chunks, cached tokens above the prompt, prompt tokens unlike the ids sent,
a short answer under ignore_eos; a malformed stream is named by its cause. Against a fake server with
faults (tests/harness/faulty_server.py), one request at a time and under load, through the real client."""

from __future__ import annotations

import pytest

from llm_call_anatomy.backends.answer_checks import AnswerContradicts, check_answer, contradictions
from llm_call_anatomy.backends.load_level import run_level
from llm_call_anatomy.backends.load_loop import LoadSettings
from llm_call_anatomy.backends.openai import OpenAIBackend
from llm_call_anatomy.backends.openai.stream import (
    CHUNK_WITHOUT_CHOICES,
    LINE_NOT_JSON,
    NO_FINISH_REASON,
    MalformedStream,
    StreamCut,
)
from llm_call_anatomy.contract.adapter import BackendSettings, RawOutput, Request
from tests.harness.faulty_server import Faults, faulty_server

PROMPT = list(range(10, 50))  # 40 tokens


def answer(n: int, **kw) -> RawOutput:
    return RawOutput(token_ids=[7] * n, text="x" * n, finish_reason=kw.pop("finish_reason", "length"), **kw)


def test_an_answer_that_agrees_has_no_contradictions():
    request = Request(prompt_ids=PROMPT, max_new_tokens=8, ignore_eos=True)
    assert contradictions(request, answer(8, cached_tokens=40, reported_prompt_tokens=40), 8) == []
    assert (
        contradictions(Request(prompt_ids=PROMPT, max_new_tokens=8), answer(3, finish_reason="stop"), 3) == []
    )
    # a text prompt tokenized again by the server: a few tokens off is not a contradiction
    assert contradictions(request, answer(8, reported_prompt_tokens=42, prompt_as_text=True), 8) == []
    # a chunk may carry several tokens: a server count above the chunks, up to max_tokens, stands
    assert contradictions(request, answer(8, reported_output_tokens=8), 5) == []


@pytest.mark.parametrize(
    ("output", "chunks", "said"),
    [
        (answer(2, reported_output_tokens=80), 8, "80 output tokens for max_tokens 8"),
        (answer(8, reported_output_tokens=3), 8, "usage says 3 output tokens, the stream carried 8 chunks"),
        (answer(8, cached_tokens=90), 8, "90 cached tokens for a prompt of 40"),
        (answer(8, cached_tokens=-1), 8, "-1 cached tokens"),
        (answer(8, reported_prompt_tokens=1), 8, "usage says 1 prompt tokens, 40 were sent"),
        (
            answer(8, reported_prompt_tokens=39),
            8,
            "usage says 39 prompt tokens, 40 were sent",
        ),  # ids: exactly
        (answer(4, finish_reason="stop"), 4, "a short answer under ignore_eos: 4 of 8 tokens, finish 'stop'"),
    ],
)
def test_each_contradiction_is_named(output, chunks, said):
    request = Request(prompt_ids=PROMPT, max_new_tokens=8, ignore_eos=True)
    with pytest.raises(AnswerContradicts, match=said.replace("(", r"\(").replace(")", r"\)")):
        check_answer(request, output, chunks)


def test_a_text_prompt_read_as_other_tokens_is_a_note_not_an_error():
    request = Request(prompt_ids=PROMPT, max_new_tokens=8)
    output = answer(8, reported_prompt_tokens=170, prompt_as_text=True)  # random ids, decoded and read back
    check_answer(request, output, 8)
    assert output.extra["answer_notes"] == [
        "the server counted 170 prompt tokens for the 40 sent as text (its "
        "tokenizer's reading of the decoded ids): it computed another prompt than the plan's"
    ]
    assert "answer_notes" not in answer(8, reported_prompt_tokens=41, prompt_as_text=True).extra


def backend(url: str, model_dir) -> OpenAIBackend:
    b = OpenAIBackend(
        BackendSettings(model_path=str(model_dir), model_label="tiny", base_url=url, request_timeout_s=30)
    )
    b.start()
    return b


@pytest.mark.openai
@pytest.mark.parametrize(
    ("faults", "error", "said"),
    [
        (Faults(inflated_usage=True), AnswerContradicts, "80 output tokens for max_tokens 8"),
        (Faults(inflated_usage=True), AnswerContradicts, "90 cached tokens for a prompt of 40"),
        (Faults(inflated_usage=True), AnswerContradicts, "usage says 1 prompt tokens, 40 were sent"),
        (
            Faults(short=True),
            AnswerContradicts,
            "a short answer under ignore_eos: 4 of 8 tokens, finish 'stop'",
        ),
        (
            Faults(no_choices=True),
            MalformedStream,
            f"malformed stream: {CHUNK_WITHOUT_CHOICES} after 1 token",
        ),
        (Faults(not_json=True), MalformedStream, f"malformed stream: {LINE_NOT_JSON} after 1 token"),
        (Faults(die_after=0), StreamCut, f"{NO_FINISH_REASON} after 1 token"),
    ],
)
def test_one_request_at_a_time_through_the_client(tiny_model_dir, faults, error, said):
    with faulty_server(faults) as server:
        b = backend(server.url, tiny_model_dir)
        try:
            with pytest.raises(error, match=said):
                b.generate(Request(prompt_ids=PROMPT, max_new_tokens=8, ignore_eos=True, reuse_prefix=True))
        finally:
            b.close()


@pytest.mark.openai
def test_under_load_a_contradiction_is_a_failed_request_and_the_rest_are_served(tiny_model_dir):
    with faulty_server(Faults(short=True)) as server:
        b = backend(server.url, tiny_model_dir)
        try:
            sessions = [
                [Request(prompt_ids=PROMPT, max_new_tokens=8, ignore_eos=True, reuse_prefix=True)],
                [Request(prompt_ids=PROMPT, max_new_tokens=8, reuse_prefix=True)],
            ]  # EOS allowed: fine
            outcomes, _ = run_level(b, sessions, LoadSettings(concurrency=2))
        finally:
            b.close()
    short, free = outcomes[0][0], outcomes[1][0]
    assert (
        short.error is not None
        and short.error.startswith("AnswerContradicts: ")
        and "short answer" in short.error
    )
    assert free.error is None and free.output.output_tokens == 4
