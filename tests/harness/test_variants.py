"""Configurations as columns (issue 41): ``base@variant`` backend columns from --variant, --variants-file and
--sweep.

Parsing and validation are units, and every mistake is one line, exit 2, before anything runs (the same
rule as --engine-arg: a setting the harness owns is refused naming its flag). A variant's settings reach
the server's command line as --engine-arg's do (built without starting the server). End to end on the tiny
model with hf-cb (the cheapest backend that takes engine settings, transformers' continuous batching in
process): a sweep is one column per value beside the plain backend, each its own engine start, recorded in
env.json as given and as the engine reports them, and the page has each column and says its settings; the
same command with --resume starts nothing again.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from llm_call_anatomy import backends
from llm_call_anatomy.backends.openai.servers import SGLangServerBackend, VLLMServerBackend, engine_arg_flags
from llm_call_anatomy.contract.adapter import BackendSettings
from llm_call_anatomy.contract.columns import base_of, ignored, reported_settings, split_column
from llm_call_anatomy.harness import server_args, variants
from llm_call_anatomy.harness.cli_checks import UsageError
from llm_call_anatomy.reports.analysis.caveats import configurations
from tests.conftest import compare, records
from tests.harness.test_setting_checks import refused

KNOWN = tuple(backends.REGISTRY)


def resolved(tmp_path: Path, backend: str | None, *, variant=(), sweep=(), file: str | None = None):
    path = None
    if file is not None:
        path = tmp_path / "variants.yaml"
        path.write_text(file)
    args = argparse.Namespace(backend=backend, variant=list(variant), sweep=list(sweep), variants_file=path)
    names, found = variants.resolve(args, KNOWN)
    return names, found, args


# --- parsing ------------------------------------------------------------------------------------------------
def test_a_column_splits_into_its_base_and_variant():
    assert split_column("vllm-server@fp8") == ("vllm-server", "fp8")
    assert split_column("hf") == ("hf", None)
    assert base_of("vllm-server@max_num_seqs=128") == "vllm-server"
    assert backends.applies("sglang-server@fp8") == backends.APPLIES["sglang-server"]


def test_variants_from_the_command_line_a_file_and_a_sweep(tmp_path):
    names, found, args = resolved(
        tmp_path,
        "vllm-server@fp8,sglang-server@fp8,sglang-server",
        variant=["vllm-server@big-batch:max_num_seqs=1024,enforce-eager=true"],
        sweep=["vllm-server:max_num_seqs=128,256"],
        file="variants:\n  fp8: {quantization: fp8, kv_cache_dtype: fp8}\n"
        "  sglang-server@fp8: {quantization: fp8, kv_cache_dtype: fp8_e4m3}\n",
    )
    assert names == [
        "vllm-server@fp8",
        "sglang-server@fp8",
        "sglang-server",
        "vllm-server@big-batch",
        "vllm-server@max_num_seqs=128",
        "vllm-server@max_num_seqs=256",
    ]
    assert args.backend == ",".join(names)  # what reads --backend again sees the columns
    assert found["vllm-server@fp8"].settings == {"quantization": "fp8", "kv_cache_dtype": "fp8"}
    assert found["sglang-server@fp8"].settings["kv_cache_dtype"] == "fp8_e4m3"  # base@name before name
    assert found["vllm-server@big-batch"].settings == {"max_num_seqs": 1024, "enforce_eager": True}
    assert found["vllm-server@max_num_seqs=256"].settings == {"max_num_seqs": 256}
    assert found["vllm-server@max_num_seqs=128"].described()["source"] == "--sweep"
    assert "sglang-server" not in found


def test_backend_left_out_with_variants_runs_theirs_alone(tmp_path):
    names, _, _ = resolved(tmp_path, None, sweep=["hf-cb:num_blocks=16,32"])
    assert names == ["hf-cb@num_blocks=16", "hf-cb@num_blocks=32"]
    assert resolved(tmp_path, None)[0] == list(backends.ALL)


def test_engine_args_per_column_put_the_variant_on_top():
    found = {"vllm-server@a": variants.Variant("vllm-server", "a", {"max_num_seqs": 8})}
    merged = variants.engine_args_by_column(
        {"vllm-server": {"max_num_seqs": 4, "enforce_eager": True}, "vllm-server@a": {"seed": 1}},
        ["vllm-server", "vllm-server@a"],
        found,
    )
    assert merged == {
        "vllm-server": {"max_num_seqs": 4, "enforce_eager": True},
        "vllm-server@a": {"max_num_seqs": 8, "enforce_eager": True, "seed": 1},
    }


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"backend": "vllm-server@nope"}, "no variant 'nope' is defined"),
        ({"backend": "vlm-server@fp8"}, "unknown backend 'vlm-server' in 'vlm-server@fp8'"),
        ({"backend": "hf", "variant": ["vlm@x:max_num_seqs=2"]}, "unknown backend 'vlm'"),
        ({"backend": "hf", "variant": ["hf@x:max_num_seqs=2"]}, "'hf' takes no engine arguments"),
        ({"backend": "hf", "variant": ["vllm@x:port=1"]}, "port is a setting the harness records"),
        ({"backend": "hf", "variant": ["vllm@x:max_model_len=9"]}, "use --max-model-len"),
        ({"backend": "hf", "variant": ["vllm@x:max_num_seqs"]}, "expected KEY=VALUE"),
        ({"backend": "hf", "variant": ["vllm:max_num_seqs=2"]}, "expected BACKEND@NAME:KEY=VALUE"),
        ({"backend": "hf", "variant": ["vllm@x:gpu_memory_utilization=NaN"]}, "not a finite number"),
        ({"backend": "hf", "sweep": ["vllm:enable_prefix_caching=true,false"]}, "use --no-prefix-caching"),
        ({"backend": "hf", "sweep": ["vllm:max_num_seqs"]}, "expected BACKEND:KEY=V1,V2"),
        ({"backend": "vllm@a", "file": "variants:\n  a: {dtype: float16}\n"}, "use --dtype"),
        ({"backend": "vllm@a", "file": "workloads: []\n"}, "expected one top-level mapping 'variants:"),
        ({"backend": "vllm@a b", "file": "variants:\n  a: {x: 1}\n"}, "is no variant name"),
    ],
)
def test_each_mistake_is_one_usage_error(tmp_path, kwargs, expected):
    with pytest.raises(UsageError, match=expected.replace("(", r"\(").replace("'", "'")):
        resolved(tmp_path, kwargs.pop("backend"), **kwargs)


def test_a_mistake_is_one_line_and_exit_2_before_anything_runs(tmp_path, capsys):
    err = refused(capsys, tmp_path, "--backend", "hf-cb@big")
    assert "no variant 'big' is defined" in err
    err = refused(capsys, tmp_path, "--variant", "vllm-server@x:served_model_name=m")
    assert "use --served-model-name" in err
    err = refused(capsys, tmp_path, "--variant", "hf-cb@x:num_blocks", "--backend", "hf-cb")
    assert "expected KEY=VALUE" in err


# --- the settings' way to the engine ------------------------------------------------------------------------
def test_a_variant_reaches_the_server_command_line_as_engine_args(tmp_path):
    _, found, _ = resolved(
        tmp_path,
        "vllm-server@fp8,sglang-server@fp8",
        file="variants:\n  fp8: {quantization: fp8, kv_cache_dtype: fp8, max_num_seqs: 256}\n",
    )
    by_column = variants.engine_args_by_column({}, list(found), found)
    for adapter, column in (
        (VLLMServerBackend, "vllm-server@fp8"),
        (SGLangServerBackend, "sglang-server@fp8"),
    ):
        settings = BackendSettings(
            model_path=str(tmp_path),
            model_label="tiny",
            engine_args=by_column[column],
            run_dir=str(tmp_path),
            column=column,
        )
        server = adapter(settings)
        argv = server.server_argv(8000) + engine_arg_flags(settings.engine_args)
        tail = argv[-6:]
        assert tail == ["--quantization", "fp8", "--kv-cache-dtype", "fp8", "--max-num-seqs", "256"]
        assert server._log_path() == tmp_path / "logs" / f"{column}.log"  # one server log per column
    assert VLLMServerBackend(
        BackendSettings(str(tmp_path), "tiny", engine_args=by_column["vllm-server@fp8"])
    ).max_running() == (
        256,
        "max_num_seqs",
    )


def test_an_hf_server_variant_is_transformers_serve_flags(tmp_path):
    from llm_call_anatomy.backends.openai.hf_server import HFServerBackend

    _, found, _ = resolved(tmp_path, None, variant=["hf-server@small:cb_num_blocks=32"])
    by_column = variants.engine_args_by_column({}, list(found), found)
    settings = BackendSettings(
        str(tmp_path),
        "tiny",
        device="cpu",
        engine_args=by_column["hf-server@small"],
        column="hf-server@small",
    )
    argv = HFServerBackend(settings).server_argv(8000) + engine_arg_flags(settings.engine_args)
    assert argv[-2:] == ["--cb-num-blocks", "32"]  # after the harness's own CPU sizing: the last one wins
    with pytest.raises(UsageError, match="device is a setting the harness records"):
        resolved(tmp_path, None, variant=["hf-server@gpu:device=cuda"])


def test_reported_settings_skip_echoes_and_find_what_the_engine_changed():
    engine = {
        "engine_kwargs": {"max_num_seqs": 1024},  # what was asked: no report
        "scheduler": {"max_num_seqs": 256, "cache_dtype": "fp8_e4m3"},
        "quantization": "fp8",
    }
    given = {"max_num_seqs": 1024, "kv_cache_dtype": "fp8_e4m3", "quantization": "FP8", "seed": 3}
    reported = reported_settings(engine, given)
    assert reported == {
        "max_num_seqs": 256,
        "kv_cache_dtype": "fp8_e4m3",
        "quantization": "fp8",
        "seed": None,
    }
    assert ignored(given, reported) == {"max_num_seqs": (1024, 256)}
    block = {
        "variant": {
            "base": "vllm-server",
            "settings": given,
            "source": "--variant",
            "reported": reported,
            "differs": {"max_num_seqs": {"given": 1024, "reported": 256}},
        }
    }
    (caveat,) = configurations({"vllm-server@big": block})
    assert caveat.topic == "configuration"
    assert "vllm-server@big is vllm-server with max_num_seqs=1024" in caveat.text
    assert "not reported by the engine: seed" in caveat.text
    assert "ignored or changed max_num_seqs (given 1024, ran 256)" in caveat.text


def test_engine_arg_wording_is_the_one_rule():
    with pytest.raises(UsageError, match="--engine-arg 'vllm:model=x': model is a setting the harness"):
        server_args.parse_engine_args(["vllm:model=x"], ["vllm@a"])
    assert server_args.parse_engine_args(["vllm:max_num_seqs=2"], ["vllm@a"]) == {"vllm": {"max_num_seqs": 2}}


# --- end to end ---------------------------------------------------------------------------------------
def test_a_sweep_beside_the_plain_backend_end_to_end_and_resumed(tmp_path):
    out = tmp_path / "run"
    argv = (
        "--backend",
        "hf-cb",
        "--sweep",
        "hf-cb:num_blocks=24,32",
        "--workloads",
        "load",
        "--out",
        str(out),
    )
    proc = compare(*argv)
    columns = ["hf-cb", "hf-cb@num_blocks=24", "hf-cb@num_blocks=32"]
    rows = [r for r in records(out) if r.get("extra", {}).get("level") is None]
    assert sorted({r["backend"] for r in rows}) == columns
    assert not [r for r in rows if r.get("error") or r.get("skipped")]
    assert all(f"== {c} ==" in proc.stdout for c in columns)  # one engine start each, in turn
    env = json.loads((out / "env.json").read_text())
    assert env["variants"]["hf-cb@num_blocks=24"]["settings"] == {"num_blocks": 24}
    assert env["engine_args"] == {
        "hf-cb@num_blocks=24": {"num_blocks": 24},
        "hf-cb@num_blocks=32": {"num_blocks": 32},
    }
    for column, blocks in (("hf-cb@num_blocks=24", 24), ("hf-cb@num_blocks=32", 32)):
        block = json.loads((out / "env" / f"{column}.json").read_text())
        assert block["variant"]["reported"] == {"num_blocks": blocks}  # as the engine's cache reports it
        assert block["variant"]["differs"] == {}
        assert block["engine"]["continuous_batching"]["num_blocks"] == blocks
    assert "variant" not in json.loads((out / "env" / "hf-cb.json").read_text())
    page = (out / "report.html").read_text()
    assert all(c in page for c in columns)
    assert (
        "hf-cb@num_blocks=32 is hf-cb with num_blocks=32 (--sweep); its engine reports num_blocks=32" in page
    )
    assert "hf-cb@num_blocks=24" in proc.stdout.split("records in")[-1]  # the terminal's summary

    again = compare(*argv, "--resume")
    assert "hf-cb@num_blocks=32: engine start 0: every request already recorded" in again.stdout
    other = compare(*argv[:3], "hf-cb:num_blocks=24,40", *argv[4:], "--resume", check=False)
    assert other.returncode == 2 and "other settings" in other.stderr


def test_merge_starts_keeps_a_variant_redefined_apart():
    from llm_call_anatomy.reports.runs import setup_of

    def env(seqs: int) -> dict:
        block = {"packages": {"vllm": "0.32.0"}}
        return {
            "plan_hash": "p",
            "variants": {"vllm-server@a": {"settings": {"max_num_seqs": seqs}}},
            "backends": {"vllm-server@a": block},
        }

    assert setup_of(env(8), "vllm-server@a")[3] == "0.32.0"  # the base's package version
    assert setup_of(env(8), "vllm-server@a") == setup_of(env(8), "vllm-server@a")
    assert setup_of(env(8), "vllm-server@a") != setup_of(env(16), "vllm-server@a")
