"""A sessions load whose users replay recorded transcripts: the plan, the file's mistakes, the hashes."""

from __future__ import annotations

import json

import pytest

from llm_call_anatomy.contract.chat import common_prefix_len
from llm_call_anatomy.harness.cli import main
from llm_call_anatomy.workloads.catalog import build_plan
from llm_call_anatomy.workloads.load.prompts import context_needed
from llm_call_anatomy.workloads.reader import WorkloadFileError, hashes, read_workload_file
from llm_call_anatomy.workloads.transcripts import recorded_requests

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup_order",
            "description": "Fetch an order.",
            "parameters": {"type": "object", "properties": {"id": {"type": "integer"}}},
        },
    }
]
CALL = {
    "role": "assistant",
    "content": None,
    "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "lookup_order", "arguments": '{"id": 7}'}}
    ],
}
TRANSCRIPTS = [  # three users, told apart by their first words; 3, 2 and 2 requests
    [
        {"role": "user", "content": "Where is order 7?"},
        CALL,
        {"role": "tool", "tool_call_id": "c1", "content": "shipped"},
        {"role": "assistant", "content": "It shipped."},
        {"role": "user", "content": "When will it arrive?"},
    ],
    {
        "messages": [
            {"role": "user", "content": "Do you ship to Norway?"},
            {"role": "assistant", "content": "Yes."},
            {"role": "user", "content": "At what cost?"},
            {"role": "assistant", "content": "9.90."},
        ]
    },
    [
        {"role": "system", "content": "You are a terse bot."},
        {"role": "user", "content": "Hello there"},
        {"role": "assistant", "content": "Hi."},
        {"role": "user", "content": "Bye"},
    ],
]
STUDY = """
workloads:
  - name: rec
    kind: load
    shape: sessions
    levels: [1, 3]
    output_tokens: 4
    system: You are the support assistant of an online shop.
    tools: TOOLS
    transcripts:
      path: sessions.jsonl
"""


@pytest.fixture
def study(write):
    def _study(yaml_text: str = STUDY, lines: list[str] | None = None):
        write("sessions.jsonl", "\n".join(lines or [json.dumps(t) for t in TRANSCRIPTS]) + "\n")
        return write("study.yaml", yaml_text.replace("TOOLS", json.dumps(TOOLS)))

    return _study


def test_each_user_replays_one_transcript_in_order_each_request_extending_the_last(renderer, study):
    [spec] = read_workload_file(study())
    assert (
        spec.transcripts is None and len(spec.sessions) == 3 and spec.user_count() == 3
    )  # users: one a transcript
    plan = build_plan([spec], renderer, repeats=1)
    level = [g for g in plan.groups if not g.warmup][1]  # C=3: every user once
    assert level.block == "rec/sessions/C=3" and sorted({s.user for s in level.steps}) == [0, 1, 2]
    expected = {
        u: [renderer.chat_ids(m, TOOLS) for m in recorded_requests(spec.sessions[u], spec.system)]
        for u in range(3)
    }
    got = {u: [plan.prompts[s.prompt] for s in level.steps if s.user == u] for u in range(3)}
    assert got == expected and [len(p) for p in got.values()] == [3, 2, 2]
    assert renderer.tokenizer.decode(got[0][1]).count("shipped") == 1  # tool results are history
    assert "Where is order 7?" in renderer.tokenizer.decode(
        got[0][0]
    ) and "Norway" in renderer.tokenizer.decode(got[1][0])
    assert "terse bot" in renderer.tokenizer.decode(got[2][0])  # the transcript's own system prompt stays
    assert "Incident" not in renderer.tokenizer.decode(got[0][0])  # recorded users are already distinct
    for prompts in got.values():
        assert all(common_prefix_len(a, b) > len(a) - 20 for a, b in zip(prompts, prompts[1:], strict=False))
    steps = {(s.user, s.turn): s.shared_prefix_tokens for s in level.steps}
    assert steps[(0, 2)] == common_prefix_len(got[0][0], got[0][1])  # the user's own previous request
    assert (
        steps[(0, 1)] == max(common_prefix_len(got[0][0], got[v][0]) for v in (1, 2)) > 0
    )  # the shared system + tools
    assert steps[(2, 1)] < steps[(0, 1)]  # its own system prompt: only the template's first tokens in common
    assert context_needed(spec, renderer) == max(len(p) for ps in got.values() for p in ps) + 4


def test_users_and_max_turns_pick_the_first_transcripts_and_requests(renderer, study):
    text = STUDY.replace("levels: [1, 3]", "levels: [1, 2]\n    users: 2\n    max_turns: 1")
    plan = build_plan(read_workload_file(study(text)), renderer, repeats=1)
    level = [g for g in plan.groups if not g.warmup][0]
    assert [(s.user, s.turn) for s in level.steps] == [(0, 1), (1, 1)]
    [spec] = read_workload_file(study(STUDY.replace("levels: [1, 3]", "levels: [1, 3]\n    users: 9")))
    assert spec.user_count() == 3  # capped by the transcripts there are


@pytest.mark.parametrize(
    "change,line,message",
    [
        (
            ("levels: [1, 3]", "levels: [1, 4]"),
            5,
            "workloads[0].levels[1]: concurrency 4 is above the number of sessions (3 transcripts)",
        ),
        (
            ("levels: [1, 3]", "levels: [1, 3]\n    users: 2"),
            5,
            "workloads[0].levels[1]: concurrency 3 is above the number of sessions (2 users)",
        ),
        (
            ("shape: sessions", "shape: sessions\n    conversation: conversation"),
            2,
            "exactly one of conversation (a built-in's name), turns, transcripts "
            "(conversation and transcripts given)",
        ),
        (("path: sessions.jsonl", "path: sessions.jsonl\n      first: 5"), 11, "asks for 5 transcripts"),
    ],
)
def test_file_mistakes_name_the_workload_files_line(study, change, line, message):
    path = study(STUDY.replace(*change))
    with pytest.raises(WorkloadFileError) as exc:
        read_workload_file(path)
    assert f"{path}:{line}: " in str(exc.value) and message in str(exc.value)


def test_a_bad_transcript_line_is_a_mistake_at_its_line(study):
    lines = [
        json.dumps(TRANSCRIPTS[0]),
        "{not json",
        json.dumps([{"role": "user", "content": "hi"}, {"role": "tool", "content": "x"}]),
    ]
    path = study(lines=lines)
    with pytest.raises(WorkloadFileError) as exc:
        read_workload_file(path)
    text = str(exc.value)
    assert text.count("\n") == 2  # the two lines only: no level counted against a short file
    assert f"{path.parent / 'sessions.jsonl'}:2: not a messages list (not JSON" in text
    assert (
        f"{path.parent / 'sessions.jsonl'}:3: not a messages list "
        "(messages[1].role: a tool message must follow" in text
    )


def test_the_transcripts_file_is_hashed_with_the_workload_file(study):
    path = study()
    assert set(hashes([path])) == {str(path), str(path.parent / "sessions.jsonl")}


def test_a_level_above_the_transcripts_from_the_command_line_is_one_line_and_exit_2(study, tmp_path, capsys):
    code = main(
        [
            "--backend",
            "hf",
            "--workload-file",
            str(study()),
            "--out",
            str(tmp_path / "run"),
            "--load",
            "levels=1:4",
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "--load: rec: concurrency 4 is above the number of sessions (3 transcripts)" in err
    assert not (tmp_path / "run" / "records.jsonl").exists()


@pytest.mark.parametrize(
    ("sessions", "said"),
    [
        (
            [[{"role": "user", "content": "x" * 1_500_000}]],
            "1,500,000 characters: a message may hold at most 1,000,000",
        ),
        (
            [
                [
                    m
                    for _ in range(3)
                    for m in (
                        {"role": "user", "content": "q" * 900_000},
                        {"role": "assistant", "content": "a" * 900_000},
                    )
                ]
            ],
            "5,400,000 characters in all: a session may hold at most 4,000,000",
        ),
    ],
)
def test_text_is_bounded_before_it_is_tokenized(study, tmp_path, capsys, sessions, said):
    """Issue 26, item 13: a transcript file under the 64 MiB cap could need ~10 GB to tokenize (63 MB of one
    message); a message and a session are bounded, one line names the limit, exit 2 before anything runs."""
    path = study(lines=[json.dumps(s) for s in sessions])
    code = main(["--backend", "hf", "--workload-file", str(path), "--out", str(tmp_path / "run")])
    err = capsys.readouterr().err
    assert code == 2 and said in err, err
    assert not (tmp_path / "run").exists()
