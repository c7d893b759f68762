"""The trace kind's transcript form (issue 41): chat messages per request with a session id, each request's
prompt its session's history and its own messages rendered with the model's chat template, sent at its
timestamp; a bad request is a mistake with the trace's file and line (the workload file's error path, exit 2);
what a prefix cache can reuse is counted in tokens, exactly."""

from __future__ import annotations

import json
import random

import pytest

from llm_call_anatomy.contract.chat import common_prefix_len
from llm_call_anatomy.workloads.catalog import build_plan
from llm_call_anatomy.workloads.reader import WorkloadFileError, read_workload_file
from llm_call_anatomy.workloads.trace.prompts import reused_prefix_tokens
from llm_call_anatomy.workloads.trace.reader import read

SYSTEM = {"role": "system", "content": "You are terse."}
LINES = [
    {
        "timestamp": 0,
        "session_id": "a",
        "messages": [SYSTEM, {"role": "user", "content": "A prime?"}],
        "response": "Seven.",
    },
    {
        "timestamp": 500,
        "session_id": 7,
        "messages": [{"role": "user", "content": "Hello?"}],
        "output_length": 5,
    },
    {
        "timestamp": 2000,
        "session_id": "a",
        "messages": [{"role": "user", "content": "Another?"}],
        "output_length": 7,
    },
    # an OpenAI-style log: the whole conversation so far, taken whole (not put after the history again)
    {
        "timestamp": 2500,
        "session": 7,
        "messages": [
            {"role": "user", "content": "Hello?"},
            {"role": "assistant", "content": "Hi."},
            {"role": "user", "content": "Bye."},
        ],
        "output_length": 3,
    },
    {
        "timestamp": 3000,
        "session_id": "c",
        "messages": [{"role": "user", "content": "Hello?"}],
        "output_length": 2,
    },
]


def _write(folder, lines, extra: str = ""):
    (folder / "t.jsonl").write_text(
        "\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n"
    )
    path = folder / "t.yaml"
    path.write_text(
        "workloads:\n  - name: tr\n    kind: trace\n    trace: {path: t.jsonl}\n    warmup_requests: 0\n"
        + extra
    )
    return path


def test_a_transcript_reads_each_request_with_its_sessions_history(tmp_path):
    _write(tmp_path, LINES)
    requests, bad = read(tmp_path / "t.jsonl")
    assert bad == []
    assert [(r.session_id, r.line) for r in requests] == [("a", 1), ("7", 2), ("a", 3), ("7", 4), ("c", 5)]
    later = requests[2].chat()
    assert later == [
        SYSTEM,
        LINES[0]["messages"][1],
        {"role": "assistant", "content": "Seven."},
        LINES[2]["messages"][0],
    ]
    assert requests[3].chat() == LINES[3]["messages"]  # taken whole
    assert requests[4].chat() == LINES[4]["messages"]  # another session: no history


def test_bad_transcript_requests_are_mistakes_with_the_traces_file_and_line(tmp_path):
    lines = [
        LINES[0],
        {"timestamp": 1, "messages": [{"role": "user", "content": "x"}], "output_length": 2},  # no session
        {"timestamp": 2, "session_id": "b", "messages": [{"role": "user", "content": "x"}]},  # no length
        # after session a's history (ending with its answer), an assistant message cannot come next
        {
            "timestamp": 3,
            "session_id": "a",
            "messages": [{"role": "assistant", "content": "x"}],
            "output_length": 2,
        },
        "not json",
        {
            "timestamp": -5,
            "session_id": "d",
            "messages": [{"role": "user", "content": "x"}],
            "output_length": 2,
        },
    ]
    with pytest.raises(WorkloadFileError) as exc:
        read_workload_file(_write(tmp_path, lines))
    text = str(exc.value)
    for n, what in ((2, "session_id"), (3, "output_length"), (4, "history"), (5, "JSON"), (6, "timestamp")):
        assert f"t.jsonl:{n}" in text and what in text, (n, text)
    assert "t.jsonl:1" not in text


def test_inline_requests_are_checked_at_their_field(tmp_path):
    path = tmp_path / "t.yaml"
    path.write_text(
        "workloads:\n  - name: tr\n    kind: trace\n    requests:\n"
        "      - {timestamp: 0, session_id: a, messages: [{role: tool, content: x}], output_length: 2}\n"
    )
    with pytest.raises(WorkloadFileError, match=r"t\.yaml:5.*requests\[0\]"):
        read_workload_file(path)


def test_prompts_are_the_rendered_history_and_share_what_an_earlier_prompt_had(tmp_path, renderer):
    plan = build_plan(read_workload_file(_write(tmp_path, LINES)), renderer, 1)
    (group,) = [g for g in plan.groups if not g.warmup]
    prompts = [plan.prompts[s.prompt] for s in group.steps]
    assert len(prompts) == 5 and group.load["arrivals_s"] == [0.0, 0.5, 2.0, 2.5, 3.0]
    assert prompts[0] == renderer.chat_ids(LINES[0]["messages"])
    # the session's second request renders its first, its answer and its own message
    assert prompts[2] == renderer.chat_ids(read(tmp_path / "t.jsonl")[0][2].chat())
    steps = group.steps
    assert [s.shared_prefix_tokens for s in steps] == [
        max((common_prefix_len(p, q) for q in prompts[:i]), default=0) for i, p in enumerate(prompts)
    ]
    assert steps[2].shared_prefix_tokens > len(renderer.chat_ids([SYSTEM]))  # its history is reused
    # output: asked as logged, or the response's length in the model's tokens
    assert [s.max_new_tokens for s in steps] == [len(renderer.text_ids("Seven.")), 5, 7, 3, 2]
    assert all(s.ignore_eos and s.user is None for s in steps)  # each sent at its own timestamp
    facts = group.load["facts"]["trace"]
    assert facts["form"] == "transcript" and facts["sessions"] == 3 and facts["sent"] == 5
    assert facts["seen_before_share"] == pytest.approx(
        sum(s.shared_prefix_tokens for s in steps) / sum(map(len, prompts))
    )


def test_every_nth_samples_sessions_in_a_transcript(tmp_path, renderer):
    plan = build_plan(read_workload_file(_write(tmp_path, LINES, "    every_nth: 2\n")), renderer, 1)
    (group,) = [g for g in plan.groups if not g.warmup]
    # sessions in order of first request: a, 7, c; every 2nd: a and c, each whole
    assert group.load["arrivals_s"] == [0.0, 2.0, 3.0]
    assert group.load["facts"]["trace"]["sessions"] == 2


def test_reused_prefix_tokens_is_the_longest_prefix_shared_with_any_earlier_prompt():
    rng = random.Random(5)
    base = [rng.randrange(50) for _ in range(200)]
    prompts = []
    for _ in range(60):
        src = rng.choice(prompts) if prompts and rng.random() < 0.7 else base
        cut = rng.randrange(len(src) + 1)
        prompts.append(src[:cut] + [rng.randrange(50) for _ in range(rng.randrange(40))])
    expect = [max((common_prefix_len(p, q) for q in prompts[:i]), default=0) for i, p in enumerate(prompts)]
    assert reused_prefix_tokens(prompts) == expect


def test_a_bad_transcript_stops_the_run_with_exit_2_before_anything_runs(tmp_path, capsys):
    from llm_call_anatomy.harness.cli import main

    bad = [LINES[0], {"timestamp": 9, "messages": [{"role": "user", "content": "x"}], "output_length": 3}]
    path = _write(tmp_path, bad)
    code = main(["--backend", "hf-cb", "--workload-file", str(path), "--out", str(tmp_path / "run")])
    err = capsys.readouterr().err
    assert code == 2 and "t.jsonl:2: no session_id" in err, err
    assert not (tmp_path / "run").exists()


def test_a_transcript_is_replayed_at_its_timestamps_and_shown_as_one(tmp_path, tiny_model_dir):
    import asyncio

    from transformers import AutoTokenizer

    from llm_call_anatomy.backends.base import Backend, TokenClock
    from llm_call_anatomy.contract.adapter import BackendSettings, Capabilities, RawOutput, Request
    from llm_call_anatomy.contract.chat import Renderer
    from llm_call_anatomy.harness.records import read_records
    from llm_call_anatomy.harness.runner import Runner
    from llm_call_anatomy.reports import build

    class Quick(Backend):
        name = "quick"
        capabilities = Capabilities(load=True, batches_requests=True)

        def __init__(self) -> None:
            super().__init__(BackendSettings(model_path="-", model_label="-"))

        def _generate(self, request: Request, clock: TokenClock) -> RawOutput:  # pragma: no cover
            raise NotImplementedError

        async def stream(self, request: Request, clock: TokenClock) -> RawOutput:
            await asyncio.sleep(0.003)
            clock.tick(request.max_new_tokens)
            return RawOutput(token_ids=[7] * request.max_new_tokens, text="")

    renderer = Renderer(AutoTokenizer.from_pretrained(tiny_model_dir))
    plan = build_plan(read_workload_file(_write(tmp_path, LINES, "    time_scales: [4]\n")), renderer, 1)
    run = tmp_path / "run"
    Runner(Quick(), plan, run, {"run_id": "run", "backend": "quick"}, resume=False).run()
    (run / "env.json").write_text(json.dumps({"run_id": "run"}))
    rows = sorted((r for r in read_records(run) if r.get("rep") is not None), key=lambda r: r["rep"])
    assert [r["planned_submit_s"] for r in rows] == pytest.approx([x["timestamp"] / 4e3 for x in LINES])
    assert all(r["submit_s"] - r["planned_submit_s"] > -1e-3 for r in rows)
    html = build([run], tmp_path / "report.html").read_text(encoding="utf-8")
    assert "transcript, 3 sessions, rendered by the chat template" in html and "of tokens" in html
    assert "rendered by the model&#39;s chat template, so a prefix cache" in html
