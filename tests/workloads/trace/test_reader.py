"""The trace kind's reader: Mooncake JSONL (gzip'd or not), a lengths JSONL, CSV with Azure's columns, and a
bad row as a mistake with the trace's file and line (the workload file's error path: exit 2)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from llm_call_anatomy.workloads.reader import WorkloadFileError, read_workload_file
from llm_call_anatomy.workloads.trace.reader import read

SHARED = Path("/work/shared/traces")


def _workload(folder: Path, trace: str, extra: str = "") -> Path:
    path = folder / "trace.yaml"
    path.write_text(f"workloads:\n  - name: t\n    kind: trace\n    trace: {{path: {trace}}}\n{extra}")
    return path


def test_mooncake_jsonl_gzipped_reads_every_row_in_timestamp_order(tmp_path):
    lines = [
        {"timestamp": 2000, "input_length": 700, "output_length": 5, "hash_ids": [1, 2]},
        {"timestamp": 0, "input_length": 600, "output_length": 9, "hash_ids": [1, 3]},
    ]
    path = tmp_path / "m.jsonl.gz"
    with gzip.open(path, "wt") as f:
        f.write("\n".join(json.dumps(x) for x in lines) + "\n")
    rows, bad = read(path)
    assert bad == []
    assert [(r.timestamp_ms, r.input_length, r.output_length, r.hash_ids, r.line) for r in rows] == [
        (0.0, 600, 9, (1, 3), 2),
        (2000.0, 700, 5, (1, 2), 1),
    ]


def test_a_plain_jsonl_and_azures_csv_read_as_lengths_without_blocks(tmp_path):
    (tmp_path / "l.jsonl").write_text('{"timestamp": 5, "input_tokens": 10, "output_tokens": 3}\n')
    rows, bad = read(tmp_path / "l.jsonl")
    assert not bad and rows[0].input_length == 10 and rows[0].hash_ids == ()
    (tmp_path / "azure.csv").write_text(
        "TIMESTAMP,ContextTokens,GeneratedTokens\n"
        "2023-11-16 18:15:46.500000,374,44\n"
        "2023-11-16 18:15:46.000000,396,109\n"
    )
    rows, bad = read(tmp_path / "azure.csv")
    assert not bad
    assert [(r.timestamp_ms, r.input_length, r.output_length, r.line) for r in rows] == [
        (0.0, 396, 109, 3),
        (500.0, 374, 44, 2),
    ]


def test_a_bad_row_is_a_mistake_with_the_traces_file_and_line(tmp_path):
    (tmp_path / "bad.jsonl").write_text(
        '{"timestamp": 0, "input_length": 5, "output_length": 1}\n'
        '{"timestamp": 1, "input_length": -3, "output_length": 1}\n'
        "not json\n"
    )
    with pytest.raises(WorkloadFileError) as exc:
        read_workload_file(_workload(tmp_path, "bad.jsonl"))
    text = str(exc.value)
    assert "bad.jsonl:2" in text and "input_length" in text and "bad.jsonl:3" in text


def test_a_missing_trace_file_is_a_mistake_at_its_field(tmp_path):
    with pytest.raises(WorkloadFileError, match=r"trace\.yaml:4.*cannot use"):
        read_workload_file(_workload(tmp_path, "nowhere.jsonl"))


@pytest.mark.skipif(not SHARED.exists(), reason="the shared traces are not on this machine")
def test_the_shared_conversation_trace_reads_as_its_readme_says():
    rows, bad = read(SHARED / "mooncake-conversation.jsonl.gz")
    assert not bad and len(rows) == 12031
    assert round(sum(r.output_length for r in rows) / len(rows)) == 343
