"""Facts about the built-in models that the harness and the report share.

The harness builds and resolves the models (``harness.models``); the report's roofline reads a
run's model config from env.json and, for runs made before env.json kept it, from here. The
built-in configs stay where the harness reads them (``harness/configs/``): that path is the source
the committed reports name.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

TINY = "tiny"
SHAPE = "qwen3-8b-shape"
SMOLLM2 = "smollm2"
# Bytes per weight by dtype name (the names of --dtype and of configs' torch_dtype); the
# report's roofline uses the same table for runs whose env.json does not say.
DTYPE_BYTES = {"float32": 4, "float": 4, "bfloat16": 2, "float16": 2, "half": 2, "fp8": 1, "float8": 1}

TINY_CONFIG = {
    "architectures": ["Qwen3ForCausalLM"],
    "model_type": "qwen3",
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 32,  # vLLM's CPU attention supports head sizes 32..512, not 16
    "hidden_act": "silu",
    "max_position_embeddings": 8192,
    "rms_norm_eps": 1e-6,
    "rope_theta": 1000000,
    "tie_word_embeddings": False,
    "attention_bias": False,
    "use_cache": True,
    "torch_dtype": "float32",
    "initializer_range": 0.02,
    "transformers_version": "4.51.0",  # as in Qwen3's own config (transformers reads it to pick fixes)
}

ROOT = Path(__file__).resolve().parents[1]
CONFIG_FILES = {SHAPE: "harness/configs/qwen3-8b.json", SMOLLM2: "harness/configs/smollm2.json"}


def builtin_config(label: str) -> tuple[dict[str, Any], str] | None:
    """A built-in model's config and where it came from, or None for a label that is not built in."""
    if label in CONFIG_FILES:
        return json.loads((ROOT / CONFIG_FILES[label]).read_text()), CONFIG_FILES[label]
    if label == TINY:
        return dict(TINY_CONFIG), "harness.models.TINY_CONFIG"
    return None
