"""Charts whose x axis has one value (one temperature, prompt length, turn, layer or load level) draw bars,
one per series; with two values or more they stay lines. Built from hand-made records through the analysis."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from llm_call_anatomy.reports.runs import read_runs
from llm_call_anatomy.workloads.conversation.report import charts as conversation_charts
from llm_call_anatomy.workloads.json.report import analysis as jx
from llm_call_anatomy.workloads.json.report import charts as json_charts
from llm_call_anatomy.workloads.load.report import charts as mv
from llm_call_anatomy.workloads.load.report import levels as mu
from llm_call_anatomy.workloads.sweep.report import analysis as sw
from llm_call_anatomy.workloads.sweep.report import charts as sweep_charts
from llm_call_anatomy.workloads.template.report import charts as template_charts
from tests.reports.records import record, sweep_records, write_run
from tests.reports.test_report_many_users import level_records


def marks(spec: Any) -> set[str]:
    """Every mark type anywhere in a Vega-Lite spec."""
    out: set[str] = set()
    if isinstance(spec, dict):
        for key, value in spec.items():
            if key == "mark":
                out.add(value if isinstance(value, str) else value["type"])
            else:
                out |= marks(value)
    elif isinstance(spec, list):
        for value in spec:
            out |= marks(value)
    return out


def json_rows(temperatures) -> pd.DataFrame:
    rows = []
    for t in temperatures:
        for mode in ("free", "strict", "constrained"):
            for case in range(4):
                rows.append(
                    record(
                        backend="hf",
                        workload="json",
                        kind="json",
                        mode=mode,
                        case=f"case={case}",
                        rep=case,
                        temperature=t,
                        valid_json=case < (3 if mode == "constrained" else 1),
                        e2e_ms=10.0,
                        decode_ms_per_token=1.0,
                        output_text="{}",
                        finish_reason="stop",
                    )
                )
    return pd.DataFrame(rows)


@pytest.mark.parametrize("temperatures,expected", [((0.0,), {"bar"}), ((0.0, 1.0), {"line"})])
def test_json_pass_rate_at_one_temperature_is_bars(temperatures, expected):
    spec = json_charts.json_pass(jx.pass_rates(json_rows(temperatures)))
    assert marks(spec) == expected
    if expected == {"bar"}:
        assert "temperature 0" in str(spec)  # the one value is said in the axis title


@pytest.mark.parametrize("lengths,expected", [((256,), "bar"), ((64, 256), "line")])
def test_sweep_at_one_prompt_length_is_bars(tmp_path, lengths, expected):
    run = write_run(
        tmp_path / "run",
        sweep_records("hf", 10.0, 0.1, 2.0, lengths=lengths)
        + sweep_records("vllm", 12.0, 0.05, 1.5, lengths=lengths),
    )
    ds = read_runs([run])
    per = sw.per_length(ds.measured())
    for phase in ("prefill", "decode"):
        assert marks(sweep_charts.sweep_phase(per, {}, phase, ds.backends)) & {"bar", "line"} == {expected}


def test_conversation_with_one_turn_is_bars():
    turns = pd.DataFrame(
        [
            {
                "backend": "hf",
                "mode": m,
                "turn": 1,
                "ttft_med": 10.0,
                "ttft_q1": 9.0,
                "ttft_q3": 11.0,
                "ttft_n": 3,
                "prompt_tokens": 100,
            }
            for m in ("full", "cached")
        ]
    )
    assert marks(conversation_charts.conversation_ttft(turns)) == {"bar", "errorbar"}
    two = pd.concat([turns, turns.assign(turn=2)])
    assert "line" in marks(conversation_charts.conversation_ttft(two)) and "bar" not in marks(
        conversation_charts.conversation_ttft(two)
    )


def test_attention_on_one_layer_is_bars():
    one = pd.DataFrame([{"backend": b, "layer": 0, "share": 0.3} for b in ("hf", "vllm")])
    assert marks(template_charts.attention(one, ["hf", "vllm"])) == {"bar"}
    assert marks(template_charts.attention(pd.concat([one, one.assign(layer=1)]), ["hf", "vllm"])) == {"line"}


@pytest.mark.parametrize("levels,expected", [((1,), "bar"), ((1, 4), "line")])
def test_load_with_one_level_is_bars(tmp_path, levels, expected):
    rows = [r for c in levels for b in ("hf", "vllm") for r in level_records(b, c, 1.0, "batched")]
    ds = read_runs([write_run(tmp_path / "run", rows)])
    per = mu.per_level(ds.records)
    for value in ("output_tps", "rps", "goodput_rps"):
        assert marks(mv.per_level_chart(per, ds.backends, value, value)) == {expected}
    assert marks(mv.percentiles_chart(per, ds.backends, "ttft", (50, 90, 99), "TTFT")) == {expected}
