"""A random-weight checkpoint for a server that loads weights only from disk (``transformers serve`` has no
``--load-format dummy`` as vLLM and SGLang have): the model folder's own files (config, tokenizer, chat
template) with weights drawn by the model's own initialisation (seed 0), written once per folder and dtype
beside it (``<folder>-random-<dtype>``; a ``DONE`` file marks a whole one) and reused after.

The weights are drawn on the run's device in a child process (its memory is the device's again once it
exits, before the server starts): on the H200 the Qwen3-8B shape is 16 GB of bfloat16 to write.

    python -m llm_call_anatomy.backends.openai.random_checkpoint MODEL_DIR OUT_DIR DTYPE DEVICE
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from llm_call_anatomy import HOME

ROOT = HOME  # where the child imports llm_call_anatomy from (the checkout or site-packages)
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".gguf")


def has_weights(folder: str | Path) -> bool:
    return any(p.suffix in WEIGHT_SUFFIXES for p in Path(folder).iterdir())


def checkpoint_dir(model_path: str | Path, dtype: str) -> Path:
    src = Path(model_path).resolve()
    return src.parent / f"{src.name}-random-{dtype}"


def ensure(
    model_path: str | Path, dtype: str, device: str, python: str = sys.executable
) -> tuple[Path, float]:
    """The checkpoint's folder (written now if missing) and the seconds spent writing it (0.0: it was
    there)."""
    out = checkpoint_dir(model_path, dtype)
    if (out / "DONE").is_file():
        return out, 0.0
    t0, tmp = time.monotonic(), out.with_name(out.name + f".tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    done = subprocess.run(
        [
            python,
            "-m",
            "llm_call_anatomy.backends.openai.random_checkpoint",
            str(model_path),
            str(tmp),
            dtype,
            device,
        ],
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        raise RuntimeError(f"random-weight checkpoint of {model_path} failed: {tail[0]}")
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    return out, round(time.monotonic() - t0, 1)


def write(model_path: str, out: str, dtype: str, device: str) -> None:
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    torch.manual_seed(0)
    config = AutoConfig.from_pretrained(model_path)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(config, dtype=getattr(torch, dtype))
    model.save_pretrained(out)
    for f in Path(
        model_path
    ).iterdir():  # tokenizer, chat template, generation config; the folder's own config
        if f.is_file() and f.suffix not in WEIGHT_SUFFIXES and not f.name.endswith(".index.json"):
            shutil.copy2(f, Path(out) / f.name)
    (Path(out) / "DONE").write_text(f"random weights (seed 0, {dtype}) for {model_path}\n")


if __name__ == "__main__":
    write(*sys.argv[1:5])
