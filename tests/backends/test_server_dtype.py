"""issue 43: a server the harness launches on a CPU gets the run's dtype (float32, as the in-process columns)
on its command line, and says in one line why it is not the model's own where the two differ."""

from __future__ import annotations

import json

from llm_call_anatomy.backends.openai.hf_server import HFServerBackend
from llm_call_anatomy.backends.openai.servers import SGLangServerBackend, VLLMServerBackend, own_dtype
from llm_call_anatomy.contract.adapter import BackendSettings


def settings(model, device="cpu", dtype="float32", **kw) -> BackendSettings:
    return BackendSettings(model_path=str(model), model_label="m", dtype=dtype, device=device, **kw)


def model(tmp_path, **config):
    (tmp_path / "config.json").write_text(json.dumps(config))
    return tmp_path


def dtype_flag(argv: list[str]) -> str:
    return argv[len(argv) - 1 - argv[::-1].index("--dtype") + 1]  # the last one: it wins


def test_a_cpu_server_runs_the_run_s_dtype_and_says_why_not_the_model_s_own(tmp_path):
    m = model(tmp_path, dtype="bfloat16")
    for cls in (VLLMServerBackend, SGLangServerBackend, HFServerBackend):
        backend = cls(settings(m))
        if cls is not HFServerBackend:
            assert dtype_flag(backend.server_argv(8000)) == "float32"
        note = backend.dtype_note()
        assert note is not None and "not the model's own bfloat16: pass --dtype bfloat16" in note
        assert "served in float32" in note


def test_no_note_where_the_dtypes_agree_on_a_gpu_or_when_an_engine_arg_sets_it(tmp_path):
    assert VLLMServerBackend(settings(model(tmp_path, torch_dtype="float32"))).dtype_note() is None
    m = model(tmp_path, dtype="bfloat16")
    assert VLLMServerBackend(settings(m, device="cuda", dtype="float16")).dtype_note() is None
    told = VLLMServerBackend(settings(m, engine_args={"dtype": "bfloat16"}))
    assert told.dtype_note() is None and dtype_flag(told.launch_argv(8000)) == "bfloat16"


def test_the_model_s_own_dtype_is_read_from_its_config(tmp_path):
    assert own_dtype(str(model(tmp_path, torch_dtype="torch.bfloat16"))) == "bfloat16"
    assert own_dtype(str(tmp_path / "none")) is None
