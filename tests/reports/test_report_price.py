"""Issue 40's price range (``--gpu-hour-usd 2.5-7``): the cost table gets a row at each end, each equal to a
hand computation at its own price; the first screen's sizing row, the terminal, the page and the exports
carry both ends; one price reads as it always did.

The records are ``test_report_sizing``'s (KNEE and the two think-time populations)."""

from __future__ import annotations

import csv
import json

import pytest

from llm_call_anatomy.contract.price import parse_price
from llm_call_anatomy.reports.__main__ import main
from llm_call_anatomy.reports.size_ask import parse_size
from llm_call_anatomy.workloads.load.report.sizing_tables import money
from tests.reports.test_report_sizing import LAX, _load, _run, _thinkers

RANGE = "2.5-7"


def _by_hand(steady, usd: float) -> dict[str, float]:
    """The cost figures at ``usd`` a GPU-hour from a steady-window row (``cost.py``'s formulas, by hand)."""
    per_s = usd / 3600
    tin, tout = steady["input_tps"], steady["output_tps"]
    unit = per_s / (tin + 4 * tout)  # the GPU-second split at the output:input cost ratio 4
    return {
        "$ per M input tok": unit * 1e6,
        "$ per M output tok": 4 * unit * 1e6,
        "$ per M tok, blended": per_s / (tin + tout) * 1e6,
        "$ per request": per_s / steady["requests_per_s"],
        # more tok/s, a lower price: the interval's top end gives the low price
        "$ per M output tok, lo": 4 * unit * 1e6 * tout / steady["output_tps_hi"],
        "$ per M output tok, hi": 4 * unit * 1e6 * tout / steady["output_tps_lo"],
    }


def test_a_range_gives_a_cost_row_at_each_end_equal_to_a_hand_computation(tmp_path):
    _, sec = _load([_run(tmp_path, "r", {"slo_targets": LAX})], gpu_hour_usd=parse_price(RANGE))
    cost = sec.data["cost"]
    rows = cost[cost["target"] == "chat"]
    assert list(rows["$ a GPU-hour"]) == [2.5, 7.0] and set(rows["level"]) == {4}
    steady = sec.data["cap"]["steady"].set_index("case").loc["C=4"]
    for row in rows.to_dict("records"):
        for name, value in _by_hand(steady, row["$ a GPU-hour"]).items():
            assert row[name] == pytest.approx(value), name


def test_a_range_recorded_in_env_json_prices_both_ends_and_one_price_keeps_one_row(tmp_path):
    _, ranged = _load([_run(tmp_path, "a", {"slo_targets": LAX, "gpu_hour_usd": [2.5, 7.0]})])
    _, one = _load([_run(tmp_path, "b", {"slo_targets": LAX, "gpu_hour_usd": 3.5})])
    assert list(ranged.data["cost"].query("target == 'chat'")["$ a GPU-hour"]) == [2.5, 7.0]
    assert list(one.data["cost"].query("target == 'chat'")["$ a GPU-hour"]) == [3.5]
    [cap] = [r for r in ranged.data["cap"]["capacity"].to_dict("records") if r["target"] == "chat"]
    tps = cap["output_tps"]
    assert cap["cost_per_m"] == pytest.approx(2.5 / (3600 * tps) * 1e6)
    assert cap["cost_per_m_hi"] == pytest.approx(7.0 / (3600 * tps) * 1e6)
    [cap] = [r for r in one.data["cap"]["capacity"].to_dict("records") if r["target"] == "chat"]
    assert cap["cost_per_m"] == pytest.approx(3.5 / (3600 * tps) * 1e6) and cap["cost_per_m_hi"] is None


def test_the_sizing_row_on_the_first_screen_gives_both_ends_and_the_range(tmp_path):
    report, sec = _load(
        [_thinkers(tmp_path)], size=parse_size("users=100,think_s=30"), gpu_hour_usd=parse_price(RANGE)
    )
    [job] = [j for j in report.jobs if j.job.startswith("Sizing")]
    [(backend, text)] = job.values
    steady = sec.data["cap"]["steady"]
    at = steady[(steady["mode"] == "think=30") & (steady["case"] == "C=8")].iloc[0]  # 8 users a GPU
    low, high = _by_hand(at, 2.5), _by_hand(at, 7.0)
    ins = f"${money(low['$ per M input tok'])}–${money(high['$ per M input tok'])}"
    outs = f"${money(low['$ per M output tok'])}–${money(high['$ per M output tok'])}"
    assert backend == "vllm"
    assert text == f"13 GPUs [range 7–13]; {ins} / {outs} per M in / out at $2.50–7.00 a GPU-hour"


def test_one_price_keeps_the_sizing_row_as_it_was(tmp_path):
    report, _ = _load([_thinkers(tmp_path)], size=parse_size("users=100,think_s=30"), gpu_hour_usd=3.5)
    [job] = [j for j in report.jobs if j.job.startswith("Sizing")]
    [(_, text)] = job.values
    assert text.endswith(" per M in / out") and "GPU-hour" not in text


def test_the_terminal_the_page_and_the_exports_carry_both_ends(tmp_path, capsys):
    out = tmp_path / "out" / "report.html"
    argv = [str(_thinkers(tmp_path)), "-o", str(out), "--format", "html,json,csv"]
    assert main([*argv, "--size", "users=100,think_s=30", "--gpu-hour-usd", RANGE]) == 0
    printed = capsys.readouterr().out
    assert "cost at its capacity points, $ [5–95 %], at each end of the price range:" in printed
    for usd in ("2.50", "7.00"):
        assert f"vllm lf · think=30 closed at 8 (chat) at ${usd} a GPU-hour: $ per M input tok" in printed
    assert "per M in / out at $2.50–7.00 a GPU-hour" in out.read_text()  # the page's first screen
    page = out.read_text()
    assert "PRICE = $2.5–7 (--gpu-hour-usd)" in page and "$ a GPU-hour" in page
    with (out.parent / "csv" / "lf.cost.csv").open() as f:
        rows = [r for r in csv.DictReader(f) if r["variant"] == "lf · think=30"]
    assert [float(r["$ a GPU-hour"]) for r in rows] == [2.5, 7.0]
    low, high = (float(r["$ per M output tok"]) for r in rows)
    assert high == pytest.approx(low * 7.0 / 2.5)  # linear in the price, each end computed
    summary = json.loads((out.parent / "summary.json").read_text())
    [section] = [s for s in summary["workloads"] if s["name"] == "lf"]
    assert sorted({r["$ a GPU-hour"] for r in section["tables"]["cost"]}) == [2.5, 7.0]
    capacity = section["tables"]["capacity"]  # the page's cells: each capacity point's $ at both ends
    assert any("–" in r["$ per M tok"] for r in capacity if r["$ per M tok"])
