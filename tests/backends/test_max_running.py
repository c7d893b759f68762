"""The engine's own limit on requests running at once (``Backend.max_running``, issue 39: the capacity search
goes no higher in a closed loop): a launched vLLM server's ``max_num_seqs`` as launched (matched scheduler,
an --engine-arg, over its data-parallel engines), a server's own word (SGLang's /get_server_info
``max_running_requests``), and None where nothing says."""

from __future__ import annotations

import pytest

from llm_call_anatomy.backends.base import Backend
from llm_call_anatomy.backends.openai import server_facts
from llm_call_anatomy.backends.openai.servers import VLLMServerBackend
from llm_call_anatomy.contract.adapter import BackendSettings


def settings(**kw) -> BackendSettings:
    base = {"model_path": "/m", "model_label": "m", "dtype": "bfloat16", "device": "cuda"}
    return BackendSettings(**{**base, **kw})


@pytest.mark.parametrize(
    ("kw", "expected"),
    [
        ({}, 1024),  # the matched scheduler on a GPU (backends/vllm/config.py)
        ({"device": "cpu"}, 128),
        ({"dp": 2}, 2048),  # each data-parallel engine schedules its own
        ({"engine_args": {"max_num_seqs": 64}}, 64),
        ({"engine_defaults": "own", "engine_args": {"max_num_seqs": 64}}, 64),
    ],
)
def test_a_launched_vllm_server_says_the_max_num_seqs_it_was_launched_with(kw, expected):
    assert VLLMServerBackend(settings(**kw)).max_running() == (expected, "max_num_seqs")


def test_vllms_own_defaults_leave_it_to_what_the_server_says(monkeypatch):
    backend = VLLMServerBackend(settings(engine_defaults="own"))
    monkeypatch.setattr(backend, "scheduler", lambda: {"kv_cache_tokens": 1000})
    assert backend.max_running()[0] is None


@pytest.mark.parametrize(
    ("scheduler", "expected"),
    [
        ({"max_running_requests": 48}, (48, "max_running_requests")),
        ({"max_running_requests": None}, None),  # SGLang sizes it itself and does not say
        ({"max_running_requests": True}, None),
        ({}, None),
    ],
)
def test_a_servers_word_on_its_limit(scheduler, expected):
    found = server_facts.max_running(scheduler)
    assert (found if found[0] is not None else None) == expected


def test_a_backend_that_does_not_say_has_no_limit():
    assert Backend.max_running(object())[0] is None  # type: ignore[arg-type]
