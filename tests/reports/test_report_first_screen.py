"""The first screen (the summary's jobs) names a winner only where the data carries one, and says
what a ranking rests on: engine starts that overlap, a column from another run, a GPU host shared
with another engine, a launch-bound model, a derived figure. Each case below was ranked, or passed
in silence, before issue #24."""

from __future__ import annotations

from llm_call_anatomy.reports.assemble import assemble
from llm_call_anatomy.reports.runs import read_runs
from tests.reports.records import sweep_records, write_run
from tests.reports.test_report_assemble import gpu_env, starts

SHORT, DECODE, REPLY = "Many short calls (sweep)", "Generating tokens (sweep)", "A 64-token reply (sweep)"


def jobs_of(*runs):
    return {j.job: j for j in assemble(read_runs(list(runs))).jobs}


def two_engines(tmp_path, sglang_slow_start=0.15, env=None):
    vllm, sglang = sweep_records("vllm", 16.0, 0.01, 5.2), sweep_records("sglang", 16.4, 0.01, 5.1)
    rows = starts(vllm, 0) + starts(vllm, 1, 0.01) + starts(sglang, 0) + starts(sglang, 1, sglang_slow_start)
    return write_run(tmp_path / "h200", rows, env or gpu_env(["vllm", "sglang"]))


def test_one_slow_start_does_not_make_a_winner(tmp_path):
    """The H200 report's "short calls: vLLM by 10 %": sglang's two starts 17.0 and 19.6 ms, vllm's 16.6 and
    16.8."""
    short = jobs_of(two_engines(tmp_path))[SHORT]
    assert short.best is None
    assert "the gap is inside the spread between engine starts" in short.verdict


def test_a_gap_beyond_every_spread_still_wins(tmp_path):
    jobs = jobs_of(two_engines(tmp_path, sglang_slow_start=0.002))
    assert jobs[DECODE].best == "sglang"  # 5.1 vs 5.2 ms/token in both starts, repeats ±0.1 ms


def test_a_derived_figure_is_shown_but_not_ranked(tmp_path):
    reply = jobs_of(two_engines(tmp_path, sglang_slow_start=0.002))[REPLY]
    assert (
        reply.best is None
        and reply.figure.startswith("derived")
        and "not ranked beside measured" in reply.verdict
    )
    assert len(reply.values) == 2


def test_a_column_from_another_day_and_commit_is_flagged(tmp_path):
    env = gpu_env(["vllm"])
    a = write_run(
        tmp_path / "a",
        starts(sweep_records("vllm", 16.0, 0.01, 5.2), 0) + starts(sweep_records("vllm", 16.0, 0.01, 5.2), 1),
        {**env, "started": "2026-11-30T15:03:24+00:00", "git_commit": "36d1b61a8a53"},
    )
    b_env = {**gpu_env(["hf-graphs"]), "started": "2026-11-29T16:00:57+00:00", "git_commit": None}
    b = write_run(
        tmp_path / "b",
        starts(sweep_records("hf-graphs", 40.0, 0.01, 11.0), 0)
        + starts(sweep_records("hf-graphs", 40.0, 0.01, 11.0), 1),
        b_env,
    )
    c_env = {**gpu_env(["sglang"]), "started": "2026-11-30T16:03:24+00:00", "git_commit": "36d1b61a8a53"}
    c = write_run(
        tmp_path / "c",
        starts(sweep_records("sglang", 16.4, 0.01, 5.1), 0)
        + starts(sweep_records("sglang", 16.4, 0.01, 5.1), 1),
        c_env,
    )
    decode = jobs_of(a, b, c)[DECODE]
    assert "from another run than the rest: hf-graphs (day 2026-11-29, commit unknown)" in decode.caution


def test_a_shared_gpu_host_is_said_from_env_json(tmp_path):
    env = gpu_env(["vllm", "sglang"])
    env["backends"]["sglang"]["starts"] = [
        {"engine_start": 0, "gpu_host": {"declared": "vllm study on GPU 1", "other_processes": 1}}
    ]
    decode = jobs_of(two_engines(tmp_path, sglang_slow_start=0.002, env=env))[DECODE]
    assert "shared the GPU host with another engine: sglang (declared: vllm study on GPU 1)" in decode.caution


def test_old_runs_that_overlapped_in_time_are_said_to_have_shared_the_host(tmp_path):
    def run(name, backend, started):
        env = {**gpu_env([backend]), "started": started}
        env["backends"][backend]["starts"] = [
            {"engine_start": 0, "wall_s": 300.0},
            {"engine_start": 1, "wall_s": 200.0},
        ]
        rows = starts(sweep_records(backend, 16.0, 0.01, 5.2), 0) + starts(
            sweep_records(backend, 16.0, 0.01, 5.2), 1
        )
        return write_run(tmp_path / name, rows, env)

    together = jobs_of(
        run("v", "vllm", "2026-11-30T15:03:24+00:00"), run("s", "sglang", "2026-11-30T15:03:23+00:00")
    )
    assert "shared the GPU host with another engine: vllm, sglang" in (together[DECODE].caution or "")
    apart = jobs_of(
        run("v2", "vllm", "2026-11-30T15:03:24+00:00"), run("s2", "sglang", "2026-11-30T16:03:23+00:00")
    )
    assert "shared the GPU host" not in (apart[DECODE].caution or "")


def test_a_launch_bound_model_is_labelled_as_measuring_per_step_overhead(tmp_path):
    env = gpu_env(["vllm", "sglang"])
    env["model"] = {
        **env["model"],
        "label": "smollm2",
        "params": 135_000_000,
    }  # 0.27 GB a step: ~0.06 ms of an H200
    decode = jobs_of(two_engines(tmp_path, sglang_slow_start=0.002, env=env))[DECODE]
    assert "launch-bound" in decode.caution and "per-step overhead" in decode.caution
    big = jobs_of(two_engines(tmp_path / "8b", sglang_slow_start=0.002))[
        DECODE
    ]  # the 8B shape: not launch-bound
    assert "launch-bound" not in (big.caution or "")


def test_a_study_that_lost_a_planned_start_names_no_winner(tmp_path):
    env = {**gpu_env(["vllm", "sglang"]), "starts": 3}
    env["backends"]["sglang"]["starts"] = [
        {"engine_start": 0},
        {"engine_start": 1},
    ]  # the third start never ran
    env["backends"]["vllm"]["starts"] = [{"engine_start": i} for i in range(3)]
    decode = jobs_of(two_engines(tmp_path, sglang_slow_start=0.002, env=env))[DECODE]
    assert decode.best is None and decode.verdict.startswith(
        "not decided: sglang has 2 of the 3 engine starts"
    )
