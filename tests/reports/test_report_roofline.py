"""The roofline: GPU table, parameter count from a config, floors (reports/roofline.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llm_call_anatomy.reports import roofline

QWEN3_8B = Path(__file__).parents[2] / "harness" / "configs" / "qwen3-8b.json"


def test_qwen3_8b_parameter_count():
    config = json.loads(QWEN3_8B.read_text())
    params = roofline.qwen3_params(config)
    assert params == 8_190_735_360  # 8.19e9 with the untied lm_head
    tied = roofline.qwen3_params({**config, "tie_word_embeddings": True})
    assert params - tied == config["vocab_size"] * config["hidden_size"]


@pytest.mark.parametrize("config_name", ["qwen3-8b", "tiny"])
def test_formula_matches_transformers(config_name):
    """Count the parameters transformers builds for the same config (on the meta device: no memory)."""
    torch = pytest.importorskip("torch")
    from transformers import AutoModelForCausalLM, Qwen3Config

    from llm_call_anatomy.harness.models import TINY_CONFIG

    config = (
        json.loads(QWEN3_8B.read_text()) if config_name == "qwen3-8b" else {**TINY_CONFIG, "vocab_size": 2112}
    )
    fields = {k: v for k, v in config.items() if k not in ("architectures", "model_type", "torch_dtype")}
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(Qwen3Config(**fields))
    assert roofline.qwen3_params(config) == sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize(
    ("gpu", "label", "bw", "tf"),
    [
        ("NVIDIA H200", "H200 SXM", 4800, 989),
        ("NVIDIA H200 NVL", "H200 NVL", 4800, 835),
        ("NVIDIA A100-SXM4-40GB", "A100 40GB", 1555, 312),
        ("NVIDIA A100-SXM4-80GB", "A100 80GB SXM", 2039, 312),
        ("NVIDIA A100 80GB PCIe", "A100 80GB PCIe", 1935, 312),
        ("NVIDIA H100 80GB HBM3", "H100 SXM", 3350, 989),
        ("NVIDIA H100 PCIe", "H100 PCIe", 2000, 756),
        ("NVIDIA L4", "L4", 300, 121),
        ("NVIDIA L40S", "L40S", 864, 362),
        ("NVIDIA GeForce RTX 4090", "RTX 4090", 1008, 165.2),
    ],
)
def test_known_gpus(gpu, label, bw, tf):
    peak = roofline.gpu_peak(gpu)
    assert (peak.label, peak.bandwidth_gbps, peak.tflops, peak.source) == (label, bw, tf, "datasheet")


def test_overrides_and_unknown_gpus():
    assert roofline.gpu_peak(None, 1000, 100) is None  # CPU: not applicable, whatever the overrides
    assert roofline.gpu_peak("Mystery GPU") is None
    assert roofline.gpu_peak("Mystery GPU", bandwidth_gbps=500) is None
    peak = roofline.gpu_peak("Mystery GPU", 500, 50)
    assert (peak.bandwidth_gbps, peak.tflops, peak.source) == (500, 50, "command line")
    mixed = roofline.gpu_peak("NVIDIA H200", bandwidth_gbps=4000)
    assert (mixed.bandwidth_gbps, mixed.tflops, mixed.source) == (4000, 989, "datasheet + command line")


def test_floors():
    h200 = roofline.gpu_peak("NVIDIA H200")
    weight_bytes = 8_190_735_360 * 2
    assert roofline.decode_floor_ms(weight_bytes, h200.bandwidth_gbps) == pytest.approx(3.4128, rel=1e-4)
    assert roofline.prefill_floor_ms(8_190_735_360, 1024, h200) == pytest.approx(16.96, rel=1e-3)
    assert roofline.effective_bandwidth_gbps(weight_bytes, 64.0) == pytest.approx(255.96, rel=1e-3)


def test_model_size_sources(tmp_path):
    assert roofline.model_size({"model": {"params": 1000, "dtype_bytes": 2}}) == roofline.ModelSize(
        1000, 2, "env.json"
    )
    (tmp_path / "config.json").write_text(QWEN3_8B.read_text())
    size = roofline.model_size({"dtype": "bfloat16", "model": {"path": str(tmp_path)}})
    assert (size.params, size.dtype_bytes, size.weight_bytes) == (8_190_735_360, 2, 8_190_735_360 * 2.0)
    gone = roofline.model_size({"dtype": "float32", "model": {"path": str(tmp_path / "gone")}})
    assert gone.params is None and gone.dtype_bytes == 4 and "not available" in gone.source


def test_step_bytes_leave_out_the_input_embedding_unless_tied():
    config = json.loads(QWEN3_8B.read_text())
    size = roofline.ModelSize(8_190_735_360, 2, "env.json")
    step = roofline.step_bytes(size, config, "qwen3-8b.json")
    embedding = 151_936 * 4096 * 2  # 1.24 GB: gathered one row per token, not streamed
    assert step.embedding_left_out == embedding
    assert step.weights == 8_190_735_360 * 2 - embedding
    assert step.kv_per_token == 36 * 2 * 8 * 128 * 2  # layers x K,V x kv heads x head_dim x bytes
    assert step.at(1000) == step.weights + 1000 * step.kv_per_token
    tied = roofline.step_bytes(size, {**config, "tie_word_embeddings": True}, "tied")
    assert (
        tied.embedding_left_out == 0 and tied.weights == 8_190_735_360 * 2
    )  # the lm_head streams the shared matrix
    assert "lm_head" in tied.note
    bare = roofline.step_bytes(size, None)
    assert bare.weights == 8_190_735_360 * 2 and bare.kv_per_token is None
    assert roofline.step_bytes(roofline.ModelSize(None, 2, "x"), config) is None


def test_model_config_of_a_builtin_when_the_path_is_gone():
    env = {"model": {"label": "qwen3-8b-shape", "builtin": True, "path": "/gone"}}
    config, source = roofline.model_config(env)
    assert config["vocab_size"] == 151_936 and "qwen3-8b.json" in source
    env = {"model": {"label": "smollm2", "builtin": True, "path": "/gone"}}
    config, source = roofline.model_config(env)
    assert config["tie_word_embeddings"] is True and "smollm2.json" in source
    assert roofline.model_config({"model": {"config": {"vocab_size": 3}}}) == ({"vocab_size": 3}, "env.json")
    assert roofline.model_config({"model": {"path": "/gone"}})[0] is None
