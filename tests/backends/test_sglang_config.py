"""The SGLang adapter's request and engine settings (``backends/sglang/config.py``), without SGLang:
the sampling parameters, logprob fields and engine arguments it builds, checked against SGLang 0.5.17's
own field names (and the installed SGLang's, where there is one), and the effective configuration it
reads back. The parsers, the recorded answers and the engine: ``test_sglang.py``.
"""

from __future__ import annotations

import dataclasses
import enum
import importlib.util
import json

import pytest

from llm_call_anatomy.backends.sglang import config
from llm_call_anatomy.contract.adapter import BackendSettings, Request

SGLANG_MISSING = importlib.util.find_spec("sglang") is None

# Names copied from the SGLang 0.5.17 source: SamplingParams' API fields
# (sglang/srt/sampling/sampling_params.py) and the ServerArgs fields this adapter may set
# (sglang/srt/server_args.py). A typo in config.py fails here, not on the GPU.
SAMPLING_PARAMS_0_5_17 = {
    "max_new_tokens", "stop", "stop_token_ids", "stop_regex", "temperature", "top_p", "top_k", "min_p",
    "frequency_penalty", "presence_penalty", "repetition_penalty", "min_new_tokens", "n", "json_schema",
    "regex", "ebnf", "structural_tag", "ignore_eos", "skip_special_tokens", "spaces_between_special_tokens",
    "no_stop_trim", "stream_interval", "logit_bias", "sampling_seed", "custom_params",
}  # fmt: skip
SERVER_ARGS_0_5_17 = {
    "model_path", "load_format", "dtype", "tp_size", "context_length", "skip_tokenizer_init",
    "disable_radix_cache", "grammar_backend", "constrained_json_disable_any_whitespace", "sampling_backend",
    "enable_metrics", "random_seed", "log_level", "attention_backend", "mem_fraction_static",
    "disable_cuda_graph", "chunked_prefill_size", "page_size", "disable_overlap_schedule",
}  # fmt: skip
GENERATE_ARGS_0_5_17 = {
    "input_ids",
    "sampling_params",
    "return_logprob",
    "top_logprobs_num",
    "logprob_start_len",
}
SCHEMA = {"type": "object", "properties": {"port": {"type": "integer"}}, "required": ["port"]}


def settings(**kw) -> BackendSettings:
    return BackendSettings(model_path="/models/m", model_label="m", **kw)


# --- requests and engine settings -----------------------------------------------------------------
def test_greedy_sweep_request():
    params = config.build_sampling_params(Request(prompt_ids=[1, 2, 3], max_new_tokens=64, ignore_eos=True))
    assert params == {"max_new_tokens": 64, "temperature": 0.0, "top_p": 1.0, "ignore_eos": True}


def test_sampled_constrained_request_sends_the_schema_as_json_text_and_the_seed():
    request = Request([5], max_new_tokens=64, temperature=0.7, top_p=0.95, json_schema=SCHEMA, seed=1234)
    params = config.build_sampling_params(request)
    assert isinstance(params["json_schema"], str) and json.loads(params["json_schema"]) == SCHEMA
    assert params["sampling_seed"] == 1234
    assert (params["temperature"], params["top_p"], params["ignore_eos"]) == (0.7, 0.95, False)


def test_sampling_params_are_sglang_0_5_17_names():
    kinds = [
        Request([1], 4),
        Request([1], 64, ignore_eos=True),
        Request([1], 64, temperature=1.3, top_p=0.95, json_schema=SCHEMA, seed=7, top_logprobs=10),
    ]
    for request in kinds:
        assert set(config.build_sampling_params(request)) <= SAMPLING_PARAMS_0_5_17
        assert set(config.logprob_kwargs(request)) <= GENERATE_ARGS_0_5_17


def test_logprobs_ask_for_output_positions_only():
    assert config.logprob_kwargs(Request([1], 4)) == {}
    assert config.logprob_kwargs(Request([1], 4, top_logprobs=10)) == {
        "return_logprob": True,
        "top_logprobs_num": 10,
        "logprob_start_len": -1,  # >= 0 would also cap the radix-cache match there
    }


def test_engine_kwargs():
    kw = config.engine_kwargs(settings(tp=2, max_model_len=8192, random_weights=True), enable_metrics=True)
    assert kw["model_path"] == "/models/m" and kw["load_format"] == "dummy"
    assert (kw["tp_size"], kw["context_length"], kw["dtype"]) == (2, 8192, "bfloat16")
    assert kw["grammar_backend"] == "xgrammar" and kw["constrained_json_disable_any_whitespace"] is True
    assert kw["sampling_backend"] == "pytorch" and kw["disable_radix_cache"] is False
    assert kw["skip_tokenizer_init"] is False and kw["enable_metrics"] is True
    assert "attention_backend" not in kw  # SGLang's default (FA3 on Hopper) unless asked
    real = config.engine_kwargs(settings(), enable_metrics=False)
    assert "load_format" not in real and real["enable_metrics"] is False


def test_engine_options_pass_through_only_known_server_args():
    # the options as an old run.json's flat dict held them ("x": another backend's key)
    options = config.SGLangOptions.from_dict(
        {"attention_backend": "triton", "mem_fraction_static": 0.8, "timing": "stream", "x": 1}
    )
    kw = config.engine_kwargs(settings(options=options), enable_metrics=True)
    assert kw["attention_backend"] == "triton" and kw["mem_fraction_static"] == 0.8
    assert "timing" not in kw and "x" not in kw
    assert set(kw) <= SERVER_ARGS_0_5_17
    assert set(config.ENGINE_OPTIONS) <= SERVER_ARGS_0_5_17


@pytest.mark.sglang
@pytest.mark.skipif(SGLANG_MISSING, reason="sglang is not installed")
def test_names_exist_in_the_installed_sglang():
    from sglang.srt.sampling.sampling_params import SamplingParams
    from sglang.srt.server_args import ServerArgs

    server_fields = {f.name for f in dataclasses.fields(ServerArgs)}
    assert set(config.engine_kwargs(settings(random_weights=True), enable_metrics=True)) <= server_fields
    assert set(config.ENGINE_OPTIONS) <= server_fields
    assert SAMPLING_PARAMS_0_5_17 - {"stop", "stop_regex"} <= set(SamplingParams.__struct_fields__)


# --- the effective configuration -------------------------------------------------------------------
class Mode(enum.Enum):
    FULL = "full"


@dataclasses.dataclass
class Phase:
    backend: Mode
    bs: list[int]


def test_effective_config_prefers_the_first_source_and_trims_graph_sizes():
    resolved = {
        "page_size": 1,
        "attention_backend": "fa3",
        "cuda_graph_config": {"decode": Phase(Mode.FULL, [1, 2])},
    }
    server_args = type("ServerArgs", (), {"page_size": 64, "grammar_backend": "xgrammar", "tp_size": 1})()
    out = config.effective_config([resolved, {"max_total_num_tokens": 1000}, server_args])
    assert out["page_size"] == 1 and out["attention_backend"] == "fa3"
    assert out["grammar_backend"] == "xgrammar" and out["max_total_num_tokens"] == 1000
    assert out["cuda_graph_config"] == {"decode": {"backend": "full"}}
    json.dumps(out)
    assert config.grammar_enabled(out) and not config.grammar_enabled({"grammar_backend": "none"})
    assert config.grammar_enabled({})  # unknown: keep the capability, the request would say otherwise
