"""The trace kind's plan: a block of token ids per hash id (the same id the same block, prefixes shared
exactly as the trace shares them), forced output lengths, the window, the drop rule, and the arrivals of each
time scale."""

from __future__ import annotations

import itertools

import pytest

from llm_call_anatomy.contract.chat import common_prefix_len
from llm_call_anatomy.workloads.catalog import build_plan
from llm_call_anatomy.workloads.reader import read_workload_file
from llm_call_anatomy.workloads.trace.prompts import TraceBlocks, reused_prefix_blocks

BLOCK = 16
# [timestamp ms, input, output, hash ids]: rows 1 and 2 share blocks 1-2, row 3 block 1, row 4 blocks 1-2
# and a partial last block; row 5 is too long for max_input_tokens; row 6 has no hash ids
ROWS = [
    [0, 40, 3, [1, 2, 3]],
    [1000, 48, 4, [1, 2, 4]],
    [2500, 20, 5, [1, 5]],
    [4000, 23, 2, [1, 2, 7]],
    [5000, 200, 2, [8] * 13],
    [6000, 30, 6, []],
    [9000, 16, 1, [9]],
]


def _spec(tmp_path, extra: str = ""):
    path = tmp_path / "t.yaml"
    path.write_text(
        "workloads:\n  - name: t\n    kind: trace\n"
        f"    rows: {ROWS}\n    block_size: {BLOCK}\n    max_input_tokens: 100\n    warmup_requests: 0\n"
        + extra
    )
    return read_workload_file(path)


def test_the_same_hash_id_is_the_same_block_and_different_ids_part_at_once(renderer):
    blocks = TraceBlocks(renderer, 512)
    assert blocks.block(7) == TraceBlocks(renderer, 512).block(7)  # the same on every plan
    assert len(blocks.block(7)) == 512
    special = set(renderer.tokenizer.all_special_ids)
    for a, b in itertools.combinations([0, 1, 2, 2111, 2112, 182789], 2):
        assert blocks.block(a)[:2] != blocks.block(b)[:2]
        assert not special & set(blocks.block(a))


def test_prompts_share_exactly_the_traces_prefix_and_ask_for_its_output(tmp_path, renderer):
    plan = build_plan(_spec(tmp_path), renderer, 1)
    (group,) = [g for g in plan.groups if not g.warmup]
    steps = group.steps
    sent = [r for r in ROWS if r[1] <= 100]  # the 200-token request is dropped
    assert len(steps) == len(sent)
    prompts = [plan.prompts[s.prompt] for s in steps]
    assert [len(p) for p in prompts] == [r[1] for r in sent]
    assert [s.max_new_tokens for s in steps] == [r[2] for r in sent]
    assert all(s.ignore_eos and s.temperature == 0.0 for s in steps)
    for (ra, pa), (rb, pb) in itertools.combinations(zip(sent, prompts, strict=True), 2):
        run = sum(1 for _ in itertools.takewhile(lambda x: x[0] == x[1], zip(ra[3], rb[3], strict=False)))
        assert common_prefix_len(pa, pb) == min(run * BLOCK, ra[1], rb[1]), (ra, rb)
    reused = reused_prefix_blocks([tuple(r[3]) for r in sent])
    assert reused == [0, 2, 1, 2, 0, 0]
    assert [s.shared_prefix_tokens for s in steps] == [
        min(n * BLOCK, r[1]) for n, r in zip(reused, sent, strict=True)
    ]
    facts = group.load["facts"]["trace"]
    assert (facts["in_window"], facts["sent"], facts["dropped"]) == (7, 6, 1)
    assert facts["seen_before_share"] == pytest.approx(5 / sum(len(r[3]) for r in sent))


def test_each_time_scale_is_a_level_at_the_traces_timestamps_over_k(tmp_path, renderer):
    (spec,) = _spec(
        tmp_path, "    time_scales: [1, 4]\n    start_s: 1\n    duration_s: 5\n    every_nth: 1\n"
    )
    plan = build_plan([spec], renderer, 1)
    levels = [g for g in plan.groups if not g.warmup]
    assert [g.steps[0].case for g in levels] == ["x1", "x4"]
    # the window [1 s, 6 s): the rows at 1.0, 2.5, 4.0, 5.0 s; 5.0 s is dropped (too long)
    assert levels[0].load["arrivals_s"] == [0.0, 1.5, 3.0]
    assert levels[1].load["arrivals_s"] == [0.0, 0.375, 0.75]
    assert levels[1].load["rate_rps"] == pytest.approx(3 / (5 / 4))
    assert levels[1].load["concurrency"] is None


def test_every_nth_samples_the_window(tmp_path, renderer):
    (spec,) = _spec(tmp_path, "    every_nth: 2\n")
    plan = build_plan([spec], renderer, 1)
    (group,) = [g for g in plan.groups if not g.warmup]
    assert group.load["facts"]["trace"]["in_window"] == 4  # rows 0, 2, 4, 6 of seven
    assert group.load["arrivals_s"] == [0.0, 2.5, 9.0]  # row 4 (200 tokens) dropped


def test_inline_rows_are_checked(tmp_path):
    from llm_call_anatomy.workloads.reader import WorkloadFileError

    path = tmp_path / "t.yaml"
    path.write_text("workloads:\n  - name: t\n    kind: trace\n    rows: [[0, 0, 3, []]]\n")
    with pytest.raises(WorkloadFileError, match="rows"):
        read_workload_file(path)
