"""The assembled report on a hand-made GPU run: roofline, launch overhead, block rounding, caveats,
summary."""

from __future__ import annotations

import pytest

from llm_call_anatomy.reports.assemble import assemble
from llm_call_anatomy.reports.kvcache import block_size
from llm_call_anatomy.reports.runs import read_runs
from tests.reports.records import conversation_records, record, sweep_records, write_run

PARAMS = 8_190_735_360


def gpu_env(names: list[str], random_weights: bool = False) -> dict:
    # the engine facts the launch-overhead caveat reads (HF in process; CUDA graphs or not), as the adapters
    # write them
    engines = {
        "vllm": {"block_size": 16, "cuda_graphs": True},
        "hf": {"transformers": "5.17.0"},
        "hf-graphs": {
            "transformers": "5.17.0",
            "compile": "CompileConfig(fullgraph=True, mode='reduce-overhead')",
        },
    }
    return {
        "dtype": "bfloat16",
        "model": {
            "label": "Qwen/Qwen3-8B",
            "params": PARAMS,
            "dtype_bytes": 2,
            "random_weights": random_weights,
        },
        "backends": {n: {"process": {"gpu": "NVIDIA H200"}, "engine": engines.get(n, {})} for n in names},
    }


@pytest.fixture
def report(tmp_path):
    rows = conversation_records()
    rows += (
        sweep_records("hf", 30.0, 0.05, 20.0)
        + sweep_records("hf-graphs", 25.0, 0.05, 8.0)
        + sweep_records("vllm", 5.0, 0.01, 5.0)
    )
    rows.append(
        record(
            backend="hf-graphs",
            workload="conversation",
            kind="conversation",
            mode="cached",
            case=None,
            skipped="hf-graphs does not support prefix cache",
        )
    )
    rows += [
        record(backend="sglang", workload=w, skipped="sglang is not installed here")
        for w in ("conversation", "sweep")
    ]
    rows.append(
        record(
            backend="vllm",
            workload="sweep",
            kind="sweep",
            mode="greedy",
            case="N=64",
            rep=5,
            prompt_tokens=64,
            ttft_ms=9.0,
            extra={"server_ttft_ms": 7.5},
        )
    )
    run = write_run(
        tmp_path / "h200", rows, gpu_env(["hf", "hf-graphs", "vllm", "sglang"], random_weights=True)
    )
    return assemble(read_runs([run]))


def texts(report) -> str:
    return "\n".join(c.text for c in report.caveats)


def test_sections_backends_and_status(report):
    assert [s.name for s in report.sections] == ["conversation", "sweep"]
    assert report.ds.backends == ["hf", "vllm", "hf-graphs", "sglang"]
    states = {s.backend: s.state for s in report.status}
    assert states == {"hf": "ran", "vllm": "ran", "hf-graphs": "partly", "sglang": "skipped"}
    conv = report.sections[0]
    assert conv.backends == ["hf", "vllm"]
    assert any("sglang: the whole workload skipped" in n for n in conv.notes)


def test_roofline_and_launch_overhead_caveats(report):
    t = texts(report)
    floor = PARAMS * 2 / 4800e9 * 1e3  # 3.41 ms on an H200
    assert f"{20 / floor:.1f}× the roofline" in t
    explained = (20.0 - 8.0) / (20.0 - floor)  # 72%
    assert f"launch overhead explains {100 * explained:.0f}% of HF eager's gap" in t
    assert "for comparison: vllm 5 ms (1.5× floor)" in t


def test_launch_overhead_reads_engine_facts_not_backend_names(tmp_path):
    """Columns named anything: the caveat pairs an HF engine in process without CUDA graphs with one with
    them."""
    rows = sweep_records("eager-col", 30.0, 0.05, 20.0) + sweep_records("graph-col", 25.0, 0.05, 8.0)
    rows += sweep_records("other", 5.0, 0.01, 5.0)
    env = gpu_env(["eager-col", "graph-col", "other"])
    env["backends"]["eager-col"]["engine"] = {"transformers": "5.17.0"}
    env["backends"]["graph-col"]["engine"] = {"transformers": "5.17.0", "cuda_graphs": True}
    t = texts(assemble(read_runs([write_run(tmp_path / "r", rows, env)])))
    assert "CUDA graphs take HF's decode at N=" in t and "(eager-col) to 8 ms/token (graph-col)" in t
    assert "for comparison: other 5 ms" in t
    env["backends"]["graph-col"]["engine"] = {
        "transformers": "5.17.0",
        "cuda_graphs": False,
    }  # no graphs: no pair
    assert "CUDA graphs take" not in texts(assemble(read_runs([write_run(tmp_path / "r2", rows, env)])))


def test_block_rounding_random_weights_and_server_caveats(report):
    t = texts(report)
    assert (
        "vllm reused 22 fewer tokens than shared on 2 turns: block granularity (block 16" in t
    )  # (90-80) + (220-208)
    assert t.startswith("Weights are random")
    assert "vllm: the client saw TTFT 1.50 ms" in t
    assert "vllm: cached and full chose a different first token on 1 of 9 calls (turn 3)" in t
    assert "hf: below N≈600 tokens every prefill costs about the same" in t  # a / b = 30 / 0.05


def test_summary_jobs_need_a_second_start_to_name_a_winner(report):
    jobs = {j.job: j for j in report.jobs}
    decode = jobs["Generating tokens (sweep)"]
    assert [b for b, _ in decode.values] == ["vllm", "hf-graphs", "hf"]
    assert (
        decode.best is None and "vllm leads by 60%" in decode.verdict and "one engine start" in decode.verdict
    )
    assert "(1 start, n=3)" in decode.values[0][1]
    chat = jobs["Multi-turn chat (conversation)"]
    assert [b for b, _ in chat.values][0] == "hf"  # cached sums: hf 36 ms, vllm 66 ms


def starts(rows: list[dict], start: int, shift: float = 0.0) -> list[dict]:
    """The same records as engine start ``start``, TTFT and decode moved by ``shift`` (relative)."""
    out = []
    for r in rows:
        r = {**r, "engine_start": start}
        for key in ("ttft_ms", "decode_ms_per_token"):
            if r.get(key) is not None:
                r[key] *= 1 + shift
        out.append(r)
    return out


def test_summary_winner_survives_both_spreads_or_is_within_noise(tmp_path):
    vllm, sglang = sweep_records("vllm", 10.0, 0.01, 5.0), sweep_records("sglang", 9.0, 0.01, 5.3)
    rows = starts(vllm, 0) + starts(vllm, 1, 0.30) + starts(sglang, 0) + starts(sglang, 1, -0.02)
    run = write_run(tmp_path / "h200", rows, gpu_env(["vllm", "sglang"]))
    report = assemble(read_runs([run]))
    jobs = {j.job: j for j in report.jobs}
    lengths = report.sections[0].data["lengths"]
    row = lengths[(lengths.backend == "vllm") & (lengths.N == 256)].iloc[0]
    assert row.starts == 2 and row.decode_across == pytest.approx(0.15 / 1.15)  # start medians 5.0 and 6.5
    short = jobs["Many short calls (sweep)"]  # N=64: vllm 10.64 / 13.83 ms, sglang 9.64 / 9.45 ms
    assert short.best == "sglang" and short.verdict.startswith("by ")
    assert "(2 starts ±" in short.values[0][1]
    decode = jobs["Generating tokens (sweep)"]  # vllm's starts 5.0 / 6.5 ms: 26% apart; sglang 5.25, gap 9.6%
    assert decode.best is None
    assert (
        decode.verdict
        == "within noise (gap to vllm 9.6%: the gap is inside the spread between engine starts (26%))"
    )


def test_runs_of_one_setup_merge_as_starts(tmp_path):
    env = {**gpu_env(["vllm"]), "plan_hash": "p1"}
    a = write_run(tmp_path / "a", sweep_records("vllm", 10.0, 0.01, 5.0), env)
    b = write_run(tmp_path / "b", sweep_records("vllm", 20.0, 0.01, 5.0), env)
    apart = read_runs([a, b])
    assert apart.backends == ["vllm (a)", "vllm (b)"]
    merged = read_runs([a, b], merge_starts=True)
    assert merged.backends == ["vllm"] and set(merged.records["start"]) == {"a#0", "b#0"}
    assert [s["run_id"] for s in merged.start_envs("vllm")] == ["a", "b"]
    c = write_run(tmp_path / "c", sweep_records("vllm", 20.0, 0.01, 5.0), {**env, "plan_hash": "p2"})
    # a run of another setup (another plan: a closed loop beside an open one) is a column of its own
    mixed = read_runs([a, c, b], merge_starts=True)
    assert mixed.backends == ["vllm (a)", "vllm (c)"]
    assert mixed.members["vllm (a)"] == [("a", "vllm"), ("b", "vllm")]
    assert any("vllm's runs c have a setup of their own" in x for x in mixed.problems)


def test_old_engine_ttft_is_not_ranked_against_the_callers(tmp_path):
    engine = [{**r, "timing_source": "engine-metrics"} for r in sweep_records("vllm", 5.0, 0.01, 5.0)]
    caller = [{**r, "timing_source": "cuda-sync"} for r in sweep_records("hf", 30.0, 0.05, 20.0)]
    rows = starts(engine, 0) + starts(engine, 1) + starts(caller, 0) + starts(caller, 1)
    jobs = {
        j.job: j for j in assemble(read_runs([write_run(tmp_path / "r", rows, gpu_env(["vllm", "hf"]))])).jobs
    }
    short = jobs["Many short calls (sweep)"]
    assert short.best is None and short.verdict.startswith(
        "not ranked: vllm report the engine's internal TTFT"
    )
    assert "engine's own TTFT, old run" in short.values[0][1]
    assert jobs["Generating tokens (sweep)"].best == "vllm"  # decode is not a TTFT: ranked


def test_block_size_keys():
    assert block_size({"block_size": 16}) == 16
    assert block_size({"page_size": 1}) == 1
    assert block_size({}) is None and block_size({"block_size": None}) is None


def test_cpu_run_says_roofline_not_applicable(tmp_path):
    run = write_run(
        tmp_path / "cpu",
        sweep_records("hf", 30.0, 0.05, 20.0),
        {"dtype": "float32", "model": {"params": 100}, "backends": {"hf": {"process": {"gpu": None}}}},
    )
    report = assemble(read_runs([run]))
    assert "No roofline for hf (CPU run: the GPU roofline is not applicable)." in texts(report)
    assert report.sections[0].data["vs_roof"].empty


def test_sweep_charts_draw_the_roofline(report):
    from llm_call_anatomy.workloads.sweep.report import charts

    sweep = report.sections[1]
    for phase in ("prefill", "decode"):
        spec = charts.sweep_phase(sweep.data["lengths"], report.roofs, phase, report.ds.backends)
        values = next(iter(spec["datasets"].values()))
        series = {v["series"] for v in values}
        floors = (
            {"compute floor: H200 SXM 989 TFLOP/s (datasheet)"}
            if phase == "prefill"
            else {"decode floor: H200 SXM 4,800 GB/s (datasheet)"}
        )
        assert series == {"hf", "hf-graphs", "vllm"} | floors
        assert spec["layer"][0]["encoding"]["y"]["scale"]["type"] == "log"
        assert spec["layer"][0]["encoding"]["x"]["scale"]["type"] == "log"
    decode_floor = [v["ms"] for v in values if v["kind"] == "roofline"]
    assert decode_floor == [pytest.approx(PARAMS * 2 / 4800e9 * 1e3)] * 3  # one point per N, a flat line


def test_page_renders_server_timings_and_gpu_roofline(report):
    from llm_call_anatomy.reports.page import render

    html = render(report)
    assert "Caller vs engine TTFT" in html and "H200 SXM: 4,800 GB/s, 989 TFLOP/s (datasheet)" in html
    assert "decode ÷ floor" in html


def test_deployment_facts_per_engine_start(tmp_path):
    env = gpu_env(["vllm", "hf"])
    env["backends"]["vllm"]["starts"] = [
        {
            "engine_start": 0,
            "startup_s": 100.0,
            "kv_cache_tokens": 800_000,
            "peak_gpu_memory_bytes": 120 * 2**30,
        },
        {
            "engine_start": 1,
            "startup_s": 110.0,
            "kv_cache_tokens": 800_000,
            "peak_gpu_memory_bytes": 122 * 2**30,
        },
    ]
    env["backends"]["hf"]["starts"] = [
        {"engine_start": 0, "startup_s": 10.0, "kv_cache_tokens": None, "peak_gpu_memory_bytes": None}
    ]
    rows = starts(sweep_records("vllm", 5.0, 0.01, 5.0), 0) + starts(sweep_records("vllm", 5.0, 0.01, 5.0), 1)
    rows += sweep_records("hf", 30.0, 0.05, 20.0)
    jobs = {j.job: j for j in assemble(read_runs([write_run(tmp_path / "r", rows, env)])).jobs}
    assert dict(jobs["Engine start-up"].values) == {
        "vllm": "105 s [100–110] (2 starts)",
        "hf": "10 s (1 start)",
    }
    assert dict(jobs["KV-cache capacity"].values) == {"vllm": "800,000 tokens (2 starts)"}
    assert dict(jobs["Peak GPU memory"].values) == {"vllm": "121 GiB [120–122] (2 starts)"}


def test_goodput_counts_against_a_target_the_page_names() -> None:
    """Without --slo, goodput counts against the runs' first named target with a TTFT and a TPOT limit
    (chat by default, its p90 limits applied to each request), not the older 70B pair that never bound on
    TPOT (issue #22); a pair given to the report or to the run wins, and says so; runs from before the named
    targets keep the Load section's default (None here)."""
    from types import SimpleNamespace

    from llm_call_anatomy.contract.slo import DEFAULT_SPECS
    from llm_call_anatomy.workloads.load.report.targets import slo_of

    def ds(*envs: dict) -> SimpleNamespace:
        return SimpleNamespace(envs={f"run{i}": e for i, e in enumerate(envs)})

    named, source = slo_of(ds({"slo": None, "slo_targets": list(DEFAULT_SPECS)}), None)
    assert (named["ttft_ms"], named["tpot_ms"]) == (500.0, 50.0) and "chat" in source
    throughput_first, _ = slo_of(
        ds({"slo_targets": ["batch:", "agent:ttft_p90_ms=2000,tpot_p90_ms=100"]}), None
    )
    assert (throughput_first["ttft_ms"], throughput_first["tpot_ms"]) == (2000.0, 100.0)
    run_pair, source = slo_of(ds({"slo": {"ttft_ms": 900}, "slo_targets": list(DEFAULT_SPECS)}), None)
    assert (run_pair["ttft_ms"], run_pair["tpot_ms"]) == (900.0, 200.0) and "compare.py --slo" in source
    given, source = slo_of(ds({"slo_targets": list(DEFAULT_SPECS)}), {"ttft_ms": 300.0, "tpot_ms": 30.0})
    assert (given["ttft_ms"], given["tpot_ms"]) == (300.0, 30.0) and "this report" in source
    assert slo_of(ds({"slo": None}, {}), None) == (None, None)
    assert slo_of(ds({"slo_targets": ["batch:"]}), None) == (None, None)  # no latency target: the default


def test_a_run_whose_targets_do_not_parse_is_named_in_the_goodput_source() -> None:
    """A run's env.json slo_targets that do not parse are passed over for the next run's, and the source text
    names that run with its error, instead of counting goodput against another target in silence; good runs
    keep their source text as it was."""
    from types import SimpleNamespace

    from llm_call_anatomy.workloads.load.report.levels import SLO_SOURCE
    from llm_call_anatomy.workloads.load.report.targets import slo_of

    def ds(**envs: dict) -> SimpleNamespace:
        return SimpleNamespace(envs=envs)

    agent = ["agent:ttft_p90_ms=2000,tpot_p90_ms=100"]
    good, source = slo_of(ds(good={"slo_targets": agent}), None)
    assert good == {"ttft_ms": 2000.0, "tpot_ms": 100.0}
    assert (
        source == "the run's first latency target, agent (TTFT p90 ≤ 2000 ms, TPOT p90 ≤ 100 ms), per request"
    )
    after, named = slo_of(
        ds(old={"slo_targets": ["chat:ttft_p90_ms=fast"]}, good={"slo_targets": agent}), None
    )
    assert after == good and named.startswith(source + "; run old's env.json slo_targets do not parse (")
    assert "'fast' is not a number" in named and "\n" not in named
    default, named = slo_of(ds(old={"slo_targets": [5]}), None)
    assert default is None and named.startswith(f"default: {SLO_SOURCE}; run old's") and "[5]" in named


def test_caching_on_and_off_never_merge_as_starts(tmp_path):
    """Two runs of one plan, one with the prefix cache and one without (--no-prefix-caching), are two setups:
    merged as engine starts, the caching-off run's requests would be read as the caching-on column's second
    start. The effective setting (what the started server reports) decides where env.json has it."""
    env = {**gpu_env(["vllm"]), "plan_hash": "p1", "prefix_caching": True}
    on = write_run(tmp_path / "on", sweep_records("vllm", 10.0, 0.01, 5.0), env)
    off = write_run(
        tmp_path / "off", sweep_records("vllm", 10.0, 0.01, 5.0), {**env, "prefix_caching": False}
    )
    merged = read_runs([on, off], merge_starts=True)
    assert merged.backends == ["vllm (on)", "vllm (off)"]
    # asked on, but the server ran without it: a setup of its own as well
    server = {"engine": {"scheduler": {"prefix_caching": False}}}
    ran_off = {**env, "backends": {"vllm": {**env["backends"]["vllm"], **server}}}
    odd = write_run(tmp_path / "odd", sweep_records("vllm", 10.0, 0.01, 5.0), ran_off)
    assert read_runs([on, odd], merge_starts=True).backends == ["vllm (on)", "vllm (odd)"]
