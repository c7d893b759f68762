"""The Load section's replica view (issue 25) from hand-made runs: tp=2 against dp=2 behind each router, with
per-replica prefix-cache counters in the level records; no GPU."""

from __future__ import annotations

import pytest

from llm_call_anatomy.contract.level_facts import LevelFacts
from llm_call_anatomy.reports import build
from llm_call_anatomy.reports.runs import read_runs
from llm_call_anatomy.workloads.load.report import levels as mu
from llm_call_anatomy.workloads.load.report import replicas
from tests.reports.records import load_level, load_request, write_run

TPOTS = [10.0, 12.0, 14.0, 16.0, 40.0]


def level(run_id: str, backend: str, hits: tuple[float, float] | None, cached: int) -> list[dict]:
    """Five requests of a sessions level; ``hits``: replica 0's and 1's prefix-cache hits of 400 lookups
    each."""
    out = []
    for i, tpot in enumerate(TPOTS):
        first = 0.1 * i + 0.05
        times = [first + k * tpot / 1e3 for k in range(4)]
        out.append(
            load_request(
                backend,
                4,
                i,
                0.1 * i,
                times,
                run_id=run_id,
                workload="sessions",
                ttft_ms=50.0,
                decode_ms_per_token=tpot,
                output_token_ids=[1, 2, 3, 4],
                prompt_tokens=160,
                shared_prefix_tokens=120,
                cached_tokens=cached,
            )
        )
    facts: dict = {"served_as": "batched by the engine"}
    if hits is not None:
        facts.update(
            replica0_prefix_cache_queries=400.0,
            replica0_prefix_cache_hits=hits[0],
            replica1_prefix_cache_queries=400.0,
            replica1_prefix_cache_hits=hits[1],
        )
    out.append(load_level(backend, 4, facts, run_id=run_id, workload="sessions"))
    return out


def run(tmp_path, name: str, backend: str, tp: int, dp: int, router: str, policy, hits, cached):
    engine = {
        "server_kind": backend.removesuffix("-server"),
        "parallel": {"tp": tp, "dp": dp, "router": router, "policy": policy},
    }
    env = {"parallel": {"tp": tp, "dp": dp, "router": "internal"}, "backends": {backend: {"engine": engine}}}
    return write_run(tmp_path / name, level(name, backend, hits, cached), env)


@pytest.fixture
def two_gpu_runs(tmp_path):
    return [
        run(tmp_path, "tp2", "sglang-server", 2, 1, None, None, None, 110),
        run(tmp_path, "dp2-rr", "sglang-server", 1, 2, "sglang-router", "round_robin", (100.0, 140.0), 60),
        run(tmp_path, "dp2-ca", "sglang-server", 1, 2, "sglang-router", "cache_aware", (300.0, 280.0), 115),
        run(
            tmp_path, "vllm-dp2", "vllm-server", 1, 2, "vllm-dp-coordinator", "least loaded", (200.0, 0.0), 50
        ),
    ]


def test_each_configuration_is_named_and_measured(two_gpu_runs):
    ds = read_runs(two_gpu_runs)
    levels = mu.per_level(ds.records)
    got = replicas.configurations(ds.records, levels, ds).set_index("config")
    assert list(got.index) == [
        "tp=2",
        "dp=2 · sglang-router round_robin",
        "dp=2 · sglang-router cache_aware",
        "dp=2 · vllm-dp-coordinator least loaded",
    ]
    assert list(got["engine"]) == ["sglang", "sglang", "sglang", "vllm"]
    ca = got.loc["dp=2 · sglang-router cache_aware"]
    assert ca["expected_reuse"] == pytest.approx(120 / 160) and ca["reported_reuse"] == pytest.approx(
        115 / 160
    )
    assert ca["replicas"] == {
        "0": {"hit_share": 0.75, "lookup_share": 0.5},
        "1": {"hit_share": 0.7, "lookup_share": 0.5},
    }
    assert ca["tpot_p50"] == 14.0 and ca["tpot_p99"] == pytest.approx(16.0 + 0.96 * 24.0)  # rank 3.96
    assert got.loc["tp=2"]["replicas"] == {}  # one replica: its totals are the table's
    assert got.loc["dp=2 · vllm-dp-coordinator least loaded"]["replicas"]["1"]["hit_share"] == 0.0


def test_a_counter_that_went_down_is_no_figure():
    shares = replicas.per_replica(
        LevelFacts.from_dict(
            {
                "replica0_prefix_cache_queries": 10.0,
                "replica0_prefix_cache_hits": -3.0,
                "replica1_prefix_cache_queries": 30.0,
                "replica1_prefix_cache_hits": 3.0,
            }
        )
    )
    assert shares["0"]["hit_share"] is None and shares["1"]["hit_share"] == pytest.approx(0.1)
    assert shares["1"]["lookup_share"] == pytest.approx(0.75)


def test_the_page_shows_the_view_only_with_replicas(two_gpu_runs, tmp_path):
    html = build(two_gpu_runs, tmp_path / "r.html").read_text()
    assert "Two GPUs, two ways" in html
    assert "dp=2 · sglang-router cache_aware" in html and "#1: 70% hit, 50% of lookups" in html
    single = build(two_gpu_runs[:1], tmp_path / "one.html").read_text()
    assert "Two GPUs, two ways" not in single


def test_a_run_made_before_dp_is_tp_from_its_args(tmp_path):
    old = write_run(tmp_path / "old", level("old", "vllm-server", None, 10), {"args": {"tp": 2}})
    ds = read_runs([old])
    assert replicas.configuration(ds, "vllm-server")["config"] == "tp=2"
    assert replicas.configurations(ds.records, mu.per_level(ds.records), ds).empty


def test_users_within_each_target_per_configuration(two_gpu_runs, tmp_path):
    from llm_call_anatomy.reports.assemble import assemble

    report = assemble(read_runs(two_gpu_runs))
    section = next(s for s in report.sections if s.kind == "load")
    caps = replicas.capacities(section.data["cap"]["capacity"], section.data["replicas"])
    assert set(caps["config"]) == set(section.data["replicas"]["config"])
    assert set(caps["target"]) == set(
        section.data["cap"]["capacity"]["target"]
    )  # every target, each configuration
    html = build(two_gpu_runs, tmp_path / "r.html").read_text()
    assert "Users within each latency target, per configuration" in html


def test_caveats_say_what_the_table_cannot(two_gpu_runs, tmp_path):
    from llm_call_anatomy.reports.assemble import assemble
    from llm_call_anatomy.workloads.load.report import replicas_tables as view

    runs = [
        *two_gpu_runs,
        run(tmp_path, "dp2-silent", "vllm-server", 1, 2, "vllm-dp-coordinator", None, None, 50),
    ]
    section = next(s for s in assemble(read_runs(runs)).sections if s.kind == "load")
    texts = [c.text for c in view.caveats(section)]
    assert any("ranks none of them" in t for t in texts)
    assert any(t.startswith("dp=2 · vllm-dp-coordinator: no per-replica") for t in texts)
    one = next(s for s in assemble(read_runs(two_gpu_runs[:1])).sections if s.kind == "load")
    assert view.caveats(one) == []
