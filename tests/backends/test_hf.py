"""The real HF adapter on the tiny model (CPU): every workload, the cache trap, grammar, timing."""

from __future__ import annotations

import json
from collections import defaultdict

import pytest
from transformers import AutoTokenizer

from tests.conftest import DEFAULT_WORKLOADS, RECORD_CONTRACT, compare, records


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("hf") / "run"
    compare("--backend", "hf", "--repeats", "2", "--json-calls", "2", "--out", str(out), "--no-report")
    return out, records(out)


def test_every_workload_writes_records_with_the_contract_fields(run):
    _, all_rows = run
    assert {r["workload"] for r in all_rows} == DEFAULT_WORKLOADS
    rows = [
        r for r in all_rows if not (r["kind"] == "load" and r["rep"] is None)
    ]  # not a load level's own record
    for r in rows:
        assert set(RECORD_CONTRACT) <= set(r)
        assert r["error"] is None and r["skipped"] is None
        assert r["backend"] == "hf" and r["model"] == "tiny" and r["backend_version"]
        assert r["timing_source"] == "wall-clock"
        assert r["prompt_ids_match"] is True
    assert all(r["ttft_ms"] > 0 for r in rows)


def test_under_load_hf_serves_one_request_at_a_time_behind_a_queue(run):
    _, rows = run
    for case in ("C=1", "C=4"):
        level = sorted(
            (
                r
                for r in rows
                if r["workload"] == "load-fixed"
                and r["mode"] == "S=0"
                and r["case"] == case
                and r["rep"] is not None
            ),
            key=lambda r: r["first_token_s"],
        )
        assert len(level) == 4 and all(r["queue_ms"] is not None and r["error"] is None for r in level)
        for a, b in zip(level, level[1:], strict=False):
            assert b["first_token_s"] >= a["finish_s"] - 0.005  # no two requests decode at once
    c4 = [r for r in rows if r["workload"] == "load-fixed" and r["case"] == "C=4" and r["rep"] is not None]
    assert max(r["queue_ms"] for r in c4) > 2 * min(
        r["e2e_ms"] - r["queue_ms"] for r in c4
    )  # waited for others
    level = [r["extra"]["level"] for r in rows if r["workload"] == "load-sessions" and r["rep"] is None]
    assert len(level) == 2 and all(f["served_as"] == "one at a time, queued (FIFO)" for f in level)


def test_shared_prefix_matches_an_independent_count_and_reveals_the_rewrite(run, tiny_model_dir):
    from llm_call_anatomy.workloads.catalog import read_builtin

    spec = read_builtin(["conversation"])[0]
    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    prompts, history = [], [{"role": "system", "content": spec.system}]
    for turn in spec.turns:
        history.append({"role": "user", "content": turn.user})
        text = tok.apply_chat_template(
            history, tokenize=False, add_generation_prompt=True, enable_thinking=False
        )
        prompts.append(tok(text, add_special_tokens=False)["input_ids"])
        history.append({"role": "assistant", "content": turn.assistant})
    _, rows = run
    conv = [r for r in rows if r["workload"] == "conversation" and r["mode"] == "cached" and r["rep"] == 0]
    by_turn = {r["turn"]: r for r in conv}
    assert sorted(by_turn) == list(range(1, 11))
    for k in range(2, 11):
        prev, cur = prompts[k - 2], prompts[k - 1]
        shared = 0
        while shared < min(len(prev), len(cur)) and prev[shared] == cur[shared]:
            shared += 1
        r = by_turn[k]
        assert r["prompt_tokens"] == len(cur)
        assert r["shared_prefix_tokens"] == shared
        assert shared < len(prev)  # the template rewrote the previous turn: the break is before its end
        assert "<think>" in r["prefix_break"]["previous"]


def test_cached_mode_reuses_exactly_the_shared_prefix(run):
    _, rows = run
    for r in rows:
        if r["workload"] != "conversation":
            continue
        if r["mode"] == "full" or r["turn"] == 1:
            assert r["cached_tokens"] == 0 and r["computed_tokens"] == r["prompt_tokens"]
        else:
            assert r["cached_tokens"] == r["shared_prefix_tokens"]
            assert r["computed_tokens"] == r["prompt_tokens"] - r["shared_prefix_tokens"]


def test_cached_and_full_pick_the_same_first_token(run):
    _, rows = run
    first = defaultdict(set)
    for r in rows:
        if r["workload"] == "conversation":
            first[r["turn"]].add(r["first_token_id"])
    assert len(first) == 10 and all(len(ids) == 1 for ids in first.values())


def test_sweep_prompts_have_exact_lengths_and_decode_64_tokens(run):
    _, rows = run
    sweep = [r for r in rows if r["workload"] == "sweep"]
    assert sorted({r["prompt_tokens"] for r in sweep}) == [64, 256, 512, 1024, 2048]
    for r in sweep:
        assert r["case"] == f"N={r['prompt_tokens']}"
        assert r["output_tokens"] == 64 and r["decode_ms_per_token"] > 0
        assert r["cached_tokens"] == 0 and r["cache_state"] == "reset-before-request"
    assert sorted({r["rep"] for r in sweep}) == [0, 1]


def test_one_call_taken_apart_has_its_tokenizer_last_token_and_detokenize_times(run):
    """The anatomy's stages this backend gives (docs/explanation/anatomy.md): the prompt's tokenizer time from
    plan time, the caller's last token, and the adapter's detokenize span after it, all inside the
    end-to-end."""
    _, rows = run
    sweep = [r for r in rows if r["workload"] == "sweep"]
    for r in sweep:
        assert r["tokenize_ms"] > 0 and r["template_ms"] is None  # the sweep's prompts are token ids
        assert r["ttft_ms"] <= r["last_token_ms"] and r["detokenize_ms"] > 0
        assert r["last_token_ms"] + r["detokenize_ms"] <= r["e2e_ms"]
    chats = [r for r in rows if r["workload"] == "conversation"]
    assert chats and all(r["template_ms"] > 0 for r in chats)


def test_constrained_json_is_valid_at_every_temperature(run):
    _, rows = run
    constrained = [r for r in rows if r["workload"] == "json" and r["mode"] == "constrained"]
    assert sorted({r["temperature"] for r in constrained}) == [0.0, 0.3, 0.7, 1.0, 1.3]
    assert len(constrained) == 10
    for r in constrained:
        assert r["valid_json"] is True, r["output_text"]
        value = json.loads(r["output_text"])
        assert 1 <= value["port"] <= 65535
        assert r["correct"] in (True, False)


def test_step0_candidates_once_per_mode_with_raw_logits(run):
    _, rows = run
    with_top = [r for r in rows if r.get("top_candidates")]
    assert sorted(r["mode"] for r in with_top) == ["constrained", "free", "strict"]
    for r in with_top:
        top = r["top_candidates"]
        assert len(top) == 10
        logits = [c["logit"] for c in top]
        assert logits == sorted(logits, reverse=True)
        assert all(c["logprob"] is not None and c["logprob"] > float("-inf") for c in top)  # raw, not masked


def test_template_scores_and_attention_probe(run):
    _, rows = run
    tmpl = [r for r in rows if r["workload"] == "template" and r["mode"] != "attention"]
    assert {r["mode"] for r in tmpl} == {"chat_template", "plain", "llama3_tags"}
    assert len(tmpl) == 15 and all(isinstance(r["clean"], bool) for r in tmpl)
    probe = [r for r in rows if r["mode"] == "attention"]
    assert len(probe) == 1
    shares = probe[0]["attention_special_share"]
    assert len(shares) == 2 and all(0.0 <= s <= 1.0 for s in shares)  # one per layer of the tiny model


def test_step_top_is_the_log_softmax_top_k_per_step():
    import torch

    from llm_call_anatomy.backends.hf.backend import step_top

    scores = (torch.tensor([[0.0, 2.0, 1.0]]), torch.tensor([[3.0, float("-inf"), 3.0]]))
    steps = step_top(scores, 2)
    assert [[i for i, _ in s] for s in steps] == [[1, 2], [0, 2]]
    assert steps[0][0][1] - steps[0][1][1] == pytest.approx(1.0) and steps[1][0][1] == pytest.approx(
        steps[1][1][1]
    )


def test_without_xgrammar_hf_says_which_extra_gives_it_grammar(monkeypatch, tiny_model_dir):
    """hf and hf-graphs take grammars from xgrammar (the hf extra): without it the json workload's grammar
    mode is skipped with the extra's ``pip install`` (#43); hf-cb has no grammar whatever is installed."""
    from llm_call_anatomy.backends.hf import backend as hf
    from llm_call_anatomy.backends.hf.cb import HFContinuousBatchingBackend
    from llm_call_anatomy.backends.hf.graphs import HFGraphsBackend
    from llm_call_anatomy.contract.adapter import BackendSettings

    settings = BackendSettings(model_path=str(tiny_model_dir), model_label="tiny", device="cpu")
    assert hf.HFBackend(settings).why_not("grammar") is None  # installed here (make install)
    monkeypatch.setattr(hf, "xgrammar_available", lambda: False)
    said = "without xgrammar (not installed here): pip install 'llm-call-anatomy[hf]'"
    for cls in (hf.HFBackend, HFGraphsBackend):
        backend = cls(settings)
        assert not backend.capabilities.grammar and backend.why_not("grammar") == said
        assert backend.why_not("load") is None
    assert HFContinuousBatchingBackend(settings).why_not("grammar") is None


def test_hf_loads_transformers_own_modules_whatever_the_version_defaults_to(monkeypatch, tiny_model_dir):
    """transformers 5.25 swaps layers for the Hub's kernels in from_pretrained unless told not to (5.17-5.24:
    off by default); hf asks for them off on every version, and env.json says so (#43)."""
    from transformers import AutoModelForCausalLM

    from llm_call_anatomy.backends.hf import backend as hf
    from llm_call_anatomy.contract.adapter import BackendSettings

    asked: list[dict] = []
    load = AutoModelForCausalLM.from_pretrained

    def spy(*args, **kwargs):
        asked.append(kwargs)
        return load(*args, **kwargs)

    monkeypatch.setattr(hf.AutoModelForCausalLM, "from_pretrained", spy)
    backend = hf.HFBackend(BackendSettings(model_path=str(tiny_model_dir), model_label="tiny", device="cpu"))
    backend.start()
    try:
        assert [a.get("use_kernels") for a in asked] == [False]
        assert backend.environment()["hub_kernels"].startswith("off (use_kernels=False")
    finally:
        backend.close()


def test_hf_s_start_prints_no_bar_of_its_own(capfd, tiny_model_dir):
    """The child's heartbeat says the load's elapsed time; transformers' "Loading weights" bar printed before
    the run's progress bar, through the heartbeat's line (#43)."""
    from transformers.utils import logging as hf_logging

    from llm_call_anatomy.backends.hf import backend as hf
    from llm_call_anatomy.contract.adapter import BackendSettings

    hf_logging.enable_progress_bar()  # as a fresh process has them
    backend = hf.HFBackend(BackendSettings(model_path=str(tiny_model_dir), model_label="tiny", device="cpu"))
    try:
        capfd.readouterr()
        backend.start()
        printed = capfd.readouterr()
        assert "Loading weights" not in printed.err + printed.out
    finally:
        backend.close()
        hf_logging.enable_progress_bar()
