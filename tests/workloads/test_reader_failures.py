"""Workload files on failure paths: duplicate values, endless files, JSON errors in transcripts (#15.11,
#15.13)."""

from __future__ import annotations

import time

import pytest

from llm_call_anatomy.workloads.reader import WorkloadFileError, read_workload_file
from tests.workloads.test_reader import line_of, mistakes

JSON_SCHEMA = "schema: {type: object, properties: {a: {type: integer}}}"
DUPLICATES = {
    "a length twice": (
        """
        workloads:
          - name: s
            kind: sweep
            lengths: [64, 128, 64]
            filler: word
        """,
        "lengths:",
        "workloads[0].lengths[2]",
        "64 is listed twice",
    ),
    "a temperature twice": (
        f"""
        workloads:
          - name: j
            kind: json
            temperatures: [0.0, 0.7, 0.70]
            modes: [{{name: free, prompt: "{{input}}"}}]
            {JSON_SCHEMA}
            cases: [{{input: x}}]
        """,
        "temperatures:",
        "workloads[0].temperatures[2]",
        "0.7 is listed twice",
    ),
    "two modes with one name": (
        f"""
        workloads:
          - name: j
            kind: json
            temperatures: [0.0]
            modes:
              - {{name: free, prompt: "a {{input}}"}}
              - {{name: free, prompt: "b {{input}}"}}
            {JSON_SCHEMA}
            cases: [{{input: x}}]
        """,
        'prompt: "b',
        "workloads[0].modes[1].name",
        "'free' is used twice",
    ),
    "two formats with one name": (
        """
        workloads:
          - name: t
            kind: template
            system: s
            questions: [{question: q, answer: a}]
            formats:
              - name: chat_template
              - {name: chat_template, text: "{question}"}
        """,
        "text:",
        "workloads[0].formats[1].name",
        "'chat_template' is used twice",
    ),
}


@pytest.mark.parametrize("case", DUPLICATES)
def test_duplicate_values_are_mistakes(case, write):  # 15.11
    text, needle, field, message = DUPLICATES[case]
    path = write("study.yaml", text)
    [line] = mistakes(path)
    assert line == f"{path}:{line_of(path, needle)}: {field}: {message}" or (
        line.startswith(f"{path}:") and f": {field}: {message}" in line
    ), line


def test_a_filler_file_that_never_ends_is_refused(write):  # 15.13
    path = write(
        "study.yaml",
        """
        workloads:
          - {name: s, kind: sweep, lengths: [8], filler_file: /dev/zero}
        """,
    )
    started = time.monotonic()
    [line] = mistakes(path)
    assert "larger than" in line and "MiB" in line
    assert time.monotonic() - started < 10


def test_a_transcript_file_that_never_ends_is_refused(write):  # 15.13
    path = write(
        "study.yaml",
        """
        workloads:
          - {name: c, kind: conversation, transcripts: {path: /dev/zero}}
        """,
    )
    started = time.monotonic()
    with pytest.raises(WorkloadFileError, match="larger than"):
        read_workload_file(path)
    assert time.monotonic() - started < 10


def test_json_errors_in_transcripts_read_well(write):  # 15.13: "at at column"
    write("t.jsonl", '[{"role": "user", "content": "unterminated}]\n')
    path = write(
        "study.yaml",
        """
        workloads:
          - {name: c, kind: conversation, transcripts: {path: t.jsonl}}
        """,
    )
    [line] = mistakes(path)
    assert "at at" not in line and "column" in line


def test_a_workload_file_that_never_ends_is_refused():  # 15.13
    from pathlib import Path

    with pytest.raises(WorkloadFileError, match="larger than"):
        read_workload_file(Path("/dev/zero"))
