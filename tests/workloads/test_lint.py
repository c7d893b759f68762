"""The prefix-stability lint: a planted timestamp is found and located; the template's rewrite is not a
break."""

from __future__ import annotations

import shutil
from pathlib import Path

from llm_call_anatomy.contract.chat import common_prefix_len
from llm_call_anatomy.workloads.catalog import read_builtin
from llm_call_anatomy.workloads.conversation.lint import check, check_all, report
from llm_call_anatomy.workloads.conversation.spec import render_turns
from llm_call_anatomy.workloads.reader import read_workload_file
from tests.conftest import compare

SYSTEM = "You are an on-call SRE assistant. Reply with one line."
CLOCK = f"""
workloads:
  - name: clock-agent
    kind: conversation
    turns:
      - system: "Current time: 2026-11-29 03:12:07 UTC\\n{SYSTEM}"
        user: "nginx: upstream timed out"
        assistant: "edge-1: orders backend slow."
      - system: "Current time: 2026-11-29 03:14:52 UTC\\n{SYSTEM}"
        user: "postgres: checkpoint took 17 s"
        assistant: "db-primary: long checkpoint."
      - system: "Current time: 2026-11-29 03:15:10 UTC\\n{SYSTEM}"
        user: "all clear?"
        assistant: "yes"
"""


def test_planted_timestamp_is_found_at_turn_2_inside_the_system_prompt(renderer, write):
    path = write("clock.yaml", CLOCK)
    [spec] = read_workload_file(path)
    prompts = render_turns(spec, renderer)
    findings = check(spec, renderer)
    real = [f for f in findings if not f.expected]
    assert [f.turn for f in real] == [2, 3]
    first = real[0]
    assert first.position == common_prefix_len(prompts[0], prompts[1])
    system_tokens = len(
        renderer.chat_ids([{"role": "system", "content": f"Current time: 2026-11-29 03:12:07 UTC\n{SYSTEM}"}])
    )
    assert first.position < system_tokens  # inside the system prompt, near its top
    assert first.where == "message 1 (system)"
    assert first.origin == f"{path}:8"
    assert first.tokens_lost == len(prompts[0]) - first.position
    cut = first.position - first.context_start  # the tokens around the break, as text
    shared, before, after = (
        "".join(t) for t in (first.previous[:cut], first.previous[cut:], first.current[cut:])
    )
    assert shared + before in f"Current time: 2026-11-29 03:12:07 UTC\n{SYSTEM}"
    assert shared + after in f"Current time: 2026-11-29 03:14:52 UTC\n{SYSTEM}"
    assert "12" in before and "14" in after

    lines, code = report([spec], check_all([spec], renderer))
    assert code == 1
    assert any(
        f"BREAK at turn 2 ({path}:8)" in x and f"at token {first.position} of {len(prompts[0])}" in x
        for x in lines
    )


def test_builtin_conversation_only_has_the_expected_template_rewrite(renderer):
    [spec] = read_builtin(["conversation"])
    findings = check(spec, renderer)
    assert [f.turn for f in findings] == list(
        range(2, len(spec.turns) + 1)
    )  # Qwen3-style: every turn breaks...
    assert all(
        f.expected and f.where == "the generation prompt" for f in findings
    )  # ...in the generation prompt
    prompts = render_turns(spec, renderer)
    assert all(f.position > len(prompts[f.turn - 2]) - 10 for f in findings)
    assert report([spec], check_all([spec], renderer))[1] == 0


def test_lint_only_cli_names_the_turn_and_position_and_exits_1(renderer, write, tmp_path):
    path = write("clock.yaml", CLOCK)
    [spec] = read_workload_file(path)
    position = common_prefix_len(*render_turns(spec, renderer)[:2])
    proc = compare("--lint-only", "--workload-file", str(path), check=False, timeout=300)
    assert proc.returncode == 1, proc.stderr
    assert f"clock-agent: BREAK at turn 2 ({path}:8)" in proc.stdout
    assert f"at token {position} of" in proc.stdout and "in message 1 (system)" in proc.stdout
    assert "also at turns 3" in proc.stdout


def test_lint_only_needs_no_weights_and_passes_a_stable_file(tiny_model_dir, write, tmp_path):
    tokenizer_only = tmp_path / "tokenizer-only"
    tokenizer_only.mkdir()
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        shutil.copy(Path(tiny_model_dir) / name, tokenizer_only / name)
    path = write(
        "stable.yaml",
        CLOCK.replace(
            'system: "Current time: 2026-11-29 03:14:52', 'system: "Current time: 2026-11-29 03:12:07'
        ).replace('system: "Current time: 2026-11-29 03:15:10', 'system: "Current time: 2026-11-29 03:12:07'),
    )
    proc = compare(
        "--lint-only", "--model", str(tokenizer_only), "--workload-file", str(path), check=False, timeout=300
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "clock-agent: 3 turns, stable" in proc.stdout and "expected" in proc.stdout
