"""issue 43: a server of the user's own (``--backend openai --base-url``) is asked for its ``/models`` first:
one that does not answer, or that does not list the model asked for, is refused in one line (exit 2) before
the model is chosen and its tokenizer loads. Against a real HTTP stand-in on 127.0.0.1; what is asserted is
the order of events (what the server saw, what the run printed), never seconds."""

from __future__ import annotations

import socket

from llm_call_anatomy.harness.cli import main
from tests.harness.fakes import JsonHandler, serving

TINY_WORD = "model 'tiny'"  # choose_model's first line: printed before the tokenizer loads


class _Two(JsonHandler):
    model_ids = ("llama-a", "llama-b")
    seen: list[str] = []

    def do_GET(self) -> None:
        self.seen.append(f"GET {self.path}")
        super().do_GET()

    def do_POST(self) -> None:
        self.seen.append(f"POST {self.path}")
        self._json(500, {"error": "no completion expected"})


def run(url: str, model: str, tmp_path, capsys) -> tuple[int, str, str]:
    code = main(["--backend", "openai", "--base-url", url, "--model", model, "--workloads", "template",
                 "--out", str(tmp_path / "run")])  # fmt: skip
    got = capsys.readouterr()
    return code, got.out, got.err


def test_a_server_that_does_not_answer_is_refused_before_the_model_is_chosen(tmp_path, capsys):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    url = f"http://127.0.0.1:{port}/v1"
    code, out, err = run(url, "tiny", tmp_path, capsys)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"compare.py: error: --base-url {url}: the server did not")
    assert f"{url}/models" in lines[0] and "start it" in lines[0]
    assert TINY_WORD not in out  # refused before choose_model, so before any tokenizer
    assert not (tmp_path / "run").exists()


def test_a_model_the_server_does_not_list_is_refused_before_the_tokenizer(tmp_path, capsys):
    _Two.seen = []
    with serving(_Two) as url:
        code, out, err = run(url, "org/not-served", tmp_path, capsys)
    assert code == 2 and _Two.seen == ["GET /v1/models"]  # asked once, nothing else sent
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "--model org/not-served is not among the models" in lines[0]
    assert "llama-a, llama-b" in lines[0] and "--served-model-name" in lines[0]
    assert out == "" and not (tmp_path / "run").exists()
