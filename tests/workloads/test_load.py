"""The load kind: its file format (mistakes with file and line), its plan, and the CLI's bad-input checks."""

from __future__ import annotations

import pytest

from llm_call_anatomy.contract.chat import common_prefix_len
from llm_call_anatomy.harness.cli import main
from llm_call_anatomy.workloads import kinds
from llm_call_anatomy.workloads.catalog import build_plan, read_builtin
from llm_call_anatomy.workloads.reader import WorkloadFileError, read_workload_file

FIXED = """
workloads:
  - name: lf
    kind: load
    shape: fixed
    prompt_tokens: 64
    shared_prefix_tokens: [0, 48]
    output_tokens: 8
    requests: 6
    levels: [1, 3]
    rates: [5]
"""
SESSIONS = """
workloads:
  - name: ls
    kind: load
    shape: sessions
    conversation: conversation
    users: 3
    max_turns: 3
    levels: [1, 2]
"""


def test_load_is_a_registered_kind_with_its_spec_in_the_file_model():
    assert (
        "load" in kinds.names()
        and kinds.kind("load").runs_as == "concurrent"
        and not kinds.kind("load").repeated
    )
    assert "LoadSpec" in kinds.file_model().model_json_schema()["$defs"]


@pytest.mark.parametrize(
    "field,value,line,message",
    [
        ("levels", "[1, 0]", 8, "greater than or equal to 1"),
        ("rates", "[2, -1]", 9, "greater than 0"),
        ("levels", "[1, 8]", 8, "concurrency 8 is above the number of sessions (3 users)"),
    ],
)
def test_bad_levels_and_rates_are_mistakes_with_their_line(write, field, value, line, message):
    text = SESSIONS.replace("levels: [1, 2]", "levels: [1, 2]\n    rates: [1]").replace(
        f"{field}: [1, 2]" if field == "levels" else "rates: [1]", f"{field}: {value}"
    )
    path = write("study.yaml", text)
    with pytest.raises(WorkloadFileError) as exc:
        read_workload_file(path)
    assert f"{path}:{line}: workloads[0].{field}[1]: " in str(exc.value) and message in str(exc.value)


def test_a_shared_prefix_as_long_as_the_prompt_is_a_mistake(write):
    path = write("study.yaml", FIXED.replace("[0, 48]", "[0, 64]"))
    with pytest.raises(
        WorkloadFileError,
        match=r"study.yaml:6: workloads\[0\].shared_prefix_tokens\[1\]: a shared prefix of 64 tokens",
    ):
        read_workload_file(path)


def test_fixed_shape_prompts_are_exactly_p_tokens_sharing_exactly_s(renderer, write):
    plan = build_plan(read_workload_file(write("study.yaml", FIXED)), renderer, repeats=1)
    timed = [g for g in plan.groups if not g.warmup]
    assert [g.block for g in timed] == [f"lf/S={s}/{c}" for s in (0, 48) for c in ("C=1", "C=3", "rate=5")]
    assert timed[1].load["concurrency"] == 3 and timed[2].load["rate_rps"] == 5
    levels = [g for g in plan.groups if not (g.load or {}).get("pool")]
    firsts = {g.block: g for g in reversed(levels)}  # each level's first group: its warm-up
    # a level never inherits another's cache (reset before its warm-up), and its timed window inherits
    # its own warm-up's, so that only the first wave is cold
    assert all(g.warmup and g.reset_cache for g in firsts.values()) and not any(g.reset_cache for g in timed)
    for group in timed:
        prompts = [plan.prompts[s.prompt] for s in group.steps]
        s = int(group.block.split("/")[1][2:])
        # a closed level runs its 6 requests; an open one the arrivals of a sustained rate (5/s, duration_s)
        closed = "C=" in group.block
        assert len(prompts) == 6 if closed else len(prompts) > 6 * 10
        assert all(len(p) == 64 for p in prompts)
        assert all(p[:s] == prompts[0][:s] for p in prompts)  # the shared prefix, in every prompt
        if closed:  # and no more (among hundreds of random prompts two may share a token by chance)
            assert max(common_prefix_len(a, b) for a in prompts for b in prompts if a is not b) == s
        assert all(st.max_new_tokens == 8 and st.ignore_eos and st.needs == ["load"] for st in group.steps)
    warm = [g for g in levels if g.warmup]
    assert [len(g.steps) for g in warm[:2]] == [1, 3]  # one warm-up request per slot, not recorded
    assert not {s.prompt for g in warm for s in g.steps} & {s.prompt for g in timed for s in g.steps}


def test_sessions_extend_each_users_prompt_and_share_only_the_system_prompt_across_users(renderer, write):
    plan = build_plan(read_workload_file(write("study.yaml", SESSIONS)), renderer, repeats=1)
    level = [g for g in plan.groups if not g.warmup][1]  # C=2: at least 4 whole sessions, at most the 3 users
    users = sorted({s.user for s in level.steps})
    assert users == [0, 1, 2] and [s.turn for s in level.steps] == [1, 2, 3] * 3
    first = {u: [plan.prompts[s.prompt] for s in level.steps if s.user == u] for u in users}
    for prompts in first.values():
        assert all(common_prefix_len(a, b) > len(a) - 20 for a, b in zip(prompts, prompts[1:], strict=False))
    across = common_prefix_len(first[0][0], first[1][0])
    assert 0 < across < len(first[0][0]) - 10  # the system prompt, not the user's own incident line
    assert level.steps[0].shared_prefix_tokens == across  # what any two users share
    assert level.steps[1].shared_prefix_tokens == common_prefix_len(first[0][0], first[0][1])


def test_users_rendered_in_batches_get_the_prompts_each_gets_alone(renderer, write, monkeypatch):
    """The planner renders a level's users in tokenizer batches (SessionPrompts.prefetch, in chunks): every
    user's prompts, and the messages kept for --endpoint chat, are those rendered one user at a time, across a
    chunk's edge and for a user asked for its first turn only before."""
    from llm_call_anatomy.contract.chat import Renderer
    from llm_call_anatomy.workloads.load import prompts

    [spec] = read_workload_file(write("study.yaml", SESSIONS))
    monkeypatch.setattr(prompts, "PREFETCH_USERS", 2)
    alone, batched = Renderer(renderer.tokenizer), Renderer(renderer.tokenizer)
    one, many = prompts.SessionPrompts(spec, alone), prompts.SessionPrompts(spec, batched)
    many(3, 1)  # only its first turn so far: the batch renders it whole
    many.prefetch(range(5))
    assert all(many.complete[u] for u in range(5))  # rendered whole by the batches, before anyone asks
    assert [many(u) for u in range(5)] == [one(u) for u in range(5)]
    assert all(len(many(u)) == 3 for u in range(5))  # max_turns
    assert batched.chats == alone.chats


def test_the_builtin_load_file_holds_both_shapes_at_the_issue_defaults():
    specs = read_builtin(["load"])
    assert {s.shape for s in specs} == {"sessions", "fixed"}
    fixed = next(s for s in specs if s.shape == "fixed")
    assert (fixed.prompt_tokens, fixed.shared_prefix_tokens, fixed.output_tokens, fixed.levels) == (
        1024,
        [0, 960],
        64,
        [1, 8, 32, 128],
    )


@pytest.mark.parametrize(
    "args,message",
    [
        (["--load", "levels=1:0"], "--load: ls: levels.1: Input should be greater than or equal to 1"),
        (["--load", "levels=1:9"], "--load: ls: concurrency 9 is above the number of sessions (3 users)"),
        (["--load", "rates=0"], "--load: ls: rates.0: Input should be greater than 0"),
        (["--load", "levels"], "--load 'levels': expected KEY=VALUE"),
        (["--slo", "ttft_ms=fast"], "--slo: ttft_ms='fast' is not a number"),
        (["--slo", "ttft=5"], "--slo: unknown key 'ttft'"),
        (["--slo", "tpot_ms=-1"], "--slo: tpot_ms must be a positive number"),
        # a partial unnamed target used to pass here and crash the report (issue 26, item 3)
        (["--slo", "ttft_ms=500"], "--slo 'ttft_ms=500': an unnamed target needs both ttft_ms and tpot_ms"),
        (["--slo", "chat:queue_p90_ms=5"], "--slo: unknown metric 'queue' in 'queue_p90_ms'"),
        (["--slo", "chat:ttft_p0_ms=5"], "--slo: percentile 0 in 'ttft_p0_ms' is outside (0, 100]"),
        (
            ["--slo", "chat:ttft_p100.5_ms=5"],
            "--slo: percentile 100.5 in 'ttft_p100.5_ms' is outside (0, 100]",
        ),
        (
            ["--slo", "chat:ttft_p90_ms=5", "--slo", "chat:tpot_p90_ms=5"],
            "--slo: the target name 'chat' is given twice",
        ),
        (["--load", "levels=2:3,search_max=1"], "--load: ls: search_max 1 is below the first level (2)"),
        (
            ["--load", "think_time_s=-1"],
            "--load: ls: think_time_s: Input should be greater than or equal to 0",
        ),
        (["--load", "seconds=0.5"], "--load: ls: seconds: Input should be greater than or equal to 1"),
        (["--gpu-hour-usd", "0"], "--gpu-hour-usd must be a positive price"),
        (["--gpu-hour-usd", "-2.5"], "--gpu-hour-usd must be a positive price"),
        (["--max-model-len", "300"], "exceed the context limit of 300"),
    ],
)
def test_bad_load_input_is_one_line_and_exit_2_before_anything_runs(write, tmp_path, capsys, args, message):
    path = write("study.yaml", SESSIONS)
    out = tmp_path / "run"
    code = main(["--backend", "hf", "--workload-file", str(path), "--out", str(out), *args])
    err = capsys.readouterr().err
    assert (
        code == 2
        and err.startswith("compare.py: error: ")
        and message in err
        and len(err.strip().splitlines()) == 1
    )
    assert not (out / "records.jsonl").exists()


@pytest.mark.parametrize(
    "text", [FIXED + "    users_start: stationary\n", SESSIONS + "    users_start: fresh\n"]
)
def test_users_start_is_for_users_who_think(write, text):
    """Where users are in their sessions when a level starts means something only for a sessions load with
    a think time: anywhere else it is a mistake, not a setting silently ignored."""
    with pytest.raises(WorkloadFileError, match="users_start: where users who think are in their sessions"):
        read_workload_file(write("study.yaml", text))
    assert read_workload_file(write("ok.yaml", SESSIONS + "    think_s: 1\n    users_start: fresh\n"))
