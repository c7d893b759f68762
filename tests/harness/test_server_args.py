"""Pointing the study at a server (#20): --served-model-name, --tokenizer, --endpoint chat, --engine-arg.

Against the fake servers of tests/harness/fakes.py: a name the server does not list is refused in
one line before anything runs; ``--endpoint chat`` sends the workload's messages to a chat-only
server, the records say so, cached tokens where the server reports them and None where it does
not. Bad combinations are one line and exit 2. The engine side of ``--engine-arg`` (vLLM's own error
for an unknown key) is tests/backends/test_vllm.py.
"""

from __future__ import annotations

import json

import pytest

from llm_call_anatomy.backends.openai.servers import engine_arg_flags
from llm_call_anatomy.harness.cli_checks import UsageError
from llm_call_anatomy.harness.server_args import parse_engine_args
from tests.conftest import compare, records
from tests.harness.fakes import CHAT_ANSWER, CHAT_CACHED_TOKENS, chat_server, small_workload
from tests.harness.test_cli import one_line_error

pytestmark = pytest.mark.openai

CHAT = """\
workloads:
  - name: chat
    kind: conversation
    system: You answer in one short line.
    turns:
      - {user: "First question?", assistant: "First answer."}
      - {user: "Second question?", assistant: "Second answer."}
"""


def test_a_served_name_the_server_does_not_list_is_refused_before_anything_runs(tmp_path):
    with chat_server(models=("llama-a", "llama-b")) as (url, received):
        named = compare(
            "--backend",
            "openai",
            "--base-url",
            url,
            "--served-model-name",
            "llama-c",
            "--workload-file",
            str(small_workload(tmp_path, CHAT)),
            "--out",
            str(tmp_path / "run"),
            check=False,
            timeout=120,
        )
        unnamed = compare(
            "--backend",
            "openai",
            "--base-url",
            url,
            "--workload-file",
            str(tmp_path / "small.yaml"),
            "--out",
            str(tmp_path / "run"),
            check=False,
            timeout=120,
        )
    line = one_line_error(named)
    assert "--served-model-name llama-c" in line and "llama-a, llama-b" in line
    assert "--served-model-name" in one_line_error(
        unnamed
    )  # two models, --model tiny is neither: no silent pick
    assert received == [] and not (tmp_path / "run").exists()


def test_chat_endpoint_sends_the_messages_and_records_what_the_server_reports(tmp_path, tiny_model_dir):
    out = tmp_path / "run"
    with chat_server(models=("served-llama",)) as (url, received):
        # --model is the server's name (no path, no hub id): the prompts' tokenizer comes from --tokenizer
        compare(
            "--backend",
            "openai",
            "--base-url",
            url,
            "--endpoint",
            "chat",
            "--model",
            "served-llama",
            "--tokenizer",
            str(tiny_model_dir),
            "--workload-file",
            str(small_workload(tmp_path, CHAT)),
            "--repeats",
            "1",
            "--out",
            str(out),
            "--no-report",
            timeout=300,
        )
    rows = [r for r in records(out) if r["workload"] == "chat" and not r.get("skipped")]
    assert rows and not [r for r in rows if r.get("error")]
    assert {r["extra"]["prompt_sent_as"] for r in rows} == {"chat-messages"}
    assert {r["output_text"] for r in rows} == {"".join(CHAT_ANSWER)}
    assert {r["cached_tokens"] for r in rows if r["turn"] == 1} == {None}  # not reported: never zero
    assert {r["cached_tokens"] for r in rows if r["turn"] == 2} == {CHAT_CACHED_TOKENS}
    assert all("prompt" not in body and body["model"] == "served-llama" for body in received)
    last_turn = [body["messages"] for body in received if len(body["messages"]) == 4]
    assert last_turn and last_turn[0][-1] == {"role": "user", "content": "Second question?"}
    assert last_turn[0][0]["role"] == "system"
    env = json.loads((out / "env.json").read_text())
    assert env["endpoint"] == "chat" and env["tokenizer_path"] == str(tiny_model_dir)
    assert env["served_model_name"] == "served-llama"
    assert "the server applies its own chat template" in env["backends"]["openai"]["engine"]["endpoint"]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            [
                "--backend",
                "openai",
                "--base-url",
                "http://127.0.0.1:9/v1",
                "--endpoint",
                "chat",
                "--workloads",
                "sweep",
            ],
            "sweep need(s) exact token ids",
        ),
        (["--backend", "hf", "--endpoint", "chat"], "--endpoint chat is for servers only"),
        (["--backend", "hf", "--tokenizer", "x"], "--tokenizer is for --backend openai alone"),
        (["--backend", "hf", "--engine-arg", "vllm:max_num_seqs=4"], "vllm is not in --backend"),
        (["--backend", "hf", "--engine-arg", "hf:x=1"], "'hf' takes no engine arguments"),
        (["--backend", "vllm", "--engine-arg", "vllm:max_num_seqs"], "expected BACKEND:KEY=VALUE"),
    ],
)
def test_bad_server_flags_are_one_line_and_exit_2(args, expected, tmp_path):
    proc = compare(*args, "--out", str(tmp_path / "run"), check=False, timeout=120)
    assert expected in one_line_error(proc)
    assert not (tmp_path / "run").exists()


def test_a_tokenizer_that_does_not_load_is_one_line(tmp_path):
    empty = tmp_path / "not-a-tokenizer"
    empty.mkdir()
    proc = compare(
        "--backend",
        "openai",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--tokenizer",
        str(empty),
        "--workloads",
        "template",
        "--out",
        str(tmp_path / "run"),
        check=False,
        timeout=120,
    )
    assert f"--tokenizer {empty}: cannot load its tokenizer" in one_line_error(proc)


def test_engine_args_parse_as_json_and_become_server_flags():
    parsed = parse_engine_args(
        [
            "vllm-server:max_num_batched_tokens=16384",
            "vllm-server:quantization=fp8",
            "vllm-server:enforce-eager=true",
            "vllm-server:enable_chunked_prefill=false",
            "vllm:gpu_memory_utilization=0.8",
            'vllm:compilation_config={"level": 0}',
        ],
        ["vllm", "vllm-server"],
    )
    assert parsed == {
        "vllm-server": {
            "max_num_batched_tokens": 16384,
            "quantization": "fp8",
            "enforce_eager": True,
            "enable_chunked_prefill": False,
        },
        "vllm": {"gpu_memory_utilization": 0.8, "compilation_config": {"level": 0}},
    }
    assert engine_arg_flags(parsed["vllm-server"]) == [
        "--max-num-batched-tokens",
        "16384",
        "--quantization",
        "fp8",
        "--enforce-eager",
        "--no-enable-chunked-prefill",
    ]
    assert engine_arg_flags(parsed["vllm"])[2:] == ["--compilation-config", '{"level": 0}']
    with pytest.raises(UsageError, match="sglang is not in --backend"):
        parse_engine_args(["sglang:mem_fraction_static=0.8"], ["vllm"])
