"""``hf-server``'s command line against both transformers it meets: 5.17 on the H200 (facts recorded from the
5.17.0 wheel's own source in ``tests/fixtures/transformers_serve_5.17.0.json``) and the one installed here
(its ``Serve`` command's signature, read live). No server starts: the argv, its environment and the imports it
checks for are compared with what each version's ``transformers serve`` accepts."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest

from llm_call_anatomy.backends.openai.hf_server import HFServerBackend
from llm_call_anatomy.contract.adapter import BackendSettings

FACTS = json.loads((Path(__file__).parents[1] / "fixtures" / "transformers_serve_5.17.0.json").read_text())


def _argv(device: str) -> list[str]:
    backend = HFServerBackend(
        BackendSettings(model_path="/models/m", model_label="m", device=device, dtype="bfloat16")
    )
    return backend.server_argv(8123)


def _flags(argv: list[str]) -> set[str]:
    return {a for a in argv if a.startswith("--")}


def _installed_options() -> set[str]:
    serve = pytest.importorskip("transformers.cli.serve")
    params = list(inspect.signature(serve.Serve.__init__).parameters)[1:]
    return {"--" + p.replace("_", "-") for p in params}


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_the_command_uses_only_options_that_5_17_and_the_installed_version_accept(device) -> None:
    argv = _argv(device)
    assert argv[1:5] == ["-m", FACTS["module"], "serve", "/models/m"] and FACTS["serve_command_registered"]
    assert _flags(argv) <= set(FACTS["serve_options"]), _flags(argv) - set(FACTS["serve_options"])
    assert _flags(argv) <= _installed_options(), _flags(argv) - _installed_options()
    assert argv[argv.index("--device") + 1] == device and argv[argv.index("--dtype") + 1] == "bfloat16"


def test_the_cpu_command_sizes_the_cache_and_the_gpu_one_leaves_it_to_the_server() -> None:
    assert {"--cb-block-size", "--cb-num-blocks", "--cb-max-batch-tokens"} <= _flags(_argv("cpu"))
    assert not any(f.startswith("--cb-") for f in _flags(_argv("cuda")))


def test_the_routes_it_relies_on_exist_in_5_17() -> None:
    assert HFServerBackend.health_path == "/health"
    assert {"GET /health", "POST /v1/completions", "GET /v1/models"} <= set(FACTS["routes"])


def test_it_checks_for_what_transformers_serve_itself_checks_for() -> None:
    assert set(FACTS["is_serve_available_needs"]) <= set(HFServerBackend.needs)
    from transformers.utils import import_utils

    installed = inspect.getsource(import_utils.is_serve_available)
    assert all(f"is_{m}_available" in installed for m in HFServerBackend.needs)


def test_the_server_never_asks_pypi_for_a_newer_transformers() -> None:
    backend = HFServerBackend(BackendSettings(model_path="/models/m", model_label="m", device="cpu"))
    assert backend.server_env()["HF_HUB_DISABLE_UPDATE_CHECK"] == "1"


def test_a_config_only_folder_is_served_from_a_random_weight_checkpoint_written_once(
    tmp_path, tiny_model_dir, monkeypatch
) -> None:
    """``transformers serve`` loads weights from disk only (the Qwen3-8B shape has none): the harness writes a
    random-weight checkpoint of the folder once, beside it, and serves that."""
    import shutil

    from transformers import AutoModelForCausalLM

    from llm_call_anatomy.backends.openai import random_checkpoint
    from llm_call_anatomy.backends.openai.servers import LaunchedServerBackend

    shape = tmp_path / "shape"
    shutil.copytree(tiny_model_dir, shape, ignore=shutil.ignore_patterns("*.safetensors"))
    assert not random_checkpoint.has_weights(shape)
    started = []
    monkeypatch.setattr(LaunchedServerBackend, "start", lambda self: started.append(self.server_argv(8123)))
    settings = BackendSettings(
        model_path=str(shape), model_label="m", device="cpu", dtype="float32", random_weights=True
    )
    backend = HFServerBackend(settings)
    backend.start()
    out = random_checkpoint.checkpoint_dir(shape, "float32")
    assert started[0][4] == str(out) == backend._served_model() and backend.checkpoint_s > 0
    assert (out / "DONE").is_file() and random_checkpoint.has_weights(out)
    assert {f.name for f in shape.iterdir()} <= {
        f.name for f in out.iterdir()
    }  # its tokenizer and config too
    assert AutoModelForCausalLM.from_pretrained(out).config.vocab_size > 0
    written = (out / "model.safetensors").stat().st_mtime_ns
    again = HFServerBackend(settings)
    again.start()
    assert again.checkpoint_s == 0.0 and (out / "model.safetensors").stat().st_mtime_ns == written  # reused


def test_a_folder_with_weights_is_served_as_it_is(tiny_model_dir, monkeypatch) -> None:
    from llm_call_anatomy.backends.openai.servers import LaunchedServerBackend

    started = []
    monkeypatch.setattr(LaunchedServerBackend, "start", lambda self: started.append(self.server_argv(8123)))
    backend = HFServerBackend(
        BackendSettings(model_path=str(tiny_model_dir), model_label="m", device="cpu", random_weights=True)
    )
    backend.start()
    assert started[0][4] == str(tiny_model_dir) and backend.serve_path is None
