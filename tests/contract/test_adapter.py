"""Typed backend settings (``contract.adapter``): each backend's own options as a dataclass, through
run.json as a KEY: value mapping, and an older run's settings (a flat ``options`` dict for every
backend, or none at all) still read."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from llm_call_anatomy.backends.openai.options import OpenAIOptions
from llm_call_anatomy.backends.sglang.config import SGLangOptions
from llm_call_anatomy.contract.adapter import BackendOptions, BackendSettings

EXAMPLES = Path(__file__).resolve().parents[2] / "lab" / "examples"


@dataclass(frozen=True)
class Knobs(BackendOptions):
    depth: int = 2
    mode: str = "auto"


def test_settings_go_through_run_json_and_back():
    settings = BackendSettings(
        model_path="/m", model_label="m", tp=2, engine_args={"page_size": 16}, options=Knobs(depth=5)
    )
    raw = json.loads(json.dumps(settings.to_dict()))
    assert raw["options"] == {"depth": 5, "mode": "auto"}
    assert BackendSettings.from_dict(raw, Knobs) == settings
    # read without the backend's type, the options are the plain (empty) ones; the adapter's type reads
    # them again
    generic = BackendSettings.from_dict(raw)
    assert type(generic.options) is BackendOptions and generic.options.to_dict() == {}
    assert generic.with_options(Knobs, raw["options"]) == settings


def test_an_old_flat_options_dict_reads_as_each_backends_own():
    options = {"timing": "stream", "attention_backend": "triton", "served_model": "lca", "x": 1}
    old = {"model_path": "/m", "model_label": "m", "options": options}
    sglang = BackendSettings.from_dict(old, SGLangOptions).options
    assert sglang == SGLangOptions(timing="stream", attention_backend="triton")
    served = BackendSettings.from_dict(old, OpenAIOptions).options
    assert served == OpenAIOptions(served_model="lca") and served.server_start_timeout_s is None


def test_options_of_another_type_are_read_by_field_name():
    assert Knobs.of(BackendOptions()) == Knobs()  # what generic code builds: the defaults
    mine = Knobs(depth=7)
    assert Knobs.of(mine) is mine
    assert SGLangOptions.of(SGLangOptions(page_size=4)).page_size == 4


def test_typed_options_refuse_a_field_they_lack():
    with pytest.raises(TypeError):
        Knobs(width=3)  # type: ignore[call-arg]


@pytest.mark.parametrize("run_json", sorted(EXAMPLES.glob("*/*/run.json")), ids=lambda p: p.parent.name)
def test_the_committed_runs_settings_still_read(run_json):
    raw = json.loads(run_json.read_text())["settings"]
    assert "options" not in raw  # written before options were typed, and the command line writes none
    settings = BackendSettings.from_dict(raw, SGLangOptions)
    assert settings.model_label == raw["model_label"] and settings.options == SGLangOptions()
