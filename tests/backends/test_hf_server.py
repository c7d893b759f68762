"""The real ``hf-server`` (``transformers serve --continuous-batching``, launched by the harness) on the tiny
model (CPU), under load: its streamed text is timed per chunk and its own token count is kept."""

from __future__ import annotations

import importlib.util

import pytest

from tests.conftest import compare, records

pytestmark = pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ("fastapi", "uvicorn")),
    reason="transformers serve needs fastapi and uvicorn (transformers[serving])",
)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("hfserver") / "run"
    compare("--backend", "hf-server", "--workloads", "load,template", "--out", str(out), "--no-report")
    return out, records(out)


def test_requests_in_flight_are_batched_by_the_server_and_counted_as_it_counts_them(run):
    _, rows = run
    level = sorted(
        (
            r
            for r in rows
            if r["workload"] == "load-fixed"
            and r["mode"] == "S=0"
            and r["case"] == "C=4"
            and r["rep"] is not None
        ),
        key=lambda r: r["submit_s"],
    )
    assert len(level) == 4 and all(r["error"] is None for r in level)
    assert all(
        r["output_tokens"] == 8 and r["finish_reason"] == "length" for r in level
    )  # max_tokens, the CPU scale
    assert all(r["extra"]["output_ids_from"] == "retokenized-text" for r in level)
    assert max(r["submit_s"] for r in level) < min(r["finish_s"] for r in level)  # all four in flight at once
    for r in level:
        assert r["submit_s"] < r["first_token_s"] <= r["finish_s"] and r["token_times_s"] == sorted(
            r["token_times_s"]
        )


def test_single_requests_skip_and_the_server_log_is_kept(run):
    out, rows = run
    skipped = [r for r in rows if r["workload"] == "template"]
    assert skipped and all(r["skipped"] == "hf-server does not support single requests" for r in skipped)
    log = (out / "logs" / "hf-server.log").read_text()
    assert "continuous" in log.lower() or "Uvicorn" in log


def _prompt_that_ends_at_once(model_dir) -> list[int]:
    """A one-token prompt after which the tiny model's greedy next token is EOS (searched over its whole
    vocabulary, in process), and that its tokenizer reads back as that one token (the server gets text)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    eos = GenerationConfig.from_pretrained(model_dir).eos_token_id
    eos = set(eos if isinstance(eos, list) else [eos])
    with torch.no_grad():
        nxt = model(torch.arange(len(tokenizer)).unsqueeze(1)).logits[:, -1].argmax(-1).tolist()
    for token, following in enumerate(nxt):
        if following in eos and tokenizer(tokenizer.decode([token]))["input_ids"] == [token]:
            return [token]
    pytest.skip("no one-token prompt of the tiny model is followed by EOS")


@pytest.fixture(scope="module")
def server(tiny_model_dir, tmp_path_factory):
    from llm_call_anatomy.backends.openai.hf_server import HFServerBackend
    from llm_call_anatomy.contract.adapter import BackendSettings

    run_dir = tmp_path_factory.mktemp("hfserver-eos")
    settings = BackendSettings(
        model_path=str(tiny_model_dir),
        model_label="tiny",
        device="cpu",
        dtype="float32",
        run_dir=str(run_dir),
    )
    with HFServerBackend(settings) as backend:
        yield backend, _prompt_that_ends_at_once(tiny_model_dir)


def test_ignore_eos_goes_as_a_generation_config_without_eos_and_the_server_runs_past_it(server):
    from llm_call_anatomy.backends.answer_checks import check_answer
    from llm_call_anatomy.backends.base import TokenClock
    from llm_call_anatomy.contract.adapter import Request

    backend, prompt = server
    assert backend.environment()["ignore_eos_via"] == "generation_config"
    past = Request(prompt_ids=prompt, max_new_tokens=8, ignore_eos=True)
    first = backend.generate(past).output  # the first request: the server's batching manager starts with it
    assert (first.output_tokens, first.finish_reason) == (8, "length")
    plain = backend.generate(Request(prompt_ids=prompt, max_new_tokens=8)).output
    assert plain.output_tokens < 8 and plain.finish_reason == "stop"  # without it: EOS ends the answer
    clock = TokenClock(backend.synchronize)
    streamed = backend.run_async(backend.stream(past, clock))  # the load path: per request, not sticky
    check_answer(past, streamed, clock.tokens_ticked())
    assert (streamed.output_tokens, streamed.finish_reason) == (8, "length")
