"""Conversations from files: transcripts replayed turn by turn, tool calls rendered, per-turn system
prompts."""

from __future__ import annotations

import json
from pathlib import Path

from llm_call_anatomy.workloads.catalog import build_plan
from llm_call_anatomy.workloads.conversation.spec import render_turns, turn_messages
from llm_call_anatomy.workloads.reader import read_workload_file

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def by_name(specs):
    return {s.name: s for s in specs}


def test_transcript_jsonl_is_replayed_one_conversation_per_line(renderer):
    specs = by_name(read_workload_file(EXAMPLES / "study.yaml"))
    assert "support-chat/1" in specs and "support-chat/2" in specs
    assert "support-chat/3" not in specs  # first: 2
    lines = [json.loads(x) for x in (EXAMPLES / "transcripts.jsonl").read_text().splitlines()]

    one = specs["support-chat/1"]
    recorded = lines[0]  # has its own system message: the workload's is not added
    requests = turn_messages(one)
    replies = [j for j, m in enumerate(recorded) if m["role"] == "assistant"]
    assert [len(r) for r in requests] == replies  # one request before every recorded reply
    assert [m["role"] for m in requests[1]] == ["system", "user", "assistant", "tool"]
    prompts = render_turns(one, renderer)
    assert prompts[0] == renderer.chat_ids(recorded[: replies[0]], one.tools)
    text = renderer.tokenizer.decode(prompts[1])
    assert '<tool_call>\n{"name": "lookup_order", "arguments": {"order_id": 7}}' in text
    assert "<tool_response>" in text and '"status": "shipped"' in text
    assert '"name": "list_payments"' in text  # the workload's tool definitions are rendered

    two = specs["support-chat/2"]
    requests = turn_messages(two)
    assert requests[0][0] == {"role": "system", "content": one.system}  # the workload's system prompt
    assert requests[-1][-1] == {
        "role": "user",
        "content": "How long until I see the refund?",
    }  # ends with a user
    assert len(requests) == 3


def test_transcript_plan_labels_records_with_the_names_in_the_file(renderer):
    specs = [s for s in read_workload_file(EXAMPLES / "study.yaml") if s.name.startswith("support-chat")]
    plan = build_plan(specs, renderer, repeats=1)
    assert plan.workloads() == ["support-chat/1", "support-chat/2"]
    steps = [s for g in plan.groups if not g.warmup for s in g.steps if s.workload == "support-chat/1"]
    assert [(s.mode, s.turn) for s in steps] == [
        ("full", 1),
        ("full", 2),
        ("full", 3),
        ("cached", 1),
        ("cached", 2),
        ("cached", 3),
    ]
    prompts = render_turns(specs[0], renderer)
    assert [plan.prompts[s.prompt] for s in steps[:3]] == prompts


def test_inline_turns_use_the_system_prompt_in_force(renderer, write):
    path = write(
        "study.yaml",
        """
        workloads:
          - name: chat
            kind: conversation
            system: old
            turns:
              - {user: a, assistant: b}
              - {user: c, assistant: d, system: new}
              - {user: e, assistant: f}
        """,
    )
    [spec] = read_workload_file(path)
    systems = [r[0]["content"] for r in turn_messages(spec)]
    assert systems == ["old", "new", "new"]
    assert turn_messages(spec)[2][1:] == [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "b"},
        {"role": "user", "content": "c"},
        {"role": "assistant", "content": "d"},
        {"role": "user", "content": "e"},
    ]
    assert spec._origins == [f"{path}:6", f"{path}:7", f"{path}:8"]


def test_sweep_filler_file_is_read_relative_to_the_workload_file(renderer):
    specs = by_name(read_workload_file(EXAMPLES / "study.yaml"))
    sweep = specs["ticket-sweep"]
    assert sweep.filler == (EXAMPLES / "filler.txt").read_text()
    plan = build_plan([sweep], renderer, repeats=1)
    assert sorted({len(plan.prompts[s.prompt]) for g in plan.groups for s in g.steps}) == [32, 96]
