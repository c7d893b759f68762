"""Every kind of mistake in a workload file: its message names the file, the line and the field; exit 2."""

from __future__ import annotations

import pytest

from llm_call_anatomy.harness.cli import main
from llm_call_anatomy.workloads.reader import WorkloadFileError, read_workload_file
from tests.conftest import compare

GOOD_CONVERSATION = """
workloads:
  - name: chat
    kind: conversation
    system: Be brief.
    turns:
      - user: hi
        assistant: hello
"""


def line_of(path, needle: str) -> int:
    """1-based number of the first line of the file containing ``needle``."""
    return next(i for i, line in enumerate(path.read_text().splitlines(), start=1) if needle in line)


def mistakes(path) -> list[str]:
    with pytest.raises(WorkloadFileError) as info:
        read_workload_file(path)
    head, *lines = str(info.value).splitlines()
    assert head.startswith(f"{path}: ") and "nothing was run" in head
    return lines


# (file text, needle on the line the mistake must point at, field path, message part)
CASES = {
    "unknown kind": (
        """
        workloads:
          - name: a
            kind: chat
            turns: [{user: hi, assistant: yo}]
        """,
        "kind: chat",
        "workloads[0].kind",
        "unknown kind 'chat' (choose from: conversation, sweep, json, template, load, trace)",
    ),
    "missing kind": (
        """
        workloads:
          - name: a
            lengths: [8]
        """,
        "- name: a",
        "workloads[0].kind",
        "Field required",
    ),
    "missing field": (
        """
        workloads:
          - name: a
            kind: conversation
            turns:
              - user: hi
                assistant: yo
              - user: and?
        """,
        "- user: and?",
        "workloads[0].turns[1].assistant",
        "Field required",
    ),
    "unknown field": (
        """
        workloads:
          - name: s
            kind: sweep
            lengths: [8]
            filler: some text
            decode_tokns: 8
        """,
        "decode_tokns",
        "workloads[0].decode_tokns",
        "unknown field (did you mean 'decode_tokens'?)",  # a typo of the kind's own field
    ),
    "wrong type": (
        """
        workloads:
          - name: s
            kind: sweep
            lengths: [8, many]
            filler: some text
        """,
        "lengths:",
        "workloads[0].lengths[1]",
        "valid integer",
    ),
    "invalid JSON Schema": (
        """
        workloads:
          - name: j
            kind: json
            temperatures: [0]
            modes: [{name: m, prompt: "Extract: {input}"}]
            schema:
              type: object
              properties:
                port: {type: integr}
            cases: [{input: "x"}]
        """,
        "port: {type: integr}",
        "workloads[0].schema.properties.port.type",
        "not a valid JSON Schema",
    ),
    "expected values outside the schema": (
        """
        workloads:
          - name: j
            kind: json
            temperatures: [0]
            modes: [{name: m, prompt: "Extract: {input}"}]
            schema: {type: object, properties: {port: {type: integer}}}
            cases:
              - input: "x"
                expected: {port: "443"}
        """,
        "expected: {port:",
        "workloads[0].cases[0].expected.port",
        "do not validate against the schema",
    ),
    "prompt without {input}": (
        """
        workloads:
          - name: j
            kind: json
            temperatures: [0]
            modes: [{name: m, prompt: "Extract it"}]
            schema: {type: object}
            cases: [{input: "x"}]
        """,
        "modes:",
        "workloads[0].modes[0].prompt",
        "must contain {input}",
    ),
    "both turns and transcripts": (
        """
        workloads:
          - name: a
            kind: conversation
            turns: [{user: hi, assistant: yo}]
            messages: [{role: user, content: hi}]
        """,
        "- name: a",
        "workloads[0]",
        "exactly one of turns, messages, transcripts (turns and messages given)",
    ),
    "missing transcript file": (
        """
        workloads:
          - name: a
            kind: conversation
            transcripts: {path: nowhere.jsonl}
        """,
        "transcripts: {path",
        "workloads[0].transcripts.path",
        "cannot use",
    ),
    "missing filler file": (
        """
        workloads:
          - name: s
            kind: sweep
            lengths: [8]
            filler_file: nowhere.txt
        """,
        "filler_file:",
        "workloads[0].filler_file",
        "cannot use",
    ),
    "bad tool definition": (
        """
        workloads:
          - name: a
            kind: conversation
            tools:
              - type: function
                function: {description: no name}
            turns: [{user: hi, assistant: yo}]
        """,
        "function: {description",
        "workloads[0].tools[0].function.name",
        "not an OpenAI tool definition",
    ),
    "repeated name": (
        """
        workloads:
          - {name: s, kind: sweep, lengths: [8], filler: x}
          - {name: s, kind: sweep, lengths: [9], filler: x}
        """,
        "lengths: [9]",
        "workloads[1].name",
        "used twice",
    ),
    "duplicate key": (
        """
        workloads:
          - name: s
            kind: sweep
            lengths: [8]
            filler: x
            lengths: [9]
        """,
        "lengths: [9]",
        "workloads[0].lengths",
        "given twice",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_mistake_points_at_file_line_and_field(case, write):
    text, needle, field, message = CASES[case]
    path = write("study.yaml", text)
    [line] = mistakes(path)
    assert line.startswith(f"{path}:{line_of(path, needle)}: {field}: "), line
    assert message in line


def test_an_unknown_field_far_from_every_field_gets_no_guess(write):
    path = write(
        "study.yaml", "workloads:\n  - {name: s, kind: sweep, lengths: [8], filler: t, colour: red}\n"
    )
    [line] = mistakes(path)
    assert line.endswith("workloads[0].colour: unknown field"), line


@pytest.mark.parametrize("case", ["unknown kind", "missing field", "invalid JSON Schema"])
def test_cli_reports_the_mistake_and_exits_2_before_anything_runs(case, write, tmp_path, capsys):
    text, needle, field, message = CASES[case]
    path = write("study.yaml", text)
    code = main(["--backend", "hf", "--workload-file", str(path), "--out", str(tmp_path / "run")])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith(f"compare.py: error: {path}: 1 mistake, nothing was run\n")
    assert f"{path}:{line_of(path, needle)}: {field}: " in err and message in err
    assert not (tmp_path / "run").exists()


def test_every_mistake_is_reported_in_line_order(write):
    path = write(
        "study.yaml",
        """
        workloads:
          - name: a
            kind: chat
          - name: b
            kind: conversation
            turns:
              - user: hi
          - name: s
            kind: sweep
            lengths: [0]
            filler: x
        """,
    )
    lines = mistakes(path)
    assert [int(x.split(":")[1]) for x in lines] == [3, 7, 10]
    assert "unknown kind" in lines[0] and "turns[0].assistant" in lines[1] and "lengths[0]" in lines[2]


def test_transcript_lines_that_are_not_messages_lists(write):
    write(
        "t.jsonl",
        """
        [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]
        {"role": "user", "content": "not in a list"}
        [{"role": "robot", "content": "beep"}]

        [{"role": "assistant", "content": "I speak first"}, {"role": "user", "content": "hi"}]
        [{"role": "user", "content": "hi"}, {"role": "tool", "content": "{}"}]
        [{"role": "user", "content": [{"type": "text", "text": "parts"}]}]
        not json
        """,
    )
    path = write(
        "study.yaml",
        """
        workloads:
          - name: chat
            kind: conversation
            transcripts: {path: t.jsonl}
        """,
    )
    lines = mistakes(path)
    jsonl = path.parent / "t.jsonl"
    assert [x.split(": ", 1)[0] for x in lines] == [f"{jsonl}:{n}" for n in (2, 3, 5, 6, 7, 8)]
    assert all(": not a messages list (" in x for x in lines)
    assert "expected a list of messages" in lines[0]
    assert "messages[0].role: Input should be 'system', 'user', 'assistant' or 'tool'" in lines[1]
    assert "messages[0].role: must start with a user message" in lines[2]
    assert "messages[1].role: a tool message must follow an assistant message with tool_calls" in lines[3]
    assert "messages[0].content" in lines[4]
    assert "not JSON" in lines[5]


def test_transcripts_first_larger_than_the_file(write):
    write("t.jsonl", '[{"role": "user", "content": "hi"}]\n')
    path = write(
        "study.yaml",
        """
        workloads:
          - name: chat
            kind: conversation
            transcripts:
              path: t.jsonl
              first: 3
        """,
    )
    [line] = mistakes(path)
    assert line.startswith(f"{path}:6: workloads[0].transcripts.first: asks for 3 transcripts")


def test_lines_after_the_first_k_are_not_read(write):
    write("t.jsonl", '[{"role": "user", "content": "hi"}]\nnot json\n')
    path = write(
        "study.yaml",
        """
        workloads:
          - {name: chat, kind: conversation, transcripts: {path: t.jsonl, first: 1}}
        """,
    )
    assert [s.name for s in read_workload_file(path)] == ["chat/1"]


def test_not_yaml_empty_and_unreadable(write, tmp_path):
    bad = write("bad.yaml", "workloads:\n  - name: [unclosed\n")
    with pytest.raises(WorkloadFileError, match=rf"^{bad}:\d+: not valid YAML"):
        read_workload_file(bad)
    with pytest.raises(WorkloadFileError, match="the file is empty"):
        read_workload_file(write("empty.yaml", "# nothing\n"))
    with pytest.raises(WorkloadFileError, match="cannot read"):
        read_workload_file(tmp_path / "missing.yaml")


def test_names_across_files_must_differ(write):
    a = write("a.yaml", GOOD_CONVERSATION)
    b = write("b.yaml", GOOD_CONVERSATION)
    proc = compare(
        "--lint-only", "--workload-file", str(a), "--workload-file", str(b), check=False, timeout=120
    )
    assert proc.returncode == 2
    assert "declared twice: chat" in proc.stderr
