"""The Load section's capacity half from hand-made closed-loop levels whose answers are known: a TTFT that
grows with the load (the chat target's knee between C=4 and C=8), the first wave apart, energy and cost,
caching on vs off from two runs, a level another backend ran shown as not run, and an old run's partial
--slo no longer crashing the report."""

from __future__ import annotations

import pytest

from llm_call_anatomy.reports import build
from llm_call_anatomy.reports.assemble import assemble
from llm_call_anatomy.reports.runs import read_runs
from tests.reports.records import load_level, load_request, write_run

TOKENS, GAP_S = 4, 0.020  # TPOT 20 ms: 50 tok/s a user


def level(
    backend: str, c: int, ttft_ms: float, waves: int = 6, facts: dict | None = None, mode: str = "S=0"
) -> list[dict]:
    """C workers back to back for ``waves`` requests each: the first wave cold (TTFT 3 s), then
    ``ttft_ms``."""
    out, rep = [], 0
    for _ in range(c):
        t = 0.0
        for k in range(waves):
            ttft = 3000.0 if k == 0 else ttft_ms
            first = t + ttft / 1e3
            times = [first + i * GAP_S for i in range(TOKENS)]
            out.append(
                load_request(
                    backend,
                    c,
                    rep,
                    t,
                    times,
                    mode=mode,
                    ttft_ms=ttft,
                    decode_ms_per_token=GAP_S * 1e3,
                    e2e_ms=(times[-1] - t) * 1e3,
                    output_token_ids=[1] * TOKENS,
                    prompt_tokens=100,
                    shared_prefix_tokens=0,
                )
            )
            rep += 1
            t = times[-1]
    level_facts = {
        "served_as": "batched by the engine",
        "requests_planned": rep,
        "requests_started": rep,
        **(facts or {}),
    }
    out.append(load_level(backend, c, level_facts, mode=mode))
    return out


KNEE = {1: 100.0, 2: 150.0, 4: 300.0, 8: 900.0}  # chat: TTFT p90 <= 500 ms holds to C=4


def run(tmp_path, name, backend="vllm", scale=1.0, env=None, facts=None, levels=KNEE):
    rows = [r for c, ms in levels.items() for r in level(backend, c, ms * scale, facts=facts)]
    return write_run(tmp_path / name, rows, env)


def section(runs):
    report = assemble(read_runs(runs))
    return report, next(s for s in report.sections if s.kind == "load")


def caps(sec):
    return sec.data["cap"]["capacity"].set_index(["backend", "target"])


def test_the_capacity_within_each_target_and_what_limited_it(tmp_path):
    energy = {"gpu_energy_j": 48.0, "gpu_power_w_mean": 400.0}
    _, sec = section([run(tmp_path, "r", env={"gpu_hour_usd": 3.6}, facts=energy)])
    c = caps(sec)
    chat = c.loc[("vllm", "chat")]
    assert (chat["value"], chat["bound"], chat["next_up"]) == (
        4,
        "bracket",
        8,
    )  # 5-7 not measured: no search here
    assert (
        chat["limiter"] == "TTFT p90 900 ms > 500 ms (n=40)"
    )  # C=8: 8 x 6 requests less the first wave of 8
    agent = c.loc[("vllm", "agent")]
    assert (agent["value"], agent["bound"]) == (8, "floor")  # 900 ms <= 2 s at the highest level: a floor
    steady = sec.data["cap"]["steady"].set_index("case")
    c4 = steady.loc["C=4"]
    # the first wave (4 requests at 3 s) is apart: the steady TTFT is 300 ms throughout, the first wave's 3 s
    assert (c4["first_n"], c4["n_steady"], c4["ttft_p99"], c4["first_ttft_p50"]) == (4, 20, 300.0, 3000.0)
    assert c4["per_user_tps"] == pytest.approx(50.0) and c4["small_p99"]
    # a record without the energy series: the whole level's energy, under its own name; no steady figure
    assert c4["energy_j_per_1k_level"] == pytest.approx(48.0 / (24 * TOKENS) * 1000)
    assert c4["energy_j_per_1k_steady"] is None
    assert chat["cost_per_m"] == pytest.approx(3.6 / (3600 * c4["output_tps"]) * 1e6)
    assert c.loc[("vllm", "batch")]["bound"] == "peak"
    assert sec.data["cap"]["via"] == {"vllm": "in process"}


def test_caching_on_and_off_as_ratios_at_the_same_levels(tmp_path):
    on = run(tmp_path, "on")
    off = run(tmp_path, "off", scale=2.0, env={"prefix_caching": False})
    _, sec = section([on, off])
    ratios = sec.data["cap"]["caching"]
    level_rows = ratios[ratios["what"] == "level"].set_index("case")
    assert level_rows.loc["C=4", "ttft_ratio"] == pytest.approx(2.0)  # TTFT p50 off ÷ on
    capacity = ratios[ratios["what"] == "capacity"].set_index("case")
    assert capacity.loc["closed · chat", "capacity_ratio"] == pytest.approx(
        4 / 2
    )  # off: 300 ms at C=2, 600 at C=4


def test_a_level_another_backend_ran_shows_as_not_run_and_telemetry_says_why(tmp_path):
    rows = [
        r
        for c, ms in KNEE.items()
        for r in level("vllm", c, ms, facts={"gpu_telemetry": "not measured: no GPU"})
    ]
    rows += [r for c, ms in {1: 100.0, 2: 150.0}.items() for r in level("hf-cb", c, ms)]
    page = build([write_run(tmp_path / "r", rows)], tmp_path / "report.html").read_text()
    assert "not run for this backend" in page and "GPU telemetry: not measured: no GPU" in page
    assert "cost per million output tokens = PRICE" in page and "no --gpu-hour-usd given" in page


def test_an_old_runs_partial_slo_takes_the_rest_from_the_default(tmp_path):
    from llm_call_anatomy.reports.__main__ import main

    path = run(
        tmp_path, "old", env={"slo": {"ttft_ms": 500}}
    )  # what --slo ttft_ms=500 wrote before it was refused
    assert main([str(path), "--out", str(tmp_path / "report.html")]) == 0
    _, sec = section([path])
    assert sec.data["slo"] == {"ttft_ms": 500.0, "tpot_ms": 200.0}


def test_the_load_page_has_its_own_header_slo_rules_and_dashed_legends(tmp_path):
    from llm_call_anatomy.workloads.load.report.charts import CHARTS

    path = run(tmp_path, "r")
    page = build([path], tmp_path / "report.html").read_text()
    assert "every figure is one load level's steady state" in page and "median over repeats" not in page
    report, sec = section([path])
    spec = CHARTS["ttft"][0](sec.data, report)
    layers = spec["spec"]["layer"]
    assert (
        layers[0]["encoding"]["strokeDash"]["legend"]["symbolType"] == "stroke"
    )  # the legend shows the dashes
    rules = [v["ms"] for v in spec["data"]["values"] if v["layer"] == "target"]
    assert (
        sorted(set(rules)) == [500.0, 2000.0] and layers[1]["mark"]["type"] == "rule"
    )  # chat's and agent's TTFT


def test_a_level_run_with_other_requests_is_named_and_not_compared(tmp_path):
    rows = [r for c, ms in KNEE.items() for r in level("vllm", c, ms)]
    rows += [r for r in level("hf-cb", 4, 300.0, waves=2)]  # a scaled hf-cb: 2 requests a worker, not 6
    report = assemble(read_runs([write_run(tmp_path / "r", rows)]))
    texts = " ".join(c.text for c in report.caveats)
    assert (
        "lf · S=0 C=4: hf-cb (8 requests, mean prompt 100 tokens) ran other requests than vllm (24 requests"
        in texts
    )
    jobs = {j.job: [b for b, _ in j.values] for j in report.jobs}
    assert jobs["Many users: chat (lf · S=0)"] == ["vllm"]  # hf-cb's capacity is in a row of its own
    assert jobs["Many users: chat (lf · S=0; other requests: hf-cb)"] == ["hf-cb"]
    assert not any(
        j.job.startswith("Many users: throughput") for j in report.jobs
    )  # no common level with one mix


def test_the_reports_own_price_gives_the_cost_and_a_bad_one_is_refused(tmp_path, capsys):
    from llm_call_anatomy.reports.__main__ import main

    path = run(tmp_path, "r")
    page = build([path], tmp_path / "report.html", gpu_hour_usd=2.0).read_text()
    assert "PRICE = $2 (--gpu-hour-usd)" in page
    for bad in ("0", "-1", "nan"):
        with pytest.raises(SystemExit) as exc:
            main([str(path), "--gpu-hour-usd", bad])
        assert exc.value.code == 2
    assert "--gpu-hour-usd" in capsys.readouterr().err


def test_a_server_column_is_served_over_http():
    import pandas as pd

    from llm_call_anatomy.workloads.load.report.capacity_tables import capacity_table

    caps = pd.DataFrame(
        [
            {
                "backend": "vllm-server",
                "workload": "lf",
                "mode": "S=0",
                "loop": "closed",
                "target": "chat",
                "value": 4.0,
                "bound": "exact",
                "next_up": 5.0,
                "limiter": "x",
                "non_monotone": False,
                "output_tps": 1.0,
                "per_user_tps": 1.0,
                "cost_per_m": None,
            }
        ]
    )
    t = capacity_table(caps, {"vllm-server": "HTTP"})
    assert t.rows[0][2] == "HTTP" and t.rows[0][5] == "C=4 (C=5 missed)"


def test_a_planned_level_and_a_floor_read_as_such_not_as_nan(tmp_path):
    """pandas 3 stores a column of strings and None as str, NaN for None: a planned level (searched_for None
    beside a level the search added) and a target that no level missed (no limiter beside one that has one)
    must not print "nan" (seen in the CPU rehearsal of the capacity sitting: "added by the search (nan)" on
    every planned level)."""
    from llm_call_anatomy.workloads.load.report.capacity_tables import capacity_table, steady_table

    rows = [
        r
        for c, ms in KNEE.items()
        for r in level("vllm", c, ms, facts={"searched_for": "chat" if c == 8 else None})
    ]
    _, sec = section([write_run(tmp_path / "r", rows)])
    cap = sec.data["cap"]
    cases = {("lf", "S=0"): [f"C={c}" for c in KNEE]}
    table = steady_table(cap["steady"], "vllm", cases)
    notes = {row[1].removeprefix("closed "): row[-1] for row in table.rows}
    assert notes["C=8"].startswith("added by the search (chat)")
    assert not any("added by the search" in notes[f"C={c}"] for c in (1, 2, 4)), notes
    limiters = {row[4]: row[8] for row in capacity_table(cap["capacity"]).rows}
    assert limiters["chat"].startswith("TTFT p90 900 ms") and limiters["agent"] == "", limiters


def test_the_caller_minus_engine_ttft_caveat_names_http_only_for_a_server(tmp_path):
    """The caveat on the caller's TTFT above the engine's own said "(HTTP, queueing and detokenisation)" for
    every backend, in-process vLLM and SGLang too (every committed H200 page, and the CPU rehearsal of the
    capacity sitting): only a server's column has HTTP in that gap."""
    rows = []
    for backend in ("vllm", "vllm-server"):
        for r in level(backend, 2, 150.0):
            if r.get("rep") is not None:
                r["engine_ttft_ms"] = r["ttft_ms"] - 2.0
            rows.append(r)
    # the env fact that tells a server's column (every OpenAI-compatible adapter writes its server's URL)
    env = {
        "backends": {"vllm": {"engine": {}}, "vllm-server": {"engine": {"base_url": "http://127.0.0.1:1/v1"}}}
    }
    report = assemble(read_runs([write_run(tmp_path / "r", rows, env)]))
    texts = {c.text.split(":")[0]: c.text for c in report.caveats if "TTFT 2 ms" in c.text}
    assert set(texts) == {"vllm", "vllm-server"}, texts
    assert "HTTP" in texts["vllm-server"] and "server's own figure" in texts["vllm-server"]
    assert (
        "HTTP," not in texts["vllm"]
        and "engine's own figure" in texts["vllm"]
        and "in process" in texts["vllm"]
    )


def test_capacity_on_and_off_is_no_ratio_of_two_floors_nor_of_peak_levels(tmp_path):
    """Where every level met a target with the cache on and off, both capacities are floors ("≥ C=8"): their
    quotient, 1.00, read as "caching buys no capacity" (the CPU rehearsal of the capacity sitting: every row).
    A floor on one side bounds the ratio from that side; batch's "capacity" is the level of peak tok/s, no
    capacity at all (the levels' tok/s on ÷ off say what caching buys there)."""
    from llm_call_anatomy.workloads.load.report.caching_tables import caching_table

    def capacity_cells(off_scale):
        on = run(tmp_path / f"x{off_scale}", "on")
        off = run(tmp_path / f"x{off_scale}", "off", scale=off_scale, env={"prefix_caching": False})
        _, sec = section([on, off])
        return {row[2]: row[5] for row in caching_table(sec.data["cap"]["caching"]).rows if "·" in row[2]}

    cells = capacity_cells(2.0)
    assert cells["closed · chat"] == "2.00"  # C=4 on, C=2 off: both measured
    assert cells["closed · agent"] == "– (both ≥ C=8: every level met it)", cells  # 900 and 1,800 ms < 2 s
    assert "closed · batch" not in cells
    cells = capacity_cells(3.0)  # off: 2,700 ms at C=8 misses agent's 2 s, 900 ms at C=4 meets it
    assert cells["closed · agent"] == "≥ 2.00", cells  # on: at least C=8 (a floor) against C=4


def test_a_load_only_page_defines_ttft_from_the_submit_not_after_a_cache_reset(tmp_path):
    """The first screen's "How TTFT is compared" said "after the untimed cache reset" on a page of load levels
    only (the CPU rehearsal of the capacity sitting; the h200-load page): a load level resets the cache before
    its warm-up, not before each request, and its TTFT runs from the request's submit."""
    page = build([run(tmp_path, "r")], tmp_path / "report.html").read_text()
    head = page[page.index("How TTFT is compared") :][:600]
    assert "after the untimed cache reset" not in head and "submit" in head, head


def test_a_sessions_loads_poisson_rate_is_of_sessions_not_requests(tmp_path):
    """An open-loop level of a sessions load starts sessions at Poisson arrivals (backends.load_loop), each of
    several turns: its rate is sessions/s; it read 'req/s' (the CPU rehearsal of the capacity sitting: '≥ 8
    req/s' where 16 requests came in 0.7 s; on the H200, 8 sessions/s of 10 turns offer up to 80 req/s)."""
    from llm_call_anatomy.workloads.load.report.capacity_tables import capacity_table

    rows = []
    for mode, users in (("sessions", True), ("S=0", False)):
        for r in level("vllm", 2, 150.0, mode=mode):
            r.update(load_concurrency=None, load_rate_rps=4.0, case="rate=4")
            if users and r.get("rep") is not None:
                r["user"] = r["rep"] // 3  # sessions of 3 turns
            rows.append(r)
    _, sec = section([write_run(tmp_path / "r", rows)])
    cells = {(row[0], row[4]): row[5] for row in capacity_table(sec.data["cap"]["capacity"]).rows}
    # no planned submit times (a level recorded before them): nothing says the arrivals were the rate, so
    # the level is not offered as planned, never a pass (issue 39), named in the level's unit
    assert cells[("lf · sessions", "agent")] == "none (not offered as planned at 4 sessions/s)", cells
    assert cells[("lf · S=0", "agent")] == "none (not offered as planned at 4 req/s)", cells
    assert cells[("lf · sessions", "batch")] == "peak tok/s at 4 sessions/s", cells


def test_a_level_whose_every_request_is_in_its_first_wave_reads_not_judged_not_met(tmp_path):
    """A fixed-shape level of C requests at C in flight (the H200 HF mix at C=32: requests=32) has no
    steady-state request: no target can judge it. The capacity read "≥ C=4 (every level tested met it)" with
    C=8 tested (rehearsed on CPU: hf-cb at C=4 with requests=4)."""
    from llm_call_anatomy.workloads.load.report.capacity_tables import capacity_table

    rows = [r for c, ms in {1: 100.0, 2: 150.0, 4: 300.0}.items() for r in level("vllm", c, ms)]
    rows += level("vllm", 8, 900.0, waves=1)  # 8 requests at C=8: all of them the first wave
    _, sec = section([write_run(tmp_path / "r", rows)])
    cells = {row[4]: row[5] for row in capacity_table(sec.data["cap"]["capacity"]).rows}
    assert cells["chat"] == (
        "no miss up to C=4 (C=8 not judged: no steady-state request, all in its first wave)"
    ), cells


def test_a_level_meeting_the_target_above_a_miss_is_named_non_monotone_beside_an_exact_capacity(tmp_path):
    """chat met at C=1, missed at C=2, met again at C=4: the capacity is C=1, exact (C=2 is the next
    integer), and the row says non-monotone; its tok/s, energy and cost are those of C=1's level."""
    from llm_call_anatomy.workloads.load.report.capacity_tables import capacity_table

    knee = {1: 100.0, 2: 900.0, 4: 300.0, 8: 900.0}
    energy = {"gpu_energy_j": 48.0}
    _, sec = section([run(tmp_path, "r", env={"gpu_hour_usd": 3.6}, facts=energy, levels=knee)])
    chat = caps(sec).loc[("vllm", "chat")]
    assert (chat["value"], chat["bound"], chat["next_up"], chat["non_monotone"]) == (1, "exact", 2, True)
    c1 = sec.data["cap"]["steady"].set_index("case").loc["C=1"]
    assert (chat["output_tps"], chat["energy_j_per_1k_level"]) == (
        c1["output_tps"],
        c1["energy_j_per_1k_level"],
    )
    assert chat["cost_per_m"] == pytest.approx(3.6 / (3600 * c1["output_tps"]) * 1e6)
    assert not caps(sec).loc[("vllm", "agent")]["non_monotone"]
    text = {row[4]: row[5] for row in capacity_table(sec.data["cap"]["capacity"]).rows}
    assert text["chat"] == "C=1 (C=2 missed) · non-monotone" and "non-monotone" not in text["agent"], text


def test_a_column_run_with_caching_off_beside_columns_with_it_on_is_named(tmp_path):
    """The merged capacity page held hf-cb with caching off beside servers with it on, and nothing on the
    page said so: a caveat names both sides. Columns all on (or all off) need none."""
    rows = [r for c, ms in KNEE.items() for r in level("vllm", c, ms)]
    rows += [{**r, "workload": "ls"} for r in level("vllm", 2, 100.0)]  # a second load section
    vllm = write_run(tmp_path / "vllm-on", rows)
    hf_rows = [r for c, ms in KNEE.items() for r in level("hf-cb", c, ms)]
    hf_rows += [{**r, "workload": "ls"} for r in level("hf-cb", 2, 100.0)]
    hf_off = write_run(tmp_path / "hf-off", hf_rows, {"prefix_caching": False})
    report, _ = section([vllm, hf_off])
    assert sum(s.kind == "load" for s in report.sections) == 2
    texts = [c.text for c in report.caveats if "prefix caching off" in c.text]
    assert (
        texts and texts[0].startswith("hf-cb ran with prefix caching off") and "vllm with it on" in texts[0]
    )
    assert len(texts) == 1  # a page-wide fact: said once, not once a load section
    report, _ = section([vllm, run(tmp_path, "hf-on", backend="hf-cb")])
    assert not any("prefix caching off" in c.text for c in report.caveats)


def test_a_cpu_runs_capacity_is_the_machines_and_says_no_gpu_energy(tmp_path):
    """A run on a CPU names what one capacity is of (the machine, not a GPU) and says energy was not measured,
    instead of printing NVML's error (issue 43); a GPU run keeps both."""
    from collections import defaultdict

    from llm_call_anatomy.workloads.load.report.capacity_blocks import blocks

    why = {"gpu_telemetry": "not measured: NVML Shared Library Not Found"}
    rows = [r for c, ms in KNEE.items() for r in level("vllm", c, ms, facts=why)]
    texts = {}
    for device in ("cpu", "cuda"):
        _, sec = section([write_run(tmp_path / device, rows, {"device": device})])
        slots = defaultdict(lambda: None)  # no charts here: the words only
        texts[device] = [
            str(b.text) for b in blocks(sec.data, sec.backends, slots) if b and b.kind in ("h3", "muted")
        ]
    cpu, gpu = " ".join(texts["cpu"]), " ".join(texts["cuda"])
    assert "How many users one machine holds, per target" in cpu and "one GPU holds" not in cpu
    assert "Energy: not measured" in cpu and "NVML Shared Library" not in cpu
    assert "How many users one GPU holds, per target" in gpu and "NVML Shared Library Not Found" in gpu
