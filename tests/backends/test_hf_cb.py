"""The real ``hf-cb`` adapter (transformers' continuous-batching manager) on the tiny model (CPU), under
load."""

from __future__ import annotations

import json

import pytest

from llm_call_anatomy.backends.hf.cb import overrides
from tests.conftest import compare, records


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("hfcb") / "run"
    compare("--backend", "hf-cb", "--workloads", "load,template", "--out", str(out), "--no-report")
    return out, records(out)


def requests_of(rows, workload, mode, case):
    return sorted(
        (
            r
            for r in rows
            if r["workload"] == workload and r["mode"] == mode and r["case"] == case and r["rep"] is not None
        ),
        key=lambda r: r["submit_s"],
    )


def test_requests_in_flight_share_the_managers_steps(run):
    _, rows = run
    level = requests_of(rows, "load-fixed", "S=0", "C=4")
    assert len(level) == 4 and all(r["error"] is None and r["output_tokens"] == 8 for r in level)
    # batched, not queued: every request was submitted before the first one finished, and tokens interleave
    assert max(r["submit_s"] for r in level) < min(r["finish_s"] for r in level)
    assert max(r["first_token_s"] for r in level) < min(r["finish_s"] for r in level)
    facts = [r["extra"]["level"] for r in rows if r["kind"] == "load" and r["rep"] is None]
    assert facts and all(f["batches_requests"] for f in facts)


def test_a_users_later_turn_is_served_from_the_prefix_cache_and_levels_start_cold(run):
    _, rows = run
    sessions = requests_of(rows, "load-sessions", "sessions", "C=1")
    later = [r for r in sessions if r["turn"] == 2]
    assert later and all(0 < r["cached_tokens"] <= r["shared_prefix_tokens"] for r in later)
    # C=4 replays the same fixed-shape prompts as C=1: a fresh manager per level means nothing is inherited
    assert all(r["cached_tokens"] == 0 for r in requests_of(rows, "load-fixed", "S=0", "C=4"))
    level = next(
        r["extra"]["level"]
        for r in rows
        if r["workload"] == "load-sessions" and r["case"] == "C=1" and r["rep"] is None
    )
    assert level["prefix_cache_hits"] == sum(r["cached_tokens"] for r in sessions)


def test_single_requests_are_skipped_with_the_reason_and_env_says_how_it_ran(run):
    out, rows = run
    skipped = [r for r in rows if r["workload"] == "template"]
    assert skipped and all(r["skipped"] == "hf-cb does not support single requests" for r in skipped)
    engine = json.loads((out / "env" / "hf-cb.json").read_text())["engine"]
    cb = engine["continuous_batching"]
    assert cb["num_blocks"] * cb["block_size"] >= 16384 and cb["prefix_sharing"] is True


def test_overrides_read_typed_key_values():
    assert overrides("attn=eager, use_cuda_graph=true,num_blocks=512,max_memory_percent=0.5,seed=none") == {
        "attn": "eager",
        "use_cuda_graph": True,
        "num_blocks": 512,
        "max_memory_percent": 0.5,
        "seed": None,
    }
    assert overrides("") == {} and overrides(None) == {}
    with pytest.raises(ValueError, match="LCA_HF_CB"):
        overrides("attn")


def test_a_request_past_the_request_timeout_is_cancelled_in_the_manager(tiny_model_dir):
    """A 3000-token request (the tiny model on this CPU: some 150 tokens/s) against a 1 s --request-timeout,
    then a short one in the same session: the first is an error and leaves the manager's batch."""
    from llm_call_anatomy.backends.hf.cb import HFContinuousBatchingBackend
    from llm_call_anatomy.backends.load_level import run_level
    from llm_call_anatomy.backends.load_loop import LoadSettings
    from llm_call_anatomy.contract.adapter import BackendSettings, Request

    settings = BackendSettings(
        model_path=str(tiny_model_dir),
        model_label="tiny",
        dtype="float32",
        device="cpu",
        request_timeout_s=1.0,
    )
    backend = HFContinuousBatchingBackend(settings)
    backend.start()
    try:
        hung = Request(prompt_ids=[5] * 16, max_new_tokens=3000, ignore_eos=True)
        after = Request(prompt_ids=[6] * 16, max_new_tokens=20, ignore_eos=True)
        (outs,), _ = run_level(backend, [[hung, after]], LoadSettings(concurrency=1))
        assert [o.error for o in outs] == [
            "TimeoutError: no answer within 1 s "
            "(--request-timeout: the whole request, from submit to its last token)",
            None,
        ]
        assert 0 < len(outs[0].token_times_s) < 3000 and len(outs[1].token_times_s) == 20
        scheduler = backend.manager.batch_processor.scheduler
        assert (
            not scheduler.active_requests and not scheduler.waiting_requests
        )  # cancelled, not left decoding
    finally:
        backend.close()
