"""A load level's facts as a type (contract/level_facts.py): every field round-trips through JSON; a record of
an older run reads (a key it lacks is None, one the type does not name is kept and written back), as does
every level record of the committed runs; and what the runner writes in a level record is exactly the named
fields: a level run through the runner on a stand-in engine that reports every figure the adapters map to,
the server's histograms and the GPU's telemetry writes every field but those only client processes and an
unmeasured GPU write, and nothing the type does not name."""

from __future__ import annotations

import asyncio
import gzip
import json
from dataclasses import fields
from pathlib import Path

import pytest

from llm_call_anatomy.backends.base import Backend, TokenClock
from llm_call_anatomy.contract import capacity as cap
from llm_call_anatomy.contract.adapter import BackendSettings, Capabilities, RawOutput, Request
from llm_call_anatomy.contract.level_facts import ALWAYS, NOT_WRITTEN, WRITTEN_WITH, LevelFacts
from llm_call_anatomy.contract.records import DamagedRecordError
from llm_call_anatomy.contract.slo import Verdict
from tests.conftest import lab_example

NAMED = {f.name for f in fields(LevelFacts)} - NOT_WRITTEN  # the keys of extra.level the type names
ROOT = Path(__file__).resolve().parents[2]


def every_field() -> LevelFacts:
    """Facts with every field set, as JSON gives them back."""
    values = {
        "requests_planned": 40,
        "requests_started": 38,
        "batches_requests": True,
        "served_as": "batched by the engine",
        "think_time_s": 0.0,
        "think": "fixed",
        "seconds": 30.0,
        "duration_s": 60.0,
        "arrival": "gamma",
        "burstiness": 0.5,
        "searched_for": "chat",
        "extended": 2,
        "search_ceiling": 64,
        "search_ratio": 1.25,
        "search_engine_limit": 256,
        "search_engine_limit_name": "max_num_seqs",
        "users": 38,
        "in_flight_mean": 3.5,
        "in_flight_p90": 5,
        "users_start": "stationary",
        "session_turns": 10.0,
        "arrivals_per_s": 4.1,
        "trace": {"in_window": 4, "dropped": 1, "input_p50": 512.0, "time_scale": 2.0},
        "wall_s": 61.2,
        "client_procs": 2,
        "origin_perf_counter": 1234.5,
        "client": "lean aiohttp, uvloop",
        "client_cpu_share": [0.2, None],
        "client_busy_max": 0.2,
        "client_limited": False,
        "client_failed": "client process 1 (exit 1): the level is incomplete (--resume redoes it)",
        "gauge_samples": 62,
        "gauge_sample_s": 0.61,
        "kv_cache_usage_peak": 0.93,
        "requests_running_peak": 12.0,
        "requests_waiting_peak": 3.0,
        "prefix_cache_hit_rate_peak": 0.4,
        "preemptions": 2.0,
        "prefix_cache_queries": 1000.0,
        "prefix_cache_hits": 600.0,
        "engine_step_s": 12.5,
        "engine_steps": 900.0,
        "server_timings": {"ttft_n": 38, "ttft_ms_p50": 41.0, "ttft_p50_bucket_ms": [25.0, 50.0]},
        "replica_figures": {"replica0_prefix_cache_hits": 300.0, "replica1_prefix_cache_hits": 300.0},
        "gpu_telemetry": "not measured: a reason",
        "gpu_samples": 600,
        "gpu_index": 0,
        "gpu_power_w_mean": 410.0,
        "gpu_power_w_peak": 650.0,
        "gpu_util_pct_mean": 88.0,
        "gpu_memory_used_peak_bytes": 1.3e11,
        "gpu_energy_j": 25000.0,
        "gpu_energy_source": "nvml-counter",
        "gpu_energy_series": [[-1.0, 0.0], [0.0, 70.0], [60.0, 25070.0]],
        "gpu_idle_w": 70.0,
        "gpu_idle_s": 1.0,
        "other": {"a_newer_writers_key": [1, 2]},
    }
    assert set(values) == {f.name for f in fields(LevelFacts)} - {
        "level_error"
    }  # the record's error: not here
    return LevelFacts(**values)


# --- reading and writing ------------------------------------------------------------------------------------
def test_every_field_round_trips_through_json():
    facts = every_field()
    written = json.loads(json.dumps(facts.to_dict()))
    assert set(written) == NAMED | set(facts.replica_figures) | {"a_newer_writers_key"}
    assert LevelFacts.from_dict(written) == facts
    assert (
        LevelFacts.of(written) == facts
        and LevelFacts.of(facts) is facts
        and LevelFacts.of(None) == LevelFacts()
    )


def test_what_a_planner_states_is_written_over_the_rest_and_the_error_kept():
    built = LevelFacts(arrival="trace", wall_s=2.0, level_error="every request of the level failed: x")
    facts = built.updated({"trace": {"in_window": 4}, "a_planners_key": 1})
    assert facts.trace == {"in_window": 4} and facts.other == {"a_planners_key": 1}
    assert facts.arrival == "trace" and facts.wall_s == 2.0 and facts.level_error == built.level_error


def test_the_loads_own_facts_are_written_when_none_and_the_engines_only_where_reported():
    written = LevelFacts().to_dict()
    assert set(written) == ALWAYS and all(v is None for v in written.values())
    died = LevelFacts(client_cpu_share=[None, None]).to_dict()  # every client process died: no busiest one
    assert died["client_busy_max"] is None and set(WRITTEN_WITH) <= set(died)


def test_an_older_runs_level_record_reads():
    """A level record from before the search, the arrival processes and the population (an issue-14 run), with
    a key this type does not name: what it lacks is None, the unknown key is kept and written back, and the
    readers take it (the limiter names the KV cache it records)."""
    old = {
        "wall_s": 12.0,
        "client_procs": 0,
        "kv_cache_usage_peak": 0.97,
        "preemptions": 3.0,
        "requests_planned": 16,
        "requests_started": 16,
        "batches_requests": True,
        "served_as": "batched by the engine",
        "think_time_s": 0.0,
        "seconds": None,
        "replica0_kv_cache_usage_peak": 0.5,
        "engine_kv_blocks": 4096,  # not a key of this type: kept
    }
    row = {"rep": None, "error": None, "extra": {"level": old, "level_attempt": "abc"}}
    facts = LevelFacts.from_record(row)
    assert facts.arrival is facts.burstiness is facts.searched_for is facts.users is facts.level_error is None
    assert facts.kv_cache_usage_peak == 0.97 and facts.replica_figures == {
        "replica0_kv_cache_usage_peak": 0.5
    }
    assert facts.other == {"engine_kv_blocks": 4096}
    written = facts.to_dict()
    assert {k: written[k] for k in old} == old  # every key it had, as it had it
    assert set(written) - set(old) <= ALWAYS  # what it gains: the load's own keys, None
    verdict = Verdict(False, {}, {}, "TTFT p90 900 ms > 500 ms", "miss")
    assert (
        cap.limiter_text(verdict, facts)
        == cap.limiter_text(verdict, old)
        == ("TTFT p90 900 ms > 500 ms; KV cache full (peak 97%); 3 preemptions")
    )
    assert LevelFacts.from_record({**row, "error": "ClientDied: x"}).level_error == "ClientDied: x"
    assert LevelFacts.from_record({**row, "error": float("nan")}).level_error is None  # pandas' missing
    assert LevelFacts.from_dict(None) == LevelFacts.from_dict({}) == LevelFacts()


# --- the keys older records carry, and records that cannot be read ------------------------------------------
# Every key of extra.level that the committed runs carry (lab/examples, lab/results: runs written before the
# level record had a type, as dicts of engine facts). The type must keep naming each as they wrote it, or
# those runs no longer load: a field renamed or dropped here breaks the test, not a reader's old run.
OLDER_KEYS = frozenset(
    {
        *("requests_planned", "requests_started", "batches_requests", "served_as", "think_time_s", "think"),
        *("seconds", "duration_s", "arrival", "burstiness", "searched_for", "extended", "search_ceiling"),
        *("search_ratio", "users", "in_flight_mean", "in_flight_p90", "arrivals_per_s", "wall_s"),
        *("client_procs", "origin_perf_counter", "client", "client_cpu_share", "client_busy_max"),
        *("client_limited", "kv_cache_usage_peak", "requests_running_peak", "requests_waiting_peak"),
        *("prefix_cache_hit_rate_peak", "preemptions", "prefix_cache_queries", "prefix_cache_hits"),
        *("engine_step_s", "engine_steps", "server_timings", "gpu_samples", "gpu_index", "gpu_power_w_mean"),
        *("gpu_power_w_peak", "gpu_util_pct_mean", "gpu_memory_used_peak_bytes", "gpu_energy_j"),
        "gpu_energy_source",
    }
)


def committed_level_rows() -> list[tuple[Path, dict]]:
    """Every level record of the committed runs (the lab's and the tests' fixtures), as read back."""
    lab_example("h200-load")  # a small clone has no lab evidence: skip there
    out = []
    for path in [*ROOT.glob("lab/**/records.jsonl*"), *ROOT.glob("tests/**/records.jsonl*")]:
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", encoding="utf-8") as f:
            for line in f:
                if '"level": {' in line:  # a request's record: only a level's own carries extra.level
                    row = json.loads(line)
                    if isinstance((row.get("extra") or {}).get("level"), dict):
                        out.append((path, row))
    return out


def test_the_keys_older_records_carry_are_named_and_every_committed_level_record_loads():
    rows = committed_level_rows()
    assert len(rows) >= 270  # the lab's runs were read (274 level records when the type came)
    carried = set().union(*(row["extra"]["level"] for _, row in rows))
    assert carried >= OLDER_KEYS, sorted(OLDER_KEYS - carried)  # the pin is what real records carry
    assert OLDER_KEYS <= NAMED, sorted(OLDER_KEYS - NAMED)  # ... and the type names every one of them
    for path, row in rows:  # each loads through the checked reader: every value of the type its field says
        facts = LevelFacts.from_record(row)
        assert facts.other == {}, (path, facts.other)


def test_an_engine_fact_the_type_does_not_name_is_refused_where_it_is_measured():
    """The measuring side's constructor is strict (a new figure is a field, not a stray key): a backend whose
    ``load_stats`` reports a gauge the type does not name fails its level, naming the key and the backend."""
    from llm_call_anatomy.backends.load_level import run_level
    from llm_call_anatomy.backends.load_loop import LoadSettings
    from llm_call_anatomy.contract.level_facts import UnknownFactError

    with pytest.raises(UnknownFactError, match=r"backend made-up reported .*: made_up_pool_bytes\b"):
        LevelFacts.from_engine({"wall_s": 1.0, "made_up_pool_bytes": 3, "replica0_x": 1.0}, "backend made-up")
    assert LevelFacts.from_engine({"wall_s": 1, "replica0_x": 1.0}).replica_figures == {"replica0_x": 1.0}

    class NewGauge(Reports):
        def load_stats(self) -> dict[str, float]:
            return {"made_up_pool_now": 1.0, "kv_cache_usage_now": 0.5}

    request = Request(prompt_ids=[1, 2], max_new_tokens=2)
    with pytest.raises(UnknownFactError, match=r"backend reports reported .*: made_up_pool_peak \("):
        run_level(NewGauge(), [[request]], LoadSettings(concurrency=1))


@pytest.mark.parametrize(
    ("key", "value", "said"),
    [
        ("wall_s", "12.5", "extra.level.wall_s is str '12.5', not float"),
        ("requests_planned", 4.5, "extra.level.requests_planned is float 4.5, not int"),
        ("kv_cache_usage_peak", True, "extra.level.kv_cache_usage_peak is bool True, not float"),
        ("batches_requests", 1, "extra.level.batches_requests is int 1, not bool"),
        (
            "client_cpu_share",
            [0.2, "x"],
            "extra.level.client_cpu_share is list [0.2, 'x'], not list[float | None]",
        ),
        ("server_timings", [1], "extra.level.server_timings is list [1], not dict[str, Any]"),
    ],
)
def test_a_damaged_level_record_names_its_run_level_and_key(key, value, said):
    row = {
        "run_id": "h200-x",
        "backend": "vllm",
        "workload": "load",
        "mode": "sessions",
        "case": "C=8",
        "rep": None,
        "load_concurrency": 8,
        "extra": {"level": {"wall_s": 2.0, key: value}},
    }
    with pytest.raises(DamagedRecordError) as caught:
        LevelFacts.from_record(row)
    assert str(caught.value) == f"run h200-x, level vllm load/sessions C=8: a damaged level record: {said}"
    with pytest.raises(
        DamagedRecordError, match=r"^run h200-x, level .*: extra.level is str 'x', not an object"
    ):
        LevelFacts.from_record({**row, "extra": {"level": "x"}})
    assert LevelFacts.from_dict({key: None}) == LevelFacts()  # None is "not recorded" for every key


def test_every_committed_runs_level_records_read_and_write_back_their_keys():
    seen = 0
    for path in [*ROOT.glob("lab/examples/**/records.jsonl*"), *ROOT.glob("tests/**/records.jsonl*")]:
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", encoding="utf-8") as f:
            for line in f:
                if '"level": {' not in line:
                    continue  # a request's record: only a level's own carries extra.level
                level = (json.loads(line).get("extra") or {}).get("level")
                if not isinstance(level, dict):
                    continue
                facts = LevelFacts.from_dict(level)
                assert facts.other == {}, (path, facts.other)  # every key the harness wrote is named
                written = facts.to_dict()
                assert {k: written[k] for k in level} == level, path
                seen += 1
    assert seen


# --- what the runner writes ---------------------------------------------------------------------------------
def engine_figures() -> set[str]:
    """Every figure name an adapter's ``load_stats`` reports (a server's /metrics, vLLM and SGLang in process:
    the same names; vLLM's stepping counters), and a data-parallel replica's own."""
    from llm_call_anatomy.backends.openai.metrics import LOAD_VALUES

    replica = {
        "replica0_prefix_cache_hits_total",
        "replica0_prefix_cache_queries_total",
        "replica1_kv_cache_usage_now",
    }
    return {*LOAD_VALUES.values(), "engine_step_s_total", "engine_steps_total", *replica}


class Reports(Backend):
    """A batching stand-in that reports every engine figure (rising: a counter's difference is > 0), its
    server's latency histograms, and is served over HTTP from this process (its client's CPU share)."""

    name = "reports"
    capabilities = Capabilities(load=True, batches_requests=True, over_http=True)

    def __init__(self) -> None:
        super().__init__(BackendSettings(model_path="-", model_label="-"))
        self.samples = 0

    def _generate(self, request: Request, clock: TokenClock) -> RawOutput:  # pragma: no cover - load only
        raise NotImplementedError

    async def stream(self, request: Request, clock: TokenClock) -> RawOutput:
        for _ in range(request.max_new_tokens):
            await asyncio.sleep(0.002)
            clock.tick(1)
        return RawOutput(token_ids=[7] * request.max_new_tokens, text="")

    def load_stats(self) -> dict[str, float]:
        self.samples += 1
        return dict.fromkeys(engine_figures(), float(self.samples))

    def latency_snapshot(self):
        return {}

    def latency_diff(self, before, after) -> dict:
        return {"ttft_n": 10**6, "ttft_ms_p50": 12.0}


SPEC = """
workloads:
  - name: lf
    kind: load
    shape: fixed
    prompt_tokens: 16
    shared_prefix_tokens: [0]
    output_tokens: 3
    requests: 6
    warmup_requests: 0
    levels: [2]
"""
ONLY_ELSEWHERE = {  # named fields this level does not write, and who does
    "origin_perf_counter": "client processes (backends.load_shards)",
    "client": "client processes",
    "client_failed": "a client process that died",
    "gpu_telemetry": "a GPU that was not measured (backends.telemetry)",
    "trace": "a replayed trace's planner (workloads/trace: Group.load['facts']; tests/workloads/trace)",
    "search_engine_limit": "a search stopped at the engine's limit (tests/harness/test_capacity.py)",
    "search_engine_limit_name": "a search stopped at the engine's limit",
    "users_start": "users who think (tests/harness/test_capacity_verdicts.py, stationary users)",
    "session_turns": "users who think",
}


def test_the_runner_writes_exactly_the_named_keys(tiny_model_dir, tmp_path, monkeypatch):
    from llm_call_anatomy.backends import load_level
    from llm_call_anatomy.backends.telemetry import GpuTelemetry
    from llm_call_anatomy.harness.records import read_records
    from llm_call_anatomy.harness.runner import Runner
    from tests.backends.test_telemetry import FakeNvml
    from tests.harness.test_capacity import plan_of

    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr(load_level, "GpuTelemetry", lambda: GpuTelemetry(every_s=0.01, nvml=FakeNvml()))
    plan = plan_of(SPEC, tiny_model_dir, tmp_path)
    out = tmp_path / "run"
    backend = Reports()
    Runner(backend, plan, out, {"run_id": "facts", "backend": backend.name}, resume=False).run()
    (row,) = [r for r in read_records(out) if r.get("kind") == "load" and r["rep"] is None]
    level = row["extra"]["level"]
    facts = LevelFacts.from_record(row)
    assert facts.other == {} and facts.to_dict() == level  # nothing it does not name; written back the same
    written = set(level) - set(facts.replica_figures)
    assert written == NAMED - set(ONLY_ELSEWHERE), (sorted(written - NAMED), sorted(NAMED - written))
    assert facts.replica_figures == {
        "replica0_prefix_cache_hits": pytest.approx(facts.prefix_cache_hits),
        "replica0_prefix_cache_queries": pytest.approx(facts.prefix_cache_queries),
        "replica1_kv_cache_usage_peak": facts.kv_cache_usage_peak,
    }
    assert facts.requests_planned == facts.requests_started == 6 and facts.level_error is None
    assert facts.server_timings == {"ttft_n": 10**6, "ttft_ms_p50": 12.0} and facts.gpu_energy_source


def test_a_gpu_not_measured_and_a_clients_cpu_write_named_keys(monkeypatch):
    """The writers of the fields the level above does not write: a GPU without NVML, a client's CPU facts
    (client processes write theirs as a process in this one does; tests/backends/test_lean_stream.py checks
    a level driven from client processes, one of them dying)."""
    import sys

    from llm_call_anatomy.backends.load_shards import client_cpu_facts
    from llm_call_anatomy.backends.telemetry import GpuTelemetry

    monkeypatch.setitem(sys.modules, "pynvml", None)
    with GpuTelemetry() as gpu:
        pass
    assert set(gpu.facts()) == {"gpu_telemetry"}
    assert set(client_cpu_facts([0.3, None])) <= NAMED
