"""Issue 40: re-targeting recorded runs (``python compare.py report --slo``), sizing a fleet for U users who
think (``--size``), input and output priced apart (``--gpu-hour-usd``), and the exports holding those tables.

The records are fabricated as in ``test_report_capacity`` (KNEE: TTFT p90 100 / 150 / 300 / 900 ms at C=1,
2, 4, 8); a think-time population is a sessions-shape closed level whose level record carries ``users`` and
``think_time_s`` (level C = U users there)."""

from __future__ import annotations

import csv
import math

import pandas as pd
import pytest

from llm_call_anatomy.contract.slo import parse_targets
from llm_call_anatomy.reports.__main__ import main
from llm_call_anatomy.reports.assemble import assemble
from llm_call_anatomy.reports.runs import read_runs
from llm_call_anatomy.reports.size_ask import parse_size
from tests.reports.records import write_run
from tests.reports.test_report_capacity import GAP_S, KNEE, TOKENS, level

LAX = ["chat:ttft_p90_ms=500,tpot_p90_ms=50"]
STRICT = ["mychat:ttft_p90_ms=120,tpot_p90_ms=40"]
POOL = 1000  # the engine's KV pool, tokens (env.json kv_cache_tokens)


def _run(tmp_path, name, env, levels=KNEE, mode="S=0", think=None, backend="vllm"):
    rows = []
    for c, ms in levels.items():
        facts = {"users": c, "think_time_s": think, "think": "fixed"} if think is not None else None
        rows += level(backend, c, ms, facts=facts, mode=mode)
    return write_run(tmp_path / name, rows, env)


def _load(runs, **kw):
    report = assemble(read_runs(runs), **kw)
    return report, next(s for s in report.sections if s.kind == "load")


def _cells(sec) -> list[dict]:
    caps = sec.data["cap"]["capacity"]
    keep = ["backend", "workload", "mode", "loop", "target", "value", "bound", "next_up", "ratio", "limiter"]
    keep += ["decisions", "pass_at", "miss_at", "output_tps", "cost_per_m", "target_label"]
    return [{k: r[k] for k in keep} for r in caps.to_dict("records")]


# --- 1. re-targeting ----------------------------------------------------------------------------------------
def test_retargeting_a_recorded_run_equals_a_fresh_evaluation_cell_by_cell(tmp_path):
    recorded = _run(tmp_path / "a", "r", {"slo_targets": LAX, "gpu_hour_usd": 3.5})
    fresh = _run(tmp_path / "b", "r", {"slo_targets": STRICT, "gpu_hour_usd": 3.5})
    _, again = _load([recorded], targets=parse_targets(STRICT))
    _, own = _load([fresh])
    assert _cells(again) == _cells(own)
    assert [c["value"] for c in _cells(again)] == [1]  # 150 ms at C=2 misses 120 ms
    # goodput counts against the given target too, and the page says where the targets came from
    assert again.data["slo"] == {"ttft_ms": 120.0, "tpot_ms": 40.0}
    assert "given for this report" in again.data["cap"]["targets_source"]


def test_a_merged_report_counts_goodput_per_run_against_its_own_target(tmp_path):
    lax = _run(tmp_path, "r0", {"slo_targets": LAX})
    strict = _run(tmp_path, "r1", {"slo_targets": ["chat:ttft_p90_ms=120,tpot_p90_ms=40"]}, backend="sglang")
    _, sec = _load([lax, strict])
    by = sec.data["levels"].set_index(["backend", "case"])["slo_met"]
    assert by[("vllm", "C=4")] == 20  # 300 ms <= 500 ms: all but the first wave (3 s)
    assert by[("sglang", "C=4")] == 0  # 300 ms > 120 ms: none (one pair for the page counted 20)
    assert sec.data["goodput_of"] == {
        "vllm": {"ttft_ms": 500.0, "tpot_ms": 50.0},
        "sglang": {"ttft_ms": 120.0, "tpot_ms": 40.0},
    }
    _, given = _load([lax, strict], targets=parse_targets(STRICT))
    assert {tuple(t.spec() for t in ts) for ts in given.data["cap"]["targets_of"].values()} == {tuple(STRICT)}


def test_a_target_between_levels_gives_the_bracket_and_the_command_for_the_level_between(tmp_path):
    argv = ["--backend", "vllm", "--out", "/tmp/runs/r", "--workloads", "load", "--load", "users=8,rates=1"]
    recorded = _run(tmp_path, "r", {"slo_targets": LAX, "argv": argv})
    _, sec = _load([recorded], targets=parse_targets(["snappy:ttft_p90_ms=500"]))
    [row] = sec.data["cap"]["capacity"].to_dict("records")
    assert (row["value"], row["next_up"]) == (4, 8)
    between = row["between"]
    assert between["level"] == 6  # the geometric midpoint of 4 and 8, rounded
    cmd = between["command"]
    assert cmd.startswith("python compare.py --backend vllm")
    assert "--load users=8,rates=,levels=6,search_levels=0" in cmd and "--slo snappy:ttft_p90_ms=500" in cmd
    assert "--out /tmp/runs/r-C6" in cmd and "--resume" not in cmd.split("--out")[0]


def test_the_level_between_of_users_who_think_names_its_run_by_users():
    """A closed loop of users who think is U users, not C in flight: the new run's folder says U (-U724)."""
    from llm_call_anatomy.contract.slo import parse_target
    from llm_call_anatomy.workloads.load.report.retarget import command

    env = {"argv": ["--backend", "vllm-server", "--out", "/tmp/runs/t"], "run_id": "t"}
    chat = parse_target("chat:ttft_p90_ms=500")
    assert command(env, "vllm-server", {"loop": "closed", "think_s": 30.0}, 724, chat).endswith("t-U724")
    assert command(env, "vllm-server", {"loop": "closed", "think_s": 0.0}, 6, chat).endswith("t-C6")


def test_the_command_line_prints_the_level_between_under_its_own_slo(tmp_path, capsys):
    argv = ["--backend", "vllm", "--out", "/tmp/runs/r", "--workloads", "load"]
    run = _run(tmp_path, "r", {"slo_targets": LAX, "argv": argv})
    assert main([str(run), "-o", str(tmp_path / "x.html"), "--slo", "snappy:ttft_p90_ms=500"]) == 0
    printed = capsys.readouterr().out
    assert "lf: 1 brackets wider than 1.25× at the targets given" in printed
    assert "vllm lf · S=0 snappy C=4–C=8: python compare.py --backend vllm" in printed


# --- 2. sizing ----------------------------------------------------------------------------------------------
def _thinkers(tmp_path):
    """Two populations on one GPU: think 10 s (KNEE: C=4 users pass chat, C=8 miss) and think 30 s (the same
    latencies at twice the users: C=8 pass, C=16 miss)."""
    rows = []
    for c, ms in KNEE.items():
        rows += level("vllm", c, ms, facts={"users": c, "think_time_s": 10.0}, mode="think=10")
    for c, ms in {2: 100.0, 4: 150.0, 8: 300.0, 16: 900.0}.items():
        rows += level("vllm", c, ms, facts={"users": c, "think_time_s": 30.0}, mode="think=30")
    for r in rows:  # a sessions shape: each worker is a user, its 6 requests its turns
        r["user"] = r["rep"] // 6 if r["rep"] is not None else None
    return write_run(
        tmp_path / "t", rows, {"slo_targets": LAX, "backends": {"vllm": {"kv_cache_tokens": POOL}}}
    )


def _sizing(sec) -> dict:
    return {r["variant"]: r for r in sec.data["sizing"].to_dict("records")}


def _e2e_s(ttft_ms: float) -> float:
    return ttft_ms / 1e3 + (TOKENS - 1) * GAP_S  # a steady request of ``level``: TTFT then 3 gaps


def test_sizing_at_a_measured_think_time_reproduces_the_hand_computation(tmp_path):
    _, sec = _load([_thinkers(tmp_path)], size=parse_size("users=100,think_s=30"))
    [row] = sec.data["sizing"].to_dict("records")
    assert row["from"] == "measured" and row["target"] == "chat"
    assert row["users a GPU"] == 8 and row["GPUs"] == math.ceil(100 / 8) == 13
    assert (row["GPUs lo"], row["GPUs hi"]) == (math.ceil(100 / 16), 13)  # the first miss bounds it below
    # KV residency: 8 users a GPU x 100 prompt tokens each against a 1,000-token pool
    assert row["KV tokens a GPU"] == 800 and row["KV pool"] == POOL and row["KV fits"]


def test_sizing_between_two_think_times_is_littles_law_interpolated(tmp_path):
    _, sec = _load([_thinkers(tmp_path)], size=parse_size("users=100,think_s=20,slo=chat"))
    [row] = sec.data["sizing"].to_dict("records")
    assert row["from"] == "interpolated"
    # by hand: X_i = U_i / (Z_i + R_i) at each capacity level, X and R linear in Z, U = X (Z + R)
    r1, r2 = _e2e_s(300.0), _e2e_s(300.0)  # C=4 at think 10, C=8 at think 30: both 300 ms TTFT
    x1, x2 = 4 / (10 + r1), 8 / (30 + r2)
    x, r = (x1 + x2) / 2, (r1 + r2) / 2
    users = x * (20 + r)
    assert row["users a GPU"] == pytest.approx(users)
    assert row["GPUs"] == math.ceil(100 / users)
    assert "Little" in row["how"]
    # the range's far end from the first misses: C=8 at think 10 and C=16 at think 30, both at 900 ms
    m1, m2 = _e2e_s(900.0), _e2e_s(900.0)
    x_miss, r_miss = (8 / (10 + m1) + 16 / (30 + m2)) / 2, (m1 + m2) / 2
    assert row["users a GPU, hi"] == pytest.approx(x_miss * (20 + r_miss))
    assert row["GPUs lo"] == math.ceil(100 / (x_miss * (20 + r_miss))) and row["GPUs hi"] == row["GPUs"]


def test_size_outside_the_measured_think_times_says_so_and_gives_the_run_to_do(tmp_path):
    _, sec = _load([_thinkers(tmp_path)], size=parse_size("users=100,think_s=60"))
    [row] = sec.data["sizing"].to_dict("records")
    assert row["from"] == "outside" and pd.isna(row["GPUs"])
    assert "outside the measured think times (10–30 s)" in row["how"]
    assert "think_time_s=60" in row["how"] and "compare.py" in row["how"]


def test_size_asks_are_checked():
    assert parse_size("users=10000,think_s=30,slo=mychat") == parse_size(
        "users=10000, think_s=30 ,slo=mychat"
    )
    for bad in ("users=0,think_s=30", "users=10", "users=10,think_s=-1", "users=10,think_s=3,colour=red"):
        with pytest.raises(ValueError):
            parse_size(bad)


# --- 3. cost ------------------------------------------------------------------------------------------------
def test_input_and_output_priced_apart_with_intervals(tmp_path):
    _, sec = _load([_run(tmp_path, "r", {"slo_targets": LAX})], gpu_hour_usd=3.5)
    cost = sec.data["cost"].set_index("target").loc["chat"]
    steady = sec.data["cap"]["steady"].set_index("case").loc["C=4"]
    per_s = 3.5 / 3600
    tokens = steady["input_tps"] + steady["output_tps"]
    assert cost["$ per M tok, blended"] == pytest.approx(per_s / tokens * 1e6)
    # the GPU-second split at the output:input cost ratio 4 (GKE's default): input + 4 x output
    unit = per_s / (steady["input_tps"] + 4 * steady["output_tps"])
    assert cost["$ per M input tok"] == pytest.approx(unit * 1e6)
    assert cost["$ per M output tok"] == pytest.approx(4 * unit * 1e6)
    assert cost["$ per M output tok, lo"] <= cost["$ per M output tok"] <= cost["$ per M output tok, hi"]
    assert cost["$ per request"] == pytest.approx(per_s / steady["requests_per_s"])


# --- 4. exports and the command line ------------------------------------------------------------------------
def test_the_exports_hold_the_capacity_sizing_and_cost_tables(tmp_path, capsys):
    run = _thinkers(tmp_path)
    out = tmp_path / "out" / "report.html"
    rc = main(
        [
            str(run),
            "-o",
            str(out),
            "--format",
            "html,json,csv",
            "--slo",
            "mychat:ttft_p90_ms=1000,tpot_p90_ms=40",
        ]
        + ["--size", "users=100,think_s=30,slo=mychat", "--gpu-hour-usd", "3.5"]
    )
    assert rc == 0
    printed = capsys.readouterr().out
    assert "GPUs for 100 users at a 30 s think, mychat" in printed
    folder = out.parent / "csv"
    with (folder / "lf.capacity.csv").open() as f:
        header = next(csv.reader(f))
    assert "capacity" in header and "deciding percentile [5–95 %] at both ends" in header
    for name in ("lf.sizing.csv", "lf.cost.csv"):
        assert (folder / name).exists()
    page = out.read_text()
    assert "given for this report" in page and "GPUs for 100 users" in page


@pytest.mark.parametrize("bad", [["--size", "users=ten,think_s=3"], ["--slo", "chat:ttft_p90_ms=fast"]])
def test_bad_asks_exit_2(tmp_path, bad, capsys):
    run = _run(tmp_path, "r", {"slo_targets": LAX})
    with pytest.raises(SystemExit) as exit_:
        main([str(run), "-o", str(tmp_path / "x.html"), *bad])
    assert exit_.value.code == 2


def test_the_summary_rows_are_retargeted_too(tmp_path):
    report, _ = _load([_run(tmp_path, "r", {"slo_targets": LAX})], targets=parse_targets(STRICT))
    figures = {j.figure for j in report.jobs if j.job.startswith("Many users")}
    assert any("mychat" in f for f in figures) and not any("within chat" in f for f in figures)


def test_an_unnamed_one_key_target_is_custom_and_the_json_export_holds_the_tables(tmp_path):
    import json

    out = tmp_path / "o" / "report.html"
    run = _run(tmp_path, "r", {"slo_targets": LAX})
    assert main([str(run), "-o", str(out), "--format", "html,json", "--slo", "ttft_p90_ms=1000"]) == 0
    summary = json.loads((out.parent / "summary.json").read_text())
    [section] = [s for s in summary["workloads"] if s["name"] == "lf"]
    capacity = section["tables"]["capacity"]
    assert [r["target"] for r in capacity] == ["custom"] and "capacity" in capacity[0]
    assert "given for this report (python compare.py report --slo custom:ttft_p90_ms=1000)" in out.read_text()


def test_the_summary_answers_the_sizing_first(tmp_path):
    report, _ = _load([_thinkers(tmp_path)], size=parse_size("users=100,think_s=30"), gpu_hour_usd=3.5)
    [job] = [j for j in report.jobs if j.job.startswith("Sizing")]
    assert job.job == "Sizing: GPUs for 100 users at a 30 s think, the first latency target (lf)"
    [(backend, text)] = job.values
    assert backend == "vllm" and text.startswith("13 GPUs [range 7–13]; $") and "per M in / out" in text


def test_size_at_a_target_no_run_has_says_so(tmp_path, capsys):
    run = _thinkers(tmp_path)
    assert main([str(run), "-o", str(tmp_path / "x.html"), "--size", "users=100,think_s=30,slo=mychat"]) == 0
    printed = capsys.readouterr().out
    assert "no target named 'mychat' (the targets: chat; --slo NAME:... adds one)" in printed


def test_the_page_names_each_columns_goodput_target_when_they_differ(tmp_path):
    from llm_call_anatomy.reports import build

    lax = _run(tmp_path, "r0", {"slo_targets": LAX})
    strict = _run(tmp_path, "r1", {"slo_targets": ["chat:ttft_p90_ms=120,tpot_p90_ms=40"]}, backend="sglang")
    page = build([lax, strict], tmp_path / "report.html").read_text()
    assert "met each column's own run's SLO (vllm: <b>TTFT ≤ 500 ms and TPOT ≤ 50 ms</b>; sglang:" in page


def test_a_floor_sizes_at_most(tmp_path, capsys):
    rows = []
    for c, ms in KNEE.items():  # agent (TTFT p90 <= 2 s) holds at every level: a floor at C=8
        rows += level("vllm", c, ms, facts={"users": c, "think_time_s": 10.0}, mode="think=10")
    for r in rows:
        r["user"] = r["rep"] // 6 if r["rep"] is not None else None
    run = write_run(tmp_path / "f", rows, {"slo_targets": ["agent:ttft_p90_ms=2000,tpot_p90_ms=100"]})
    assert main([str(run), "-o", str(tmp_path / "x.html"), "--size", "users=100,think_s=10"]) == 0
    out = capsys.readouterr().out
    assert "13 GPUs (at most 13: no miss measured above 8 users)" in out
    # the run that would find the limit: this run's command at the population and twice it, no search
    assert "at most: measure U=8 and U=16 in one run (a bracket of its own): python compare.py" in out
    assert "levels=8:16," in out and "search_levels=0" in out and "--slo agent:" in out


def test_under_the_reports_own_slo_a_run_whose_targets_do_not_parse_is_no_caveat(tmp_path):
    run = _run(tmp_path, "old", {"slo_targets": ["chat:ttft_p90_ms=fast"]})
    report, sec = _load([run], targets=parse_targets(STRICT))
    assert sec.data["cap"]["targets_note"] is None
    assert not [c for c in report.caveats if c.topic == "targets"]
    assert [r["value"] for r in _cells(sec)] == [1]


def test_sizing_on_young_users_gives_no_count_and_the_run_again(tmp_path):
    """The think-30 population of ``_thinkers``, but each user's 6 requests are turns 1-2 of a planned 10
    (every user started with the level): every level is undecided (young users), so no GPU count, and the
    row prints the run that measures them again (a new run starts users where a long-running population
    is)."""
    rows = []
    for c, ms in {2: 100.0, 4: 150.0, 8: 300.0, 16: 900.0}.items():
        facts = {"users": c, "think_time_s": 30.0, "requests_planned": 10 * c}
        rows += level("vllm", c, ms, facts=facts, mode="think=30")
    for r in rows:
        if r["rep"] is not None:
            r["user"], r["turn"] = r["rep"] // 6, 1 + (r["rep"] % 6) // 3
    run = write_run(
        tmp_path / "young", rows, {"slo_targets": LAX, "argv": ["compare.py", "--out", "runs/young"]}
    )
    _, sec = _load([run], size=parse_size("users=100,think_s=30"))
    [row] = sec.data["sizing"].to_dict("records")
    assert pd.isna(row["GPUs"]) and "no GPU count" in row["how"]
    assert "undecided at U=2, 4, 8, 16 (young users" in row["how"]
    assert "compare.py" in row["how"] and "levels=2:4:8:16" in row["how"]
