"""The models the project builds itself: tiny weights, the 8B-shape tokenizer, the chat template."""

from __future__ import annotations

import json

import pytest
from transformers import AutoTokenizer

from llm_call_anatomy.harness import models
from llm_call_anatomy.harness.tokenizer import QWEN3_ADDED_TOKENS


def test_tiny_is_built_once_and_deterministic(tiny_model_dir):
    assert models.build_tiny() == tiny_model_dir
    assert (tiny_model_dir / "model.safetensors").is_file()
    config = json.loads((tiny_model_dir / "config.json").read_text())
    assert config["architectures"] == ["Qwen3ForCausalLM"]


def test_template_renders_generation_prompt_and_rewrites_history(tiny_model_dir):
    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    first = [{"role": "user", "content": "hi"}]
    text = tok.apply_chat_template(first, tokenize=False, add_generation_prompt=True, enable_thinking=False)
    assert text.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    second = [*first, {"role": "assistant", "content": "hello"}, {"role": "user", "content": "again"}]
    text2 = tok.apply_chat_template(second, tokenize=False, add_generation_prompt=True, enable_thinking=False)
    assert "<|im_start|>assistant\nhello<|im_end|>" in text2
    assert not text2.startswith(text)  # the past turn is written without its think block


def test_shape_tokenizer_covers_every_id_with_qwen3_specials():
    path = models.resolve(models.SHAPE, random_weights=True).path
    tok = AutoTokenizer.from_pretrained(path)
    assert len(tok) == 151936
    for token_id, (content, _) in enumerate(QWEN3_ADDED_TOKENS, start=151643):
        assert tok.convert_ids_to_tokens(token_id) == content
    assert tok.convert_tokens_to_ids("<think>") == 151667
    for token_id in (0, 5000, 151642, 151669, 151935):
        assert tok.decode([token_id]) != ""
    assert max(tok("any text at all, even ünïcödé")["input_ids"]) < 151643  # fillers are unreachable


def test_shape_needs_random_weights():
    with pytest.raises(models.ModelError, match="--random-weights"):
        models.resolve(models.SHAPE, random_weights=False)


def test_param_count_of_the_8b_shape():
    path = models.resolve(models.SHAPE, random_weights=True).path
    assert models.param_count(path) == 8_190_735_360


@pytest.mark.parametrize("bad", ["./no/such/dir", "/no/such/dir", "not a model"])
def test_missing_model_is_a_clear_error(bad):
    with pytest.raises(models.ModelError, match="no such directory"):
        models.resolve(bad, random_weights=False)


def test_a_built_in_model_s_first_build_is_said_once(tmp_path, monkeypatch, capsys):
    """issue 43: the first build of a built-in model is said, with where it goes; later runs are quiet."""
    from llm_call_anatomy.harness import models

    monkeypatch.setenv("LCA_CACHE", str(tmp_path))

    def fill(d):
        (d / "config.json").write_text("{}")

    first = models._build_once("demo", "k1", fill)
    said = capsys.readouterr().out
    assert said == f"model 'demo': building its folder once, into {first} (later runs reuse it)\n"
    assert models._build_once("demo", "k1", fill) == first and capsys.readouterr().out == ""


def test_a_build_draws_no_library_bar_and_leaves_them_as_they_were(tmp_path, monkeypatch):
    """The build's line says the wait (issue 43): transformers' own bars (a GGUF's conversion, the weights'
    write) are off while it fills the folder, on again after, also when the fill fails."""
    from transformers.utils import logging as hf_logging

    from llm_call_anatomy.harness import models

    monkeypatch.setenv("LCA_CACHE", str(tmp_path))
    seen = []

    def fill(d):
        seen.append(hf_logging.is_progress_bar_enabled())
        (d / "config.json").write_text("{}")

    hf_logging.enable_progress_bar()
    models._build_once("demo", "k1", fill)
    assert seen == [False] and hf_logging.is_progress_bar_enabled()

    def broken(d):
        raise RuntimeError("no space left")

    with pytest.raises(RuntimeError):
        models._build_once("demo", "k2", broken)
    assert hf_logging.is_progress_bar_enabled()
