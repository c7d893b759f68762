"""JSON analysis: pass rates, step-0 candidates, grammar overhead, failure kinds."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from llm_call_anatomy.workloads.json.report import analysis as jx
from tests.reports.records import record

GOOD = '{"service": "nginx", "port": 443, "healthy": true}'


def calls() -> pd.DataFrame:
    rows = []
    texts = {
        "free": ["```json\n" + GOOD + "\n```", GOOD],
        "strict": [GOOD, "Sure, here it is"],
        "constrained": [GOOD, GOOD],
    }
    decode = {"free": 10.0, "strict": 10.0, "constrained": 13.0}
    prompts = {"free": 40, "strict": 55, "constrained": 55}
    for backend in ("hf", "vllm"):
        for mode, replies in texts.items():
            for t in (0.0, 1.0):
                for i, text in enumerate(replies):
                    top = None
                    if t == 0.0 and i == 0:
                        top = [
                            {"token_id": 1, "text": "{", "logprob": math.log(0.6), "logit": 3.0},
                            {"token_id": 2, "text": "```", "logprob": math.log(0.3), "logit": 2.3},
                            {"token_id": 3, "text": "Sure", "logprob": math.log(0.1), "logit": 1.2},
                        ]
                    rows.append(
                        record(
                            backend=backend,
                            workload="json",
                            kind="json",
                            mode=mode,
                            case=f"case={i}",
                            rep=0,
                            temperature=t,
                            prompt_tokens=prompts[mode] + i,
                            valid_json=text == GOOD,
                            correct=text == GOOD,
                            output_text=text,
                            finish_reason="stop",
                            e2e_ms=100.0 + i,
                            decode_ms_per_token=decode[mode] + i * 0.1,
                            top_candidates=top,
                        )
                    )
    return pd.DataFrame(rows)


def test_pass_rates():
    rates = jx.pass_rates(calls())
    row = rates[(rates.backend == "hf") & (rates["mode"] == "strict") & (rates.temperature == 1.0)].iloc[0]
    assert (row.n, row.valid, row.pass_rate, row.correct_n, row.correct) == (2, 1, 0.5, 2, 1)
    assert row.latency_med == 100.5 and row.latency_n == 2
    assert len(rates) == 2 * 3 * 2


def test_candidates_and_fence_rank():
    cands = {(c.backend, c.mode): c for c in jx.candidates(calls())}
    c = cands[("hf", "free")]
    assert [r["text"] for r in c.rows] == ["{", "```", "Sure"]
    assert c.fence_rank == 2 and c.rows[1]["prob"] == pytest.approx(0.3) and c.rows[0]["logit"] == 3.0


def test_grammar_pairs_by_name_and_same_prompts():
    df = calls()
    assert jx.grammar_pairs(df) == [("constrained", "strict")]
    over = jx.grammar_overhead(df).set_index("backend")
    assert over.loc["hf", "extra_ms"] == pytest.approx(3.0)
    assert over.loc["hf", "ratio"] == pytest.approx(13.05 / 10.05)
    renamed = df.replace({"mode": {"strict": "terse"}})
    assert jx.grammar_pairs(renamed) == [("constrained", "terse")]
    no_partner = df[df["mode"] != "strict"]
    assert jx.grammar_pairs(no_partner) == []  # free has other prompts: not the same requests


@pytest.mark.parametrize(
    ("text", "finish", "kind"),
    [
        ("```json\n" + GOOD + "\n```", "stop", "Markdown fence"),
        ("Here is the JSON: " + GOOD, "stop", "prose"),
        ("The service is", "length", "prose (cut off)"),
        ('{"service": "nginx", "po', "length", "cut off at the token limit"),
        (GOOD + "\nHope this helps", "stop", "extra text after the JSON"),
        ('{"service": "nginx"}', "stop", "parses, but breaks the schema"),
        ('{"service": nginx}', "stop", "malformed JSON"),
        ("   ", "stop", "empty reply"),
        (None, "length", "empty reply"),
        (float("nan"), "length", "empty reply"),  # pandas 3's NaN for a missing text: it is truthy, not a str
    ],
)
def test_failure_kinds(text, finish, kind):
    assert jx.failure_kind(text, finish) == kind


def test_failing_replies_and_counts():
    df = calls()
    fails = jx.failing_replies(df, limit=4)
    assert set(zip(fails.backend, fails["mode"], strict=True)) == {
        ("hf", "free"),
        ("hf", "strict"),
        ("vllm", "free"),
        ("vllm", "strict"),
    }
    assert (
        len(fails[(fails.backend == "hf") & (fails["mode"] == "free")]) == 1
    )  # two failures, one distinct text
    counts = jx.failure_counts(df)
    assert counts[(counts.backend == "hf") & (counts["mode"] == "free")]["count"].tolist() == [2]


def test_grammar_flag_names_the_constrained_mode_and_marks_masked_candidates():
    df = calls().replace({"mode": {"constrained": "bound", "strict": "terse"}})
    df["grammar"] = df["mode"] == "bound"
    assert jx.grammar_pairs(df) == [("bound", "terse")]
    no_logits = df["backend"] == "vllm"
    df.loc[no_logits, "top_candidates"] = df.loc[no_logits, "top_candidates"].map(
        lambda top: [{**c, "logit": None} for c in top] if isinstance(top, list) else top
    )
    masked = {(c.backend, c.mode): c.after_mask for c in jx.candidates(df)}
    assert masked[("vllm", "bound")] is True  # sampler log-probs in a grammar mode
    assert masked[("hf", "bound")] is False  # raw logits: before the mask
    assert masked[("vllm", "terse")] is False  # no grammar there


def test_the_seeds_claims_are_judged_per_backend():
    df = calls()
    wrong = (df.backend == "vllm") & (df["mode"] == "constrained") & (df.case == "case=1")
    df.loc[wrong, "correct"] = False  # valid JSON, wrong values
    assert jx.mode_roles(df) == {"free": "free", "strict": "strict", "constrained": "constrained"}
    rates, counts = jx.pass_rates(df), jx.failure_counts(df)
    got = {(c.backend, c.claim.split()[1]): (c.verdict, c.evidence) for c in jx.claims(df, rates, counts)}
    # 2 failures, both fences: too few to say the share is above one half (Wilson interval 34-100 %)
    assert got[("hf", "prompts")][0] == "not decided"
    assert got[("hf", "prompts")][1].startswith(
        "'free': 2 of 4 valid; failures: Markdown fence 2; fence or prose 2 of 2"
    )
    assert (
        got[("hf", "strict")][0] == "not decided"
    )  # 2 of 4 either way: the difference's interval spans zero
    assert got[("hf", "grammar")] == (
        "holds",
        "'constrained': 4 of 4 valid; all 4 also correct here: the truth was not put to the test",
    )
    assert got[("vllm", "grammar")] == (
        "holds",
        "'constrained': 4 of 4 valid; 2 of 4 valid answers have wrong values",
    )
    df.loc[(df.backend == "hf") & (df["mode"] == "constrained") & (df.case == "case=0"), "valid_json"] = False
    got = {
        (c.backend, c.claim.split()[1]): c.verdict
        for c in jx.claims(df, jx.pass_rates(df), jx.failure_counts(df))
    }
    assert got[("hf", "grammar")] == "does not hold"  # a count, not an estimate: one invalid reply decides


def test_counts_large_enough_decide_and_random_weights_decide_nothing():
    df = pd.concat(
        [calls().assign(case=lambda d, i=i: d["case"] + f"-{i}") for i in range(10)], ignore_index=True
    )
    df.loc[(df.backend == "hf") & (df["mode"] == "strict"), "valid_json"] = True
    rates, counts = jx.pass_rates(df), jx.failure_counts(df)
    got = {(c.backend, c.claim.split()[1]): c.verdict for c in jx.claims(df, rates, counts)}
    assert got[("hf", "prompts")] == "holds"  # 20 of 20 failures are fences: the interval is above one half
    assert got[("hf", "strict")] == "holds"  # 40 of 40 vs 20 of 40
    random = jx.claims(df, rates, counts, random_weights=True)
    assert {c.verdict for c in random if c.verdict != "not measured"} == {"not measurable: random weights"}
    assert any("40 of 40" in c.evidence for c in random)  # the counts are still shown
