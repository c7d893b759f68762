"""How ``ignore_eos`` goes out in each request body (``backends/openai/bodies.py``, ``chat.py``): vLLM's and
SGLang's extension where the extensions go, ``transformers serve``'s ``generation_config`` for ``hf-server``,
nothing for a generic server in a standard form. The ``generation_config`` body is checked against what the
server does with it, in the transformers installed here (read live) and in 5.17 (the H200's: lines recorded
from the wheel in ``tests/fixtures/transformers_serve_5.17.0.json``). The real server running past EOS is
``test_hf_server.py``'s."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

from llm_call_anatomy.backends.openai.backend import OpenAIBackend
from llm_call_anatomy.backends.openai.bodies import FORMS, completions_body
from llm_call_anatomy.backends.openai.chat import chat_body
from llm_call_anatomy.backends.openai.hf_server import HFServerBackend
from llm_call_anatomy.contract.adapter import BackendSettings, Request

FACTS = json.loads((Path(__file__).parents[1] / "fixtures" / "transformers_serve_5.17.0.json").read_text())
CHAT = {"messages": [{"role": "user", "content": "hi"}]}


@pytest.fixture(scope="module")
def tokenizer(tiny_model_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model_dir)


def _sent(body: dict) -> dict:
    """The JSON object the ``openai`` client posts: the standard fields with ``extra_body`` merged in."""
    return {**{k: v for k, v in body.items() if k != "extra_body"}, **body.get("extra_body", {})}


def _generation_config(body: dict) -> dict:
    return json.loads(body["extra_body"]["generation_config"])


@pytest.mark.parametrize("temperature", [0.0, 0.7])
def test_hf_server_bodies_carry_a_generation_config_without_eos_and_no_unknown_field(tokenizer, temperature):
    request = Request(prompt_ids=[5, 6, 7], max_new_tokens=8, ignore_eos=True, temperature=temperature)
    text = completions_body(request, "text", "m", None, tokenizer, "generation_config")
    chat = chat_body(request, CHAT, "m", None, "generation_config")
    for body in (text, chat):
        assert _generation_config(body) == {"eos_token_id": -1, "do_sample": temperature > 0}
        assert "ignore_eos" not in _sent(body)  # transformers serve answers an unknown field with 422
    # every field is one its handlers declare (5.17's recorded, the installed one's read live)
    completion = importlib.import_module("transformers.cli.serving.completion")
    chat_module = importlib.import_module("transformers.cli.serving.chat_completion")
    accepted = completion.TransformersTextCompletionCreateParams.__mutable_keys__
    assert set(_sent(text)) <= accepted, set(_sent(text)) - accepted
    accepted = chat_module.TransformersCompletionCreateParamsStreaming.__mutable_keys__
    assert set(_sent(chat)) <= accepted, set(_sent(chat)) - accepted
    assert (
        "generation_config" in FACTS["completions_params_fields"]
        and "generation_config" in (FACTS["chat_params_fields"])
    )


def test_without_ignore_eos_the_server_keeps_its_own_generation_config(tokenizer):
    request = Request(prompt_ids=[5, 6, 7], max_new_tokens=8)
    assert "extra_body" not in completions_body(request, "text", "m", None, tokenizer, "generation_config")
    assert "extra_body" not in chat_body(request, CHAT, "m", None, "generation_config")


def test_the_server_reads_that_config_as_no_eos_at_all_in_5_17_and_here(tokenizer):
    """What transformers serve does with the body: ``GenerationConfig(**json.loads(...))``, its
    ``eos_token_id`` handed to the batching manager's ``add_request`` for this request, where -1 leaves the
    request no EOS id (only ids >= 0 are kept)."""
    from transformers import GenerationConfig
    from transformers.generation.continuous_batching.requests import RequestState

    request = Request(prompt_ids=[5, 6, 7], max_new_tokens=8, ignore_eos=True)
    body = completions_body(request, "text", "m", None, tokenizer, "generation_config")
    config = GenerationConfig(**_generation_config(body))
    state = RequestState(
        request_id="r", initial_tokens=[5, 6, 7], max_new_tokens=8, eos_token_id=config.eos_token_id
    )
    assert state._eos_token_ids == set()
    default = RequestState(request_id="d", initial_tokens=[5], max_new_tokens=8, eos_token_id=[2050, 2048])
    assert default._eos_token_ids == {2050, 2048}  # the check above can fail: real ids are kept
    site = Path(importlib.import_module("transformers").__file__).parent.parent
    for name, fact in FACTS["ignore_eos_source_lines"].items():
        assert fact["line"] in (site / fact["file"]).read_text(), (
            f"{name}: not in the installed {fact['file']}"
        )


def test_vllm_and_sglang_keep_their_extension_and_a_generic_server_is_sent_none(tokenizer):
    request = Request(prompt_ids=[5, 6, 7], max_new_tokens=8, ignore_eos=True)
    extended = completions_body(request, FORMS[0], "m", "vllm", tokenizer, "ignore_eos")
    assert extended["extra_body"] == {"return_token_ids": True, "ignore_eos": True}
    for form in FORMS[1:]:
        assert "extra_body" not in completions_body(request, form, "m", None, tokenizer, None)
    assert chat_body(request, CHAT, "m", "sglang", "ignore_eos")["extra_body"]["ignore_eos"] is True


def test_each_backend_says_how_it_asks_the_server_to_ignore_eos() -> None:
    settings = BackendSettings(model_path="/models/m", model_label="m", device="cpu")
    hf = HFServerBackend(settings)
    generic = OpenAIBackend(settings)
    assert generic.ignore_eos_via == "ignore_eos"  # a generic server is tried with the extensions first
    generic.form = FORMS.index("text")
    assert generic.ignore_eos_via is None
    hf.form = FORMS.index("text")  # as its _connect sets it
    assert hf.ignore_eos_via == "generation_config"
    chat = OpenAIBackend(BackendSettings(model_path="/models/m", model_label="m", endpoint="chat"))
    chat.flavor = "vllm"
    assert chat.ignore_eos_via == "ignore_eos"
    chat.flavor = None
    assert chat.ignore_eos_via is None
