"""``--request-timeout`` has one meaning (issue 26, item 14): the whole request, one at a time as under
load. A server that sends one token a second, each read well within the timeout, is cut off at the
deadline, not after its last token."""

from __future__ import annotations

import time

import pytest

from llm_call_anatomy.backends.load_level import run_level
from llm_call_anatomy.backends.load_loop import LoadSettings
from llm_call_anatomy.backends.openai import OpenAIBackend
from llm_call_anatomy.backends.openai.streamed_call import RequestTimeout
from llm_call_anatomy.contract.adapter import BackendSettings, Request
from tests.harness.faulty_server import Faults, faulty_server

pytestmark = pytest.mark.openai
SAID = "no answer within 2 s (--request-timeout: the whole request, from submit to its last token)"


def test_a_trickling_stream_is_cut_at_the_deadline_one_at_a_time_and_under_load(tiny_model_dir):
    request = Request(
        prompt_ids=list(range(10, 30)), max_new_tokens=12, reuse_prefix=True
    )  # 11 s at a token a second
    with faulty_server(Faults(token_gap_s=1.0)) as server:
        backend = OpenAIBackend(
            BackendSettings(
                model_path=str(tiny_model_dir), model_label="tiny", base_url=server.url, request_timeout_s=2.0
            )
        )
        backend.start()
        try:
            started = time.perf_counter()
            with pytest.raises(RequestTimeout, match=SAID.replace("(", r"\(").replace(")", r"\)")):
                backend.generate(request)
            one = time.perf_counter() - started
            outcomes, _ = run_level(backend, [[request]], LoadSettings(concurrency=1))
        finally:
            backend.close()
    assert 2.0 <= one < 8  # at the deadline, not after the 11 s the whole answer takes
    assert outcomes[0][0].error == f"TimeoutError: {SAID}"
