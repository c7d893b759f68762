"""Qwen3's real tokenizer for ``qwen3-8b-shape`` against tiktoken: the same ids as tiktoken on the same
ranks and pattern over a few thousand varied strings, the merges in rank order, Qwen3's added tokens at
their ids, the template experiment's first prompt (its token count, printed with ``-s``) and the facts
env.json gets. Its chat template: ``test_qwen3_tokenizer_template.py``; the build's checks:
``test_qwen3_tokenizer_build.py``."""

from __future__ import annotations

import json
import random
import unicodedata

from llm_call_anatomy.harness import qwen3_tokenizer as qt
from tests.harness.conftest import needs_qwen3_tokenizer

pytestmark = needs_qwen3_tokenizer


# --- a few thousand varied strings ---------------------------------------------------------
def _chars(rng: random.Random, lo: int, hi: int, n: int) -> str:
    return "".join(chr(rng.randint(lo, hi)) for _ in range(n))


def _word(rng: random.Random) -> str:
    return "".join(
        rng.choice("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_") for _ in range(rng.randint(1, 12))
    )


def _space(rng: random.Random) -> str:
    return "".join(
        rng.choice([" ", "  ", "\t", "\n", "\r\n", "\n\n\n", "\u00a0", "\u3000", "    "])
        for _ in range(rng.randint(1, 6))
    )


def _code(rng):
    name, arg = _word(rng), _word(rng)
    body = rng.choice(
        [
            f"return {arg} * {rng.randint(0, 10**6)}",
            f"print(f'{{{arg}!r}}')",
            f"{arg} += 1  # {_word(rng)}",
            f"if ({arg} >= 0x{rng.randint(0, 65535):x}) {{ {arg}--; }}",
            f"yield from {name}({arg}[::-1])",
        ]
    )
    indent = rng.choice(["    ", "\t", "  ", "        "])
    return f"def {name}({arg}):\n{indent}{body}\n\n" + rng.choice(["", "}\n", ";;\n", "\n\n\n"])


def _json(rng):
    def value(depth):
        kind = rng.randrange(6 if depth < 3 else 4)
        if kind == 0:
            return rng.randint(-(10**9), 10**9)
        if kind == 1:
            return round(rng.uniform(-1e4, 1e4), rng.randint(0, 6))
        if kind == 2:
            return rng.choice([_word(rng), _chars(rng, 0x4E00, 0x9FFF, 3), "ünïcödé", "", 'a "quoted" word'])
        if kind == 3:
            return rng.choice([True, False, None])
        if kind == 4:
            return [value(depth + 1) for _ in range(rng.randint(0, 4))]
        return {_word(rng): value(depth + 1) for _ in range(rng.randint(0, 4))}

    return json.dumps(
        {_word(rng): value(0) for _ in range(rng.randint(1, 5))},
        indent=rng.choice([None, 1, 2, 4]),
        ensure_ascii=rng.random() < 0.5,
    )


def _log(rng):
    level = rng.choice(["INFO", "WARN", "ERROR", "debug", "Trace"])
    ip = ".".join(str(rng.randint(0, 255)) for _ in range(4))
    return (
        f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:"
        f"{rng.randint(0, 59):02d}:{rng.random() * 60:06.3f}Z {level} [{_word(rng)}-{rng.randint(0, 99)}] "
        f"{ip} GET /api/v{rng.randint(1, 3)}/{_word(rng)}?id={rng.getrandbits(64):016x} -> "
        f"{rng.choice([200, 404, 503])} in {rng.uniform(0, 999):.1f}ms\n"
    )


def _cjk(rng):
    ranges = [(0x4E00, 0x9FFF), (0x3040, 0x309F), (0x30A0, 0x30FF), (0xAC00, 0xD7A3), (0xFF01, 0xFF5E)]
    return "".join(
        _chars(rng, *rng.choice(ranges), rng.randint(1, 8))
        + rng.choice(["", "，", "。", " ", "、", "！", "ab"])
        for _ in range(rng.randint(1, 6))
    )


def _emoji(rng):
    parts = [
        chr(rng.randint(0x1F300, 0x1FAFF)),
        chr(rng.randint(0x1F300, 0x1F64F)) + chr(rng.randint(0x1F3FB, 0x1F3FF)),
        "\U0001f468\u200d\U0001f469\u200d\U0001f467",
        chr(rng.randint(0x1F1E6, 0x1F1FF)) + chr(rng.randint(0x1F1E6, 0x1F1FF)),
        "\u2764\ufe0f",
        _word(rng),
        " ",
    ]
    return "".join(rng.choice(parts) for _ in range(rng.randint(1, 10)))


def _whitespace(rng):
    return "".join(
        rng.choice([_space(rng), _word(rng), str(rng.randint(0, 99999))]) for _ in range(rng.randint(1, 10))
    )


def _scripts(rng):
    ranges = [
        (0x0400, 0x04FF),
        (0x0600, 0x06FF),
        (0x0900, 0x097F),
        (0x0E00, 0x0E7F),
        (0x0370, 0x03FF),
        (0x0590, 0x05FF),
    ]
    return " ".join(_chars(rng, *rng.choice(ranges), rng.randint(1, 7)) for _ in range(rng.randint(1, 6)))


def _decomposed(rng):  # NFD text: Qwen's tokenizers normalise to NFC first
    words = ["café", "naïve", "Ångström", "résumé", "Žluťoučký kůň", "Tiếng Việt", "e\u0301", "한국어"]
    return unicodedata.normalize("NFD", " ".join(rng.choice(words) for _ in range(rng.randint(1, 5))))


def _english(rng):
    return " ".join(
        rng.choice(
            [
                "It's",
                "WE'RE",
                "they'Ve",
                "I'll",
                "you'D",
                "don't",
                "O'Neil",
                "3.14159",
                "1,000,000",
                "--flag=value",
                "e.g.",
                "(parenthesised)",
                "ALLCAPS",
                "x²",
                "½",
                "Ⅻ",
                _word(rng),
            ]
        )
        for _ in range(rng.randint(1, 12))
    )


def _specials(rng):
    tags = [
        "<|im_start|>",
        "<|im_end|>",
        "<think>",
        "</think>",
        "<tool_call>",
        "<|endoftext|>",
        "<tool_response>",
        "<|fim_pad|>",
    ]
    return "".join(
        rng.choice([*tags, _word(rng), "\n", " ", "<|im_start", "think>"]) for _ in range(rng.randint(1, 8))
    )


def _any_codepoints(rng):
    return "".join(
        chr(c)
        for c in (rng.randint(0x20, 0xFFFF) for _ in range(rng.randint(1, 20)))
        if not 0xD800 <= c <= 0xDFFF
    )


KINDS = [
    _code,
    _json,
    _log,
    _cjk,
    _emoji,
    _whitespace,
    _scripts,
    _decomposed,
    _english,
    _specials,
    _any_codepoints,
]


def varied_strings(n_per_kind: int = 300, seed: int = 24) -> list[str]:
    rng = random.Random(seed)
    texts = [kind(rng) for kind in KINDS for _ in range(n_per_kind)]
    texts += (
        [" " * k for k in range(1, 40)] + ["\n" * k for k in range(1, 12)] + ["", "a", " a", "a ", "\r\n\r\n"]
    )
    return texts


def test_ids_equal_tiktoken_on_the_same_ranks_and_pattern(qwen3_tokenizer, tiktoken_reference):
    texts = varied_strings()
    assert len(texts) > 3000
    mismatches = []
    for text in texts:
        ids = qwen3_tokenizer(text, add_special_tokens=False)["input_ids"]
        if ids != qt.reference_ids(tiktoken_reference, text):
            mismatches.append(text)
        elif qwen3_tokenizer.decode(ids) != unicodedata.normalize("NFC", text):
            mismatches.append(("decode", text))
    assert not mismatches, f"{len(mismatches)} of {len(texts)} differ, first: {mismatches[:3]!r}"


def test_the_merges_are_one_per_token_in_rank_order():
    ranks = qt.load_ranks(qt.locate_ranks())
    merges = qt.recover_merges(ranks)
    assert len(merges) == sum(1 for t in ranks if len(t) > 1)  # 151,387: Qwen2's published count
    assert [ranks[a + b] for a, b in merges] == sorted(ranks[a + b] for a, b in merges)


def test_qwen3s_added_tokens_sit_at_their_ids_with_its_special_flags(qwen3_tokenizer, shape_dir):
    assert qwen3_tokenizer.convert_tokens_to_ids(
        ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>"]
    ) == [151643, 151644, 151645, 151667, 151668]
    assert (
        qwen3_tokenizer.eos_token == "<|im_end|>"
        and qwen3_tokenizer.pad_token == "<|endoftext|>"
        and qwen3_tokenizer.bos_token is None
    )
    config = json.loads((shape_dir / "tokenizer_config.json").read_text())
    decoder = config["added_tokens_decoder"]
    special = [decoder[str(i)]["content"] for i in range(151643, 151669) if decoder[str(i)]["special"]]
    assert (
        special[0] == "<|endoftext|>" and special[-1] == "<|video_pad|>" and len(special) == 14
    )  # as Qwen3's config
    assert (
        qwen3_tokenizer.decode([151667, 151645, 151643], skip_special_tokens=True) == "<think>"
    )  # <think> is not special
    assert config["tokenizer_class"] == "Qwen2Tokenizer"


def test_the_template_experiments_first_prompt(qwen3_tokenizer, tiktoken_reference):
    """The issue's prompt (#24): its Qwen3 token count is computed, shown with ``-s``, and equals
    tiktoken's."""
    messages = [
        {"role": "system", "content": "Answer with the 3-digit HTTP status code only."},
        {"role": "user", "content": "What is the HTTP status code for Not Found?"},
    ]
    text = qwen3_tokenizer.apply_chat_template(
        messages, tokenize=False, add_generation_prompt=True, enable_thinking=False
    )
    ids = qwen3_tokenizer(text, add_special_tokens=False)["input_ids"]
    assert ids == qt.reference_ids(tiktoken_reference, text)
    assert ids[0] == 151644 and ids.count(151644) == 3 and ids.count(151645) == 2
    assert ids[-4:-1] == [
        151667,
        qwen3_tokenizer.convert_tokens_to_ids("ĊĊ"),
        151668,
    ]  # <think> \n\n </think>
    print(f"\nthe template experiment's first prompt: {len(ids)} tokens with Qwen3's tokenizer")


def test_env_json_gets_the_tokenizers_source_and_the_seed_prompt_in_its_tokens(qwen3_tokenizer, shape_dir):
    from llm_call_anatomy.contract.chat import Renderer
    from llm_call_anatomy.harness.chat import tokenizer_facts
    from llm_call_anatomy.workloads.seed import TEMPLATE_FIRST_PROMPT

    renderer = Renderer(qwen3_tokenizer)
    facts = tokenizer_facts(renderer, str(shape_dir), list(TEMPLATE_FIRST_PROMPT))
    ids = renderer.chat_ids(list(TEMPLATE_FIRST_PROMPT))
    assert facts["source"]["package"] == qt.PACKAGE and facts["source"]["ranks_sha256"] == qt.RANKS_SHA256
    assert facts["seed_template_prompt"] == {
        "tokens": len(ids),
        "added_token_positions": [i for i, t in enumerate(ids) if t >= 151643],
        "added_token_ids": [t for t in ids if t >= 151643],
    }
    assert len(ids) == 38 and sorted(set(facts["seed_template_prompt"]["added_token_ids"])) == [
        151644,
        151645,
        151667,
        151668,
    ]  # the reference's figures: 38 tokens, 7 special positions holding these 4 ids
    assert len(facts["seed_template_prompt"]["added_token_positions"]) == 7
    assert facts["size"] == 151936 and facts["class"] == "Qwen2Tokenizer"
