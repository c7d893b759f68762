"""Train the project's own byte-level BPE tokenizer and lay out its ids like Qwen3's.

No model hub is reachable, so the tiny model gets a tokenizer the project trains itself with the
``tokenizers`` library, on the text of the built-in workloads (the Qwen3-8B shape has Qwen3's
real one: :mod:`harness.qwen3_tokenizer`).
The id layout copies Qwen3's: BPE entries from 0, then the 26 Qwen3 added tokens from
``special_base``, and *filler* entries everywhere else up to the
model's vocabulary size, so that every id a random-weight model can sample decodes to text
(fillers are entries no merge can produce and no real text contains, so encoding never yields them).
"""

from __future__ import annotations

import json
from pathlib import Path

# Qwen3's added tokens in id order from 151643; ``special`` as in Qwen3's tokenizer_config.
QWEN3_ADDED_TOKENS: tuple[tuple[str, bool], ...] = (
    ("<|endoftext|>", True),
    ("<|im_start|>", True),
    ("<|im_end|>", True),
    ("<|object_ref_start|>", True),
    ("<|object_ref_end|>", True),
    ("<|box_start|>", True),
    ("<|box_end|>", True),
    ("<|quad_start|>", True),
    ("<|quad_end|>", True),
    ("<|vision_start|>", True),
    ("<|vision_end|>", True),
    ("<|vision_pad|>", True),
    ("<|image_pad|>", True),
    ("<|video_pad|>", True),
    ("<tool_call>", False),
    ("</tool_call>", False),
    ("<|fim_prefix|>", False),
    ("<|fim_middle|>", False),
    ("<|fim_suffix|>", False),
    ("<|fim_pad|>", False),
    ("<|repo_name|>", False),
    ("<|file_sep|>", False),
    ("<tool_response>", False),
    ("</tool_response>", False),
    ("<think>", False),
    ("</think>", False),
)


def filler(token_id: int) -> str:
    """An unreachable vocabulary entry (printable ASCII, so the byte-level decoder keeps it)."""
    return f"<unused{token_id}>"


def train_bpe_json(texts: list[str], bpe_size: int) -> dict:
    """Train a byte-level BPE of at most ``bpe_size`` entries; return tokenizer.json as a dict."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=bpe_size,
        min_frequency=2,
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=[],
    )
    tok.train_from_iterator(texts, trainer=trainer)
    return json.loads(tok.to_str())


def layout_vocab(bpe: dict, special_base: int, vocab_size: int) -> dict:
    """Fill the BPE vocabulary up to ``special_base``, then the 26 added tokens, then fillers to
    ``vocab_size``.

    ``tokenizers`` numbers added tokens sequentially after the model's vocabulary, so the ids
    after ``special_base`` are all added tokens: Qwen3's 26, then fillers (not special, so they
    stay visible in decoded text).
    """
    vocab: dict[str, int] = bpe["model"]["vocab"]
    if len(vocab) > special_base:
        raise ValueError(f"trained vocabulary ({len(vocab)}) does not fit below id {special_base}")
    if special_base + len(QWEN3_ADDED_TOKENS) > vocab_size:
        raise ValueError(f"vocab_size {vocab_size} is too small for the added tokens at {special_base}")
    for token_id in range(len(vocab), special_base):
        vocab[filler(token_id)] = token_id
    added = list(QWEN3_ADDED_TOKENS)
    added += [(filler(i), False) for i in range(special_base + len(added), vocab_size)]
    bpe["added_tokens"] = added_token_entries(added, special_base)
    return bpe


def added_token_entries(added: list[tuple[str, bool]], first_id: int) -> list[dict]:
    """tokenizer.json's ``added_tokens`` for (content, special) pairs numbered from ``first_id``."""
    return [
        {
            "id": first_id + i,
            "content": content,
            "single_word": False,
            "lstrip": False,
            "rstrip": False,
            "normalized": False,
            "special": special,
        }
        for i, (content, special) in enumerate(added)
    ]


def write_tokenizer(
    out_dir: Path, texts: list[str], *, bpe_size: int, special_base: int, vocab_size: int, chat_template: str
) -> None:
    """Write tokenizer.json + tokenizer_config.json (with the chat template) into ``out_dir``."""
    spec = layout_vocab(train_bpe_json(texts, bpe_size), special_base, vocab_size)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "tokenizer.json").write_text(json.dumps(spec, ensure_ascii=False))
    added_decoder = {
        str(t["id"]): {
            k: t[k] for k in ("content", "lstrip", "normalized", "rstrip", "single_word", "special")
        }
        for t in spec["added_tokens"][: len(QWEN3_ADDED_TOKENS)]
    }
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "model_max_length": 131072,
        "bos_token": None,
        "eos_token": "<|im_end|>",
        "pad_token": "<|endoftext|>",
        "unk_token": None,
        "clean_up_tokenization_spaces": False,
        "add_bos_token": False,
        "added_tokens_decoder": added_decoder,
        "chat_template": chat_template,
    }
    (out_dir / "tokenizer_config.json").write_text(json.dumps(config, indent=1, ensure_ascii=False))
