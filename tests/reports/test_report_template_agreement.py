"""Template analysis, agreement across backends at T=0, backend status and server timings."""

from __future__ import annotations

import pandas as pd
import pytest

from llm_call_anatomy.reports.analysis import agreement, status
from llm_call_anatomy.workloads.template.report import analysis as tpl
from tests.reports.records import record


def attention_probe(special_share: list[float], **extra) -> dict:
    """HF's attention probe of the template workload: the share of attention on the special tokens,
    layer by layer, and the probe's facts in ``extra``."""
    return record(
        backend="hf",
        workload="template",
        kind="template",
        mode="attention",
        case="q=0",
        prompt_tokens=42,
        attention_special_share=special_share,
        extra=extra,
    )


def test_clean_rates_samples_and_attention():
    rows = [
        record(
            backend="hf",
            workload="template",
            kind="template",
            mode=fmt,
            case=f"q={q}",
            clean=clean,
            output_text=text,
            finish_reason="stop",
        )
        for fmt, answers in (("chat", [True, True, False]), ("plain", [False, False, False]))
        for q, (clean, text) in enumerate(zip(answers, ["404", "443", "about 102"], strict=True))
    ]
    rows.append(attention_probe([0.5, 0.25], special_positions=7))
    df = pd.DataFrame(rows)
    rates = tpl.clean_rates(df).set_index("format")
    assert rates.loc["chat", "clean"] == 2 and rates.loc["chat", "n"] == 3 and rates.loc["plain", "rate"] == 0
    assert "attention" not in rates.index
    assert tpl.samples(df)["text"].tolist() == ["404", "404"]
    att = tpl.attention(df)
    assert (
        att["share"].tolist() == [0.5, 0.25]
        and att["layer"].tolist() == [0, 1]
        and att["special_positions"].iloc[0] == 7
    )


def _call(backend, ids, case="case=0", t=0.0, workload="json", mode="strict"):
    return record(
        backend=backend,
        workload=workload,
        kind="json",
        mode=mode,
        case=case,
        temperature=t,
        output_token_ids=ids,
    )


def test_agreement_first_divergence():
    df = pd.DataFrame(
        [
            _call("hf", [1, 2, 3, 4]),
            _call("vllm", [1, 2, 3, 4]),
            _call("sglang", [1, 2, 9, 4]),
            _call("hf", [5, 6], case="case=1"),
            _call("vllm", [7, 6], case="case=1"),  # sglang lacks case 1
            _call("hf", [1], t=1.0),
            _call("vllm", [2], t=1.0),  # sampled: not compared
        ]
    )
    cases = agreement.per_case(df, ["hf", "vllm", "sglang"])
    got = {
        (r.backend, r.case): (r.identical, None if pd.isna(r.first_divergence) else r.first_divergence)
        for r in cases.itertuples()
    }
    assert got == {
        ("vllm", "case=0"): (True, None),
        ("sglang", "case=0"): (False, 2),
        ("vllm", "case=1"): (False, 0),
    }
    summary = agreement.summary(cases).set_index("backend")
    assert (
        summary.loc["vllm", "identical"] == 1
        and summary.loc["vllm", "cases"] == 2
        and summary.loc["vllm", "share"] == 0.5
    )
    assert summary.loc["sglang", "median_divergence"] == 2
    assert summary.loc["vllm", "reference"] == "hf"


def test_agreement_needs_two_backends_and_uses_the_first_present_as_reference():
    df = pd.DataFrame([_call("vllm", [1]), _call("sglang", [1])])
    cases = agreement.per_case(df, ["hf", "vllm", "sglang"])
    assert cases["reference"].tolist() == ["vllm"]
    assert agreement.per_case(df[df.backend == "vllm"], ["hf", "vllm"]).empty


def test_status_and_notes():
    df = pd.DataFrame(
        [
            record(backend="hf", workload="conversation", mode="full", case="turn=1"),
            record(
                backend="hf", workload="conversation", mode="full", case="turn=2", error="RuntimeError: boom"
            ),
            record(
                backend="hf-graphs",
                workload="conversation",
                mode="cached",
                case=None,
                skipped="hf-graphs does not support prefix cache",
            ),
            record(
                backend="sglang", workload="conversation", case=None, skipped="sglang is not installed here"
            ),
        ]
    )
    st = {s.backend: s for s in status.backend_status(df, ["hf", "hf-graphs", "sglang", "vllm"])}
    assert (
        st["hf"].state == "partly" and st["hf"].errors == 1 and st["hf"].first_error == "RuntimeError: boom"
    )
    assert st["sglang"].state == "skipped" and st["sglang"].reasons() == ["sglang is not installed here"]
    assert st["vllm"].state == "no records"
    notes = status.workload_notes(df, "conversation")
    assert "hf-graphs: mode cached skipped: hf-graphs does not support prefix cache" in notes
    assert "sglang: the whole workload skipped: sglang is not installed here" in notes
    assert "hf: 1 of 2 requests failed: RuntimeError: boom" in notes


def test_server_timings():
    df = pd.DataFrame(
        [
            record(backend="vllm-server", workload="sweep", ttft_ms=12.0, extra={"server_ttft_ms": 9.5}),
            record(backend="vllm", workload="sweep", ttft_ms=10.0),
        ]
    )
    server = status.server_timings(df)
    assert server["backend"].tolist() == ["vllm-server"] and server["difference_ms"].tolist() == [2.5]


def _steps(*margins):
    """step_logprobs whose top-2 gap at each step is the given margin."""
    return [[[1, -0.1], [2, -0.1 - m]] for m in margins]


def test_agreement_margin_at_the_first_difference_tells_near_ties_from_clear_splits():
    df = pd.DataFrame(
        [
            {**_call("hf", [1, 2, 3]), "step_logprobs": _steps(2.0, 0.02, 1.0)},
            {**_call("vllm", [1, 5, 3]), "step_logprobs": _steps(2.0, 0.0, 1.0)},  # split at a near-tie
            {**_call("hf", [4, 4], case="case=1"), "step_logprobs": _steps(3.0, 3.0)},
            {
                **_call("vllm", [9, 4], case="case=1"),
                "step_logprobs": _steps(2.5, 3.0),
            },  # split at a clear margin
        ]
    )
    cases = agreement.per_case(df, ["hf", "vllm"]).set_index("case")
    assert cases.loc["case=0", "first_divergence"] == 1 and cases.loc[
        "case=0", "margin_reference"
    ] == pytest.approx(0.02)
    assert cases.loc["case=0", "same_first"] and not cases.loc["case=1", "same_first"]
    summary = agreement.summary(cases.reset_index(), agreement.flat_backends(df)).iloc[0]
    assert (summary["near_tie"], summary["clear"], summary["same_first"], summary["informative"]) == (
        1,
        1,
        1,
        True,
    )


def test_flat_logits_make_agreement_not_informative():
    flat = [[[1, -10.8], [2, -10.8]]]
    df = pd.DataFrame(
        [
            {**_call("vllm", [1]), "step_logprobs": flat},
            {**_call("sglang", [1]), "step_logprobs": flat},
            {**_call("hf", [3]), "step_logprobs": _steps(0.5)},
        ]
    )
    assert agreement.flat_backends(df) == {"vllm": True, "sglang": True, "hf": False}
    summary = agreement.summary(agreement.per_case(df, ["vllm", "sglang"]), agreement.flat_backends(df)).iloc[
        0
    ]
    assert not summary["informative"] and "flat logits on vllm, sglang" in summary["why"]
    # old runs: the json step-0 candidates tell the same
    old = pd.DataFrame(
        [{**_call("vllm", [1]), "top_candidates": [{"token_id": i, "logprob": -10.8} for i in range(3)]}]
    )
    assert agreement.flat_backends(old) == {"vllm": True}


def test_cached_vs_full_per_backend():
    rows = [
        record(
            backend="hf",
            workload="conversation",
            kind="conversation",
            mode=m,
            case="turn=1",
            turn=1,
            output_token_ids=ids,
            step_logprobs=_steps(1.0, 0.04),
        )
        for m, ids in (("full", [1, 2]), ("cached", [1, 3]))
    ]
    cases = agreement.cached_vs_full(pd.DataFrame(rows))
    assert cases[["backend", "reference", "same_first", "identical", "first_divergence"]].values.tolist() == [
        ["hf", "full", True, False, 1]
    ]
    assert agreement.split_kind(cases.iloc[0].to_dict()) == "near-tie"


def test_attention_sink_share_is_shown_apart():
    rows = [
        attention_probe([0.9, 0.5], special_positions=7, position0_share=[0.8, 0.3], position0_special=True)
    ]
    sink = tpl.sink(tpl.attention(pd.DataFrame(rows)))
    assert sink == pytest.approx({"share": 0.7, "position0": 0.55, "rest": 0.15})
