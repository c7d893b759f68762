"""The template and tokenizer time of each single-request prompt, timed at plan time and carried to its
records; kept out of plan.json (a --resume compares its hash)."""

from __future__ import annotations

from llm_call_anatomy.contract.chat import Renderer
from llm_call_anatomy.contract.plan import Group, Plan, Step
from llm_call_anatomy.harness import prompt_timing


class Tokenizer:
    chat_template = "t"

    def apply_chat_template(self, messages, **kw):
        return " ".join(m["content"] for m in messages)

    def __call__(self, text, add_special_tokens=False):
        return {"input_ids": [len(w) for w in text.split()]}

    def decode(self, ids):
        return " ".join("x" * i for i in ids)


def step(prompt: str, **kw) -> Step:
    fields = dict(workload="w", kind="k", mode="m", case="c", prompt=prompt, max_new_tokens=4)
    return Step(**{**fields, **kw})


def test_chat_prompts_get_both_figures_id_prompts_the_tokenizer_only_and_load_none(tmp_path):
    r = Renderer(Tokenizer())
    plan = Plan()
    chat = plan.add_prompt(r.chat_ids([{"role": "user", "content": "ab cde"}]))
    ids = plan.add_prompt([3, 3, 3])
    load = plan.add_prompt([9])
    plan.groups = [
        Group("b", [step(chat), step(ids)]),
        Group("w", [step(ids, case="warm")], warmup=True),
        Group("l", [step(load)], load={"concurrency": 2}),
    ]
    timings = prompt_timing.measure(plan, r)
    assert set(timings) == {chat, ids}
    assert timings[chat]["template_ms"] >= 0 and timings[chat]["tokenize_ms"] >= 0
    assert timings[ids]["template_ms"] is None and timings[ids]["tokenize_ms"] >= 0
    prompt_timing.write(tmp_path, timings)
    assert prompt_timing.read(tmp_path) == timings and "timings" not in plan.to_json()
    assert prompt_timing.fields_of(timings, load) == {"template_ms": None, "tokenize_ms": None}
    assert prompt_timing.read(tmp_path / "none") == {}


def test_a_runs_records_carry_the_prompt_timings_and_the_callers_last_token(
    tmp_path, tiny_model_dir, monkeypatch
):
    """The child (in process, a fake backend) copies each prompt's timings onto its records."""
    from transformers import AutoTokenizer

    import tests.harness.fakes as fakes
    from llm_call_anatomy import backends
    from llm_call_anatomy.harness import child
    from llm_call_anatomy.harness.records import read_records
    from llm_call_anatomy.workloads.catalog import build_plan, read_workloads

    monkeypatch.setattr(fakes, "EchoBackend", fakes.echo_backend_class(), raising=False)
    monkeypatch.setitem(backends.REGISTRY, "echo", "tests.harness.fakes:EchoBackend")
    workload = fakes.small_workload(tmp_path)
    fakes.prepare_run(tmp_path / "run", workload, tiny_model_dir)
    renderer = Renderer(AutoTokenizer.from_pretrained(tiny_model_dir))
    plan = build_plan(read_workloads([], [str(workload)]), renderer, 1)  # the same prompts, the same keys
    prompt_timing.write(tmp_path / "run", prompt_timing.measure(plan, renderer))
    assert child.main([str(tmp_path / "run"), "echo"]) == 0
    rows = [r for r in read_records(tmp_path / "run") if not r["skipped"]]
    assert rows and all(r["tokenize_ms"] is not None and r["last_token_ms"] is not None for r in rows)
    assert {r["template_ms"] is None for r in rows} == {True, False}  # chat prompts and id prompts
    assert all(r["detokenize_ms"] is None for r in rows)  # the fake adapter marks no span
