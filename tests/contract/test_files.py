"""contract.files.backend_env_blocks: the one reader of a run's env/<backend>.json, used by the harness's
merge_env (strict) and the report's read_env (lenient), so the two agree on what a run's env folder holds."""

from __future__ import annotations

import json

import pytest

from llm_call_anatomy.contract.files import backend_env_blocks
from llm_call_anatomy.harness.env import merge_env
from llm_call_anatomy.reports.runs import read_env


def _blocks(run, **blocks):
    (run / "env").mkdir(parents=True)
    for name, text in blocks.items():
        (run / "env" / f"{name}.json").write_text(text)


def test_blocks_are_read_by_backend_in_name_order(tmp_path):
    _blocks(tmp_path, vllm=json.dumps({"engine": "v"}), hf=json.dumps({"engine": "h"}))
    for strict in (True, False):
        blocks = backend_env_blocks(tmp_path, strict=strict)
        assert list(blocks) == ["hf", "vllm"]
        assert blocks["vllm"] == {"engine": "v"}


def test_a_broken_block_raises_when_strict_and_is_left_out_otherwise(tmp_path):
    _blocks(tmp_path, hf=json.dumps({"engine": "h"}), broken="{not json", listed="[1]")
    with pytest.raises(json.JSONDecodeError):
        backend_env_blocks(tmp_path, strict=True)
    assert backend_env_blocks(tmp_path, strict=False) == {"hf": {"engine": "h"}}


def test_no_env_folder_is_no_blocks(tmp_path):
    assert backend_env_blocks(tmp_path, strict=True) == backend_env_blocks(tmp_path, strict=False) == {}


def test_the_harness_merge_and_the_report_read_agree(tmp_path):
    """What merge_env writes into env.json, read_env reads back; and a run whose env.json was written before
    a backend's block (cut short) reads that block from the folder as merge_env would have merged it."""
    _blocks(tmp_path, hf=json.dumps({"engine": {"name": "eager"}}))
    merged = merge_env(tmp_path, {"run_id": "r1"})
    assert merged["backends"] == {"hf": {"engine": {"name": "eager"}}}
    assert read_env(tmp_path) == merged
    (tmp_path / "env" / "vllm.json").write_text(json.dumps({"engine": {"name": "vllm"}}))
    assert read_env(tmp_path)["backends"] == merge_env(tmp_path, {"run_id": "r1"})["backends"]


def test_an_atomic_write_has_the_mode_a_plain_open_gives(tmp_path):
    """issue 43: report.html, env.json, plan.json, run.json get the records' mode (the umask's), not 0600."""
    import stat

    from llm_call_anatomy.contract.files import atomic_write_text

    atomic_write_text(tmp_path / "env.json", "{}")
    (tmp_path / "records.jsonl").write_text("")
    mode = stat.S_IMODE((tmp_path / "env.json").stat().st_mode)
    assert mode == stat.S_IMODE((tmp_path / "records.jsonl").stat().st_mode)
