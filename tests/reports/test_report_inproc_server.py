"""An engine in process beside its own server (workloads/load/report/inproc_server.py, issue 39): where their
capacities disagree, the page says at which level, and splits each side's TTFT into the engine's queue, the
engine after its queue and what lies outside the engine, from the records (the in-process requests' engine
timestamps, the server's /metrics histograms); the summary then puts the server's value first."""

from __future__ import annotations

from llm_call_anatomy.reports import build
from llm_call_anatomy.reports.assemble import assemble
from llm_call_anatomy.reports.runs import read_runs
from tests.reports.records import load_level, load_request, write_run

TOKENS, GAP_S, WAVES = 4, 0.020, 6
HTTP_ENGINE = {"base_url": "http://127.0.0.1:1/v1", "server_kind": "vllm"}


def level(backend: str, c: int, ttft_ms: float, engine: dict | None = None, server: dict | None = None):
    """C workers back to back, every request with TTFT ``ttft_ms``; ``engine``: each request's own engine
    timing in process (``engine_ttft_ms``, ``engine_queue_ms``); ``server``: the level's server histograms as
    means (``ttft``, ``queue``), counted over its requests."""
    out, rep = [], 0
    for _ in range(c):
        t = 0.0
        for _ in range(WAVES):
            times = [t + ttft_ms / 1e3 + i * GAP_S for i in range(TOKENS)]
            own = {}
            if engine:
                own = {
                    "engine_ttft_ms": engine["ttft"],
                    "extra": {"engine_queue_ms": engine["queue"], "engine_prefill_ms": 1.0},
                }
            out.append(
                load_request(
                    backend,
                    c,
                    rep,
                    t,
                    times,
                    ttft_ms=ttft_ms,
                    decode_ms_per_token=GAP_S * 1e3,
                    e2e_ms=(times[-1] - t) * 1e3,
                    prompt_tokens=100,
                    shared_prefix_tokens=0,
                    timing_source="client-stream" if server else "engine-step",
                    **own,
                )
            )
            rep += 1
            t = times[-1]
    facts = {"served_as": "batched by the engine", "requests_planned": rep, "requests_started": rep}
    if server:
        facts["server_timings"] = {
            **{f"{k}_ms_mean": v for k, v in server.items()},
            **{f"{k}_n": rep for k in server},
            # the median in a wide bucket: (300, 800] ms, as a server's histogram gives it
            "queue_ms_p50": 550.0,
            "queue_p50_bucket_ms": [300.0, 800.0],
        }
    out.append(load_level(backend, c, facts))
    return out


# the chat target (TTFT p90 <= 500 ms): in process every level meets it, the server misses C=8
IN_PROCESS = {1: 100.0, 2: 150.0, 4: 300.0, 8: 400.0}
SERVER = {1: 110.0, 2: 160.0, 4: 320.0, 8: 900.0}


def runs(tmp_path, inproc_engine=None, server_kind="vllm", caching_off=False):
    engine = {"ttft": 390.0, "queue": 100.0}  # at C=8: 400 = queue 100 + after it 290 + outside 10
    inproc = [r for c, ms in IN_PROCESS.items() for r in level("vllm", c, ms, engine=engine)]
    # over HTTP at C=8: 900 = queue 600 + after it 250 + outside 50
    served = [
        r
        for c, ms in SERVER.items()
        for r in level("vllm-server", c, ms, server={"ttft": ms - 50.0, "queue": ms - 300.0})
    ]
    env_in = {"backends": {"vllm": {"engine": inproc_engine or {"vllm": "0.26.0"}}}}
    if caching_off:
        env_in["prefix_caching"] = False
    env_http = {"backends": {"vllm-server": {"engine": {**HTTP_ENGINE, "server_kind": server_kind}}}}
    return [write_run(tmp_path / "inproc", inproc, env_in), write_run(tmp_path / "http", served, env_http)]


def section(paths):
    report = assemble(read_runs(paths))
    return report, next(s for s in report.sections if s.kind == "load")


def test_a_pair_that_disagrees_gets_each_side_s_measured_ttft_split_at_the_level_it_turned(tmp_path):
    report, sec = section(runs(tmp_path))
    notes = sec.data["cap"]["inproc_server"]
    assert [(n["in_process"], n["server"], n["row"]["target"], n["level"]) for n in notes] == [
        ("vllm", "vllm-server", "chat", 8.0)
    ]  # agent (TTFT <= 2 s) holds every level on both: no note
    one, two = notes[0]["splits"]
    assert (one.ttft, one.queue, one.after_queue, one.outside) == (400.0, 100.0, 290.0, 10.0)
    assert (two.ttft, two.queue, two.after_queue, two.outside) == (900.0, 600.0, 250.0, 50.0)
    text = notes[0]["text"]
    assert "At C=8 (vllm pass, vllm-server miss)" in text
    step_loop = "outside the engine (the step loop) 10"
    assert f"in process 400 ms = queue 100 (p50 100) + engine after the queue 290 + {step_loop}" in text
    assert "over HTTP 900 ms = queue 600 (p50 in (300, 800]) + engine after the queue 250 + outside" in text
    assert "the engine's queue carries the most (500 ms)" in text
    assert "does not predict vllm-server here" in text


def test_the_summary_puts_the_server_first_where_its_engine_in_process_did_not_predict_it(tmp_path):
    report, _ = section(runs(tmp_path))
    jobs = {j.job: j for j in report.jobs if j.job.startswith("Many users: ")}
    chat = next(j for name, j in jobs.items() if name.startswith("Many users: chat"))
    assert [b for b, _ in chat.values] == ["vllm-server", "vllm"]
    assert "in process: does not predict vllm-server" in dict(chat.values)["vllm"]
    agent = next(j for name, j in jobs.items() if name.startswith("Many users: agent"))
    assert [b for b, _ in agent.values] == ["vllm", "vllm-server"]  # they agree: the order as before
    assert not any("does not predict" in v for _, v in agent.values)


def test_the_note_is_on_the_page_under_the_capacity_table(tmp_path):
    page = build(runs(tmp_path), tmp_path / "report.html").read_text()
    assert "In process beside its server" in page
    assert "At C=8 (vllm pass, vllm-server miss)" in page
    assert page.index("In process beside its server") > page.index("How many users one GPU holds")


def test_no_note_between_other_engines_or_caching_the_other_way(tmp_path):
    other = section(runs(tmp_path / "engine", server_kind="sglang"))[1]
    assert other.data["cap"]["inproc_server"] == []
    off = section(runs(tmp_path / "cache", caching_off=True))[1]
    assert off.data["cap"]["inproc_server"] == []


def test_a_side_without_engine_timings_is_not_recorded_and_the_gap_is_not_assigned(tmp_path):
    paths = runs(tmp_path)
    rows = [r for c, ms in IN_PROCESS.items() for r in level("vllm", c, ms)]  # no engine timestamps
    write_run(paths[0], rows, {"backends": {"vllm": {"engine": {"vllm": "0.26.0"}}}})
    note = section(paths)[1].data["cap"]["inproc_server"][0]
    assert "in process 400 ms = queue not recorded" in note["text"]
    assert "the gap is not assigned to a part" in note["text"]


def test_a_server_s_means_pool_its_engine_starts_by_their_counts():
    from llm_call_anatomy.contract.level_facts import LevelFacts
    from llm_call_anatomy.workloads.load.report.inproc_server import _server_mean

    starts = [
        LevelFacts(server_timings={"queue_ms_mean": 100.0, "queue_n": 30}),
        LevelFacts(server_timings={"queue_ms_mean": 500.0, "queue_n": 10}),
        LevelFacts(server_timings=None),
    ]
    assert _server_mean(starts, "queue") == 200.0
    assert _server_mean([LevelFacts()], "queue") is None


def test_the_level_is_the_lowest_both_judged_where_their_verdicts_differ_undecided_included():
    """The H200's S=0 agent row: in process undecided at C=128, its server missed there (issue 39's case)."""
    from llm_call_anatomy.workloads.load.report.inproc_server import deciding_level

    inproc = {"decisions": {8.0: "pass", 32.0: "pass", 128.0: "undecided", 256.0: "miss"}}
    server = {"decisions": {8.0: "pass", 32.0: "pass", 64.0: "miss", 128.0: "miss"}}
    assert deciding_level(inproc, server) == 128.0  # C=64 ran on one side only: no verdict to set beside
    assert deciding_level(inproc, {"decisions": {8.0: "pass"}}) is None


def test_the_same_time_end_to_end_split_otherwise_is_said_only_where_the_figures_show_it():
    """The H200's S=0 C=128 agent level, in round figures: the queue carries the gap, the end-to-end means
    agree within 5 %, the side that queued less decoded slower."""
    from llm_call_anatomy.workloads.load.report.inproc_server import Split, admitted_otherwise, largest_part

    inproc = Split("vllm", 1408, 762.0, 226.0, 752.0, 47.5, 3754.0, 2070.0)
    server = Split("vllm-server", 1408, 1534.0, 954.0, 1479.0, 35.8, 3792.0, 2173.0)
    part, diff = largest_part(inproc, server)
    assert part == "queue" and diff == 728.0
    said = admitted_otherwise(inproc, server, part, diff)
    assert "the engine in process admitted requests sooner and decoded them slower" in said
    assert "(TPOT 47.5 against 35.8 ms) than behind its server" in said
    longer = Split("vllm-server", 1408, 1534.0, 954.0, 1479.0, 35.8, 4400.0, 2173.0)  # 15 % longer
    assert admitted_otherwise(inproc, longer, part, diff) == ""
    faster = Split("vllm", 1408, 762.0, 226.0, 752.0, 30.0, 3754.0, 2070.0)  # queued less and decoded faster
    assert admitted_otherwise(faster, server, part, diff) == ""
    assert admitted_otherwise(inproc, server, "outside", diff) == ""


def test_the_readme_table_prints_the_notes_as_the_page_has_them(tmp_path, capsys):
    from llm_call_anatomy.workloads.load.report import load_table

    assert load_table.main([str(r) for r in runs(tmp_path)] + ["--inproc-server"]) == 0
    out = capsys.readouterr().out
    assert "At C=8 (vllm pass, vllm-server miss)" in out and "does not predict vllm-server here" in out


def test_the_readme_notes_come_from_every_load_section(tmp_path, capsys):
    """Two load workloads are two sections of the page: the notes of the second one are printed too."""
    from llm_call_anatomy.workloads.load.report import load_table

    paths = runs(tmp_path)
    for path in paths:  # a second load workload ("ls") ahead of the first: its section comes first
        rows = (path / "records.jsonl").read_text().splitlines()
        other = [r.replace('"workload": "lf"', '"workload": "ls"') for r in rows if '"case": "C=1"' in r]
        (path / "records.jsonl").write_text("\n".join(other + rows) + "\n")
    assert load_table.main([str(r) for r in paths] + ["--inproc-server"]) == 0
    assert "At C=8 (vllm pass, vllm-server miss)" in capsys.readouterr().out
