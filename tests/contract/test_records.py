"""RecordKey: the one definition of what identifies a measurement, for a record, a row read back and a
step."""

from __future__ import annotations

import json
from dataclasses import asdict

from llm_call_anatomy.contract.plan import Step
from llm_call_anatomy.contract.records import KEY_FIELDS, Record, RecordKey


def test_a_record_and_its_row_read_back_have_the_same_key():
    record = Record(
        run_id="r",
        backend="vllm",
        engine_start=1,
        workload="conversation",
        mode="prefix",
        case="c",
        rep=2,
        turn=3,
        temperature=0.0,
    )
    row = json.loads(json.dumps(asdict(record)))
    assert record.key() == RecordKey.of(record) == RecordKey.of_row(row)
    assert record.key() == tuple(getattr(record, k) for k in KEY_FIELDS)  # a plain tuple compares equal too
    assert record.key().backend == "vllm" and record.key().engine_start == 1


def test_a_row_from_before_engine_starts_reads_as_start_zero():
    row = {"backend": "hf", "workload": "sweep", "mode": "full", "case": "N=64", "rep": 0, "turn": None}
    assert RecordKey.of_row(row).engine_start == 0
    assert RecordKey.of_row({**row, "engine_start": None}) == RecordKey.of_row(row)
    assert RecordKey.of_row({**row, "engine_start": 2}).engine_start == 2


def test_a_step_key_is_its_record_key_without_the_backend():
    step = Step(
        workload="json",
        kind="json",
        mode="grammar",
        case="invoice",
        prompt="p",
        max_new_tokens=8,
        rep=1,
        temperature=0.7,
        engine_start=1,
    )
    record = Record(run_id="r", backend="sglang", **{k: getattr(step, k) for k in KEY_FIELDS[1:]})
    assert step.key() == record.key().without_backend() == RecordKey.of(step, backend="sglang")[1:]
    assert RecordKey.of(step, backend="sglang") == record.key()


def test_a_load_levels_key_keeps_the_level_and_drops_the_request():
    step = Step(
        workload="load",
        kind="load",
        mode="sessions",
        case="c=4",
        prompt="p",
        max_new_tokens=8,
        rep=3,
        turn=1,
        temperature=0.0,
        engine_start=1,
        user=2,
    )
    level = RecordKey.of(step).of_level()
    assert level.without_backend() == (1, "load", "sessions", "c=4", None, None, None)
    level_record = Record(
        run_id="r", backend="hf", engine_start=1, workload="load", kind="load", mode="sessions", case="c=4"
    )
    assert level_record.key().without_backend() == level.without_backend()
