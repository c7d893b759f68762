"""A workload file whose aliases expand it exponentially is refused before anything is built (issue 44, item
13): eight levels of ten-fold aliases in a few hundred bytes are 10^8 nodes; the reader counts the expanded
size on the composed node graph (each distinct node once) and stops at ``MAX_EXPANDED_NODES``, in one line.
Aliases that do not blow up (``examples/study.yaml`` shares a system prompt and tools) still read."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from llm_call_anatomy.workloads.reader import (
    MAX_EXPANDED_NODES,
    WorkloadFileError,
    read_workload_file,
    read_yaml,
)

ROOT = Path(__file__).resolve().parents[2]


def bomb(levels: int) -> str:
    lines = ['a0: &a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    for i in range(1, levels + 1):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    lines.append(f"workloads: *a{levels}")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("levels", [6, 8])
def test_an_alias_chain_is_refused_at_once(tmp_path, levels):
    path = tmp_path / "bomb.yaml"
    path.write_text(bomb(levels))
    assert len(path.read_bytes()) < 700
    started = time.perf_counter()
    with pytest.raises(WorkloadFileError) as err:
        read_workload_file(path)
    assert time.perf_counter() - started < 2.0
    assert f"expand it past {MAX_EXPANDED_NODES:,} nodes" in str(err.value) and "\n" not in str(err.value)


def test_an_alias_that_holds_itself_is_refused(tmp_path):
    path = tmp_path / "loop.yaml"
    path.write_text("a: &a [1, *a]\n")
    with pytest.raises(WorkloadFileError, match="holds itself"):
        read_yaml(path)


def test_shared_values_still_read():
    specs = read_workload_file(ROOT / "examples" / "study.yaml")
    assert specs and read_yaml(ROOT / "examples" / "study.yaml")[0]["workloads"]


def test_compare_exits_2_on_it(tmp_path, capsys):
    from llm_call_anatomy.harness.cli import main

    path = tmp_path / "bomb.yaml"
    path.write_text(bomb(8))
    assert main(["--lint-only", "--workload-file", str(path)]) == 2
    assert "expand it past" in capsys.readouterr().err
