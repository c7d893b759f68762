"""Records: flushed per line, a torn last line ignored, the last record of a key wins."""

from __future__ import annotations

import json

from harness.records import Record, RecordWriter, done_keys, read_records


def test_writer_flushes_and_reader_dedupes(tmp_path):
    with RecordWriter(tmp_path) as w:
        w.write(Record(run_id="r", backend="hf", workload="sweep", mode="greedy", case="N=64", rep=0, ttft_ms=1.0))
        # visible before close: flushed line by line
        assert len((tmp_path / "records.jsonl").read_text().splitlines()) == 1
        w.write(Record(run_id="r", backend="hf", workload="sweep", mode="greedy", case="N=64", rep=0, ttft_ms=2.0))
        w.write(Record(run_id="r", backend="vllm", workload="sweep", skipped="not installed"))
    with (tmp_path / "records.jsonl").open("a") as f:
        f.write('{"run_id": "r", "backend": "hf", "workl')  # a crash mid-line
    rows = read_records(tmp_path)
    assert len(rows) == 2
    assert [r["ttft_ms"] for r in rows if r["backend"] == "hf"] == [2.0]
    assert done_keys(tmp_path, "hf") == {("sweep", "greedy", "N=64", 0, None, None)}
    assert done_keys(tmp_path, "vllm") == set()  # skipped is not done


def test_record_has_the_contract_fields():
    row = json.loads(json.dumps(Record(run_id="r", backend="hf").__dict__))
    for name in ("run_id", "backend", "backend_version", "model", "workload", "mode", "case", "rep", "turn",
                 "temperature", "prompt_tokens", "shared_prefix_tokens", "cached_tokens", "computed_tokens",
                 "ttft_ms", "decode_ms_per_token", "output_tokens", "first_token_id", "output_text", "valid_json",
                 "clean", "timing_source", "error", "skipped"):
        assert name in row
