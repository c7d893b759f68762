"""Benchmark 6 (benchmarks/hf_cb_configs.py) on the tiny model (CPU): a fresh manager per configuration, one
row each."""

from __future__ import annotations

import json

from benchmarks import hf_cb_configs


def test_each_configuration_runs_on_its_own_manager_and_the_fastest_is_named(
    tmp_path, tiny_model_dir, capsys
):
    out = tmp_path / "configs.json"
    assert (
        hf_cb_configs.main(
            [
                "--model",
                "tiny",
                "--device",
                "cpu",
                "--levels",
                "1",
                "2",
                "--prompt-tokens",
                "32",
                "--output-tokens",
                "4",
                "--config",
                "",
                "--config",
                "attn=eager",
                "--config",
                "no_such_field=1",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    rows = json.loads(out.read_text())["rows"]
    assert [r["config"] for r in rows] == ["(default)", "attn=eager", "no_such_field=1"]
    assert rows[0]["effective"]["attn_implementation"] == "sdpa"
    assert rows[1]["effective"]["attn_implementation"] == "paged|eager"
    assert "no_such_field" in rows[2]["error"]  # a configuration that fails is a row, the others ran
    for row in rows[:2]:
        assert [lv["concurrency"] for lv in row["levels"]] == [1, 2]
        assert all(not lv["errors"] and lv["step_ms_median"] > 0 for lv in row["levels"])
    best = max(rows[:2], key=lambda r: r["levels"][1]["output_tok_s"])
    capsys.readouterr()
    assert hf_cb_configs.main(["--fastest", str(out), "--at", "2"]) == 0
    assert capsys.readouterr().out.strip() == ("" if best["config"] == "(default)" else best["config"])
