"""Records: flushed per line, a torn last line ignored, the last record of a key wins, engine starts apart."""

from __future__ import annotations

import json

from llm_call_anatomy.contract.plan import Step
from llm_call_anatomy.contract.records import KEY_FIELDS, Record
from llm_call_anatomy.harness.records import RecordWriter, done_keys, read_records
from tests.conftest import RECORD_CONTRACT


def test_writer_flushes_and_reader_dedupes(tmp_path):
    with RecordWriter(tmp_path) as w:
        w.write(
            Record(run_id="r", backend="hf", workload="sweep", mode="greedy", case="N=64", rep=0, ttft_ms=1.0)
        )
        # visible before close: flushed line by line
        assert len((tmp_path / "records.jsonl").read_text().splitlines()) == 1
        w.write(
            Record(run_id="r", backend="hf", workload="sweep", mode="greedy", case="N=64", rep=0, ttft_ms=2.0)
        )
        w.write(Record(run_id="r", backend="vllm", workload="sweep", skipped="not installed"))
    with (tmp_path / "records.jsonl").open("a") as f:
        f.write('{"run_id": "r", "backend": "hf", "workl')  # a crash mid-line
    rows = read_records(tmp_path)
    assert len(rows) == 2
    assert [r["ttft_ms"] for r in rows if r["backend"] == "hf"] == [2.0]
    assert done_keys(tmp_path, "hf") == {(0, "sweep", "greedy", "N=64", 0, None, None)}
    assert done_keys(tmp_path, "vllm") == set()  # skipped is not done


def test_record_has_the_contract_fields():
    row = json.loads(json.dumps(Record(run_id="r", backend="hf").__dict__))
    for name in RECORD_CONTRACT:
        assert name in row


def test_engine_starts_are_separate_measurements_and_old_runs_read_as_start_0(tmp_path):
    case = {"run_id": "r", "backend": "vllm", "workload": "sweep", "mode": "greedy", "case": "N=64", "rep": 0}
    with RecordWriter(tmp_path) as w:
        w.write(Record(**case, ttft_ms=1.0))
        w.write(Record(**case, engine_start=1, ttft_ms=2.0))
    with (tmp_path / "records.jsonl").open("a") as f:
        f.write(json.dumps({**case, "ttft_ms": 3.0}) + "\n")  # a record of a run made before engine_start
    rows = read_records(tmp_path)
    assert sorted((r.get("engine_start") or 0, r["ttft_ms"]) for r in rows) == [(0, 3.0), (1, 2.0)]
    assert "engine_start" in KEY_FIELDS and Record(**case, engine_start=1).key()[1] == 1
    step = Step(
        workload="sweep", kind="sweep", mode="greedy", case="N=64", prompt="p", max_new_tokens=1, rep=0
    )
    assert done_keys(tmp_path, "vllm") == {step.key(), Step(**{**step.__dict__, "engine_start": 1}).key()}


def test_record_carries_the_engines_own_figures_beside_the_common_ones():
    row = Record(run_id="r", backend="vllm").__dict__
    assert {"engine_start", "engine_ttft_ms", "engine_decode_ms_per_token"} <= set(row)
