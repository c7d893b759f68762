"""The lean client's stream parser (``ChunkReader``, backends/openai/lean_stream.py) on fabricated SSE bytes,
with every JSON library of backends/openai/json_codec.py, and the client processes' event loop choice.

- What it keeps (ids, text, finish reason, cached tokens, usage counts, the echoed prompt, the tokens
  ticked) equals what the chunks say, computed here from the chunks themselves, with orjson, msgspec and
  the stdlib alike, however the bytes are cut into reads (every cut of a short stream, one read for all).
- Tokens that come in one read share that read's stamp; a chunk cut across reads is stamped by the read
  that completes it; nothing after ``data: [DONE]`` is read.
- Faults on fabricated bytes: a line that is not JSON, JSON that is not an object, a chunk without
  choices, an error object, no finish reason: each a ``StreamFault`` naming the cause.
"""

from __future__ import annotations

import json

import pytest

from llm_call_anatomy.backends.base import TokenClock
from llm_call_anatomy.backends.load_shards import LOOP_ENV_VAR, event_loop
from llm_call_anatomy.backends.openai.json_codec import ENV_VAR, available, choose
from llm_call_anatomy.backends.openai.lean_stream import ChunkReader, StreamFault

pytestmark = pytest.mark.openai  # aiohttp and orjson: the openai extra
CODECS = available()


def chunks(n: int, mode: str, prompt: list[int] | None = None) -> list[dict]:
    """A vLLM-shaped stream of ``n`` tokens: ``ids`` (token_ids, the prompt echoed first), ``usage``
    (continuous usage stats), ``text`` (a generic server: text only, no usage until the end)."""
    out = []
    for i in range(n):
        choice = {"index": 0, "text": f' t{i}\u00e9\\"', "logprobs": None, "stop_reason": None}
        choice["finish_reason"] = "length" if i == n - 1 else None
        if mode == "ids":
            choice["token_ids"] = [i + 5, i + 6] if i == 2 else [i + 5]  # one chunk of two tokens
            if i == 0:
                choice["prompt_token_ids"] = prompt
        chunk = {"id": "cmpl-7", "object": "text_completion", "created": 0, "model": "m", "choices": [choice]}
        if mode == "usage":
            done = i + 1 + (i >= 2)  # the third chunk carries two tokens
            chunk["usage"] = {"prompt_tokens": 9, "completion_tokens": done, "total_tokens": 9 + done}
        out.append(chunk)
    total = n + 1 if mode != "text" else n
    usage = {"prompt_tokens": 9, "completion_tokens": total, "total_tokens": 9 + total}
    out.append(
        {"id": "cmpl-7", "choices": [], "usage": {**usage, "prompt_tokens_details": {"cached_tokens": 4}}}
    )
    return out


def sse(items: list[dict], crlf: bool = False, compact: bool = True) -> bytes:
    end = "\r\n" if crlf else "\n"
    lines = [": keep-alive" + end]  # an SSE comment: carries nothing
    for c in items:
        body = json.dumps(c, separators=(",", ":")) if compact else json.dumps(c)
        lines.append(f"data: {body}{end}{end}")
    lines.append(f"data: [DONE]{end}{end}")
    return "".join(lines).encode()


def expected(items: list[dict], mode: str) -> dict:
    """What the stream says, read from the chunks themselves."""
    choices = [c["choices"][0] for c in items if c["choices"]]
    ticks = [
        len(ch["token_ids"]) if mode == "ids" else 2 if i == 2 and mode == "usage" else 1
        for i, ch in enumerate(choices)
    ]
    return {
        "ids": [t for ch in choices for t in ch.get("token_ids", [])],
        "text": "".join(ch["text"] for ch in choices),
        "finish": "length",
        "cached": 4,
        "prompt": choices[0].get("prompt_token_ids"),
        "ticks": ticks,
        "reported": None if mode == "ids" else items[-1]["usage"]["completion_tokens"],
    }


def read(data: bytes, cuts: list[int], codec) -> tuple[ChunkReader, dict]:
    """``data`` fed as reads cut at ``cuts``, read ``k`` arriving at time ``k``."""
    reader = ChunkReader(TokenClock(lambda: None), codec)
    bounds = [0, *cuts, len(data)]
    for k, (a, b) in enumerate(zip(bounds, bounds[1:], strict=False)):
        if reader.feed(data[a:b], float(k)):
            break
    out = reader.output()
    return reader, {
        "ids": out.token_ids,
        "text": out.text,
        "finish": out.finish_reason,
        "cached": out.cached_tokens,
        "prompt": out.prompt_ids_used,
        "ticks": [n for _, n in reader.clock.stamps],
        "reported": out.reported_output_tokens,
    }


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name.split()[0])
@pytest.mark.parametrize("mode", ["ids", "usage", "text"])
def test_every_library_and_every_cut_read_what_the_chunks_say(codec, mode: str) -> None:
    items = chunks(4, mode, prompt=[3, 1, 4, 1, 5])
    want = expected(items, mode)
    data = sse(items)
    assert read(data, [], codec)[1] == want  # one read for the whole stream
    for cut in range(1, len(data)):  # two reads, cut at every byte
        assert read(data, [cut], codec)[1] == want, cut
    lines = [k + 1 for k, b in enumerate(data) if b == ord("\n")][:-1]
    assert read(data, lines, codec)[1] == want  # one read per line, as the old readline loop did
    assert read(sse(items, crlf=True, compact=False), [7, 300], codec)[1] == want


def test_tokens_of_one_read_share_its_stamp_and_a_cut_chunk_takes_the_completing_read() -> None:
    items = chunks(4, "usage")
    data = sse(items)
    ends = [k + 1 for k in range(len(data)) if data[k : k + 2] == b"\n\n"]
    reader, got = read(data, [ends[1], ends[2] - 10], CODECS[0])  # chunks 0-1 | start of 2 | rest
    assert got["ticks"] == [1, 1, 2, 1]
    assert [t for t, _ in reader.clock.stamps] == [0.0, 0.0, 2.0, 2.0]  # read 1 completed no chunk


def test_nothing_after_done_is_read() -> None:
    data = sse(chunks(2, "usage")) + b"data: {not json\n\n"
    reader = ChunkReader(TokenClock(lambda: None), CODECS[0])
    assert reader.feed(data, 0.0) is True
    assert reader.output().finish_reason == "length"


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name.split()[0])
@pytest.mark.parametrize(
    ("raw", "cause"),
    [
        (b"data: {not json\n\n", "a line that is not JSON: '{not json'"),
        (b"data: [1, 2]\n\n", "not JSON object"),
        (b'data: {"id":"x","choices":[]}\n\n', "a chunk without choices"),
        (b'data: {"error":{"message":"overloaded","code":503}}\n\n', "an error in the stream: overloaded"),
    ],
)
def test_faults_on_fabricated_bytes_name_their_cause(codec, raw: bytes, cause: str) -> None:
    reader = ChunkReader(TokenClock(lambda: None), codec)
    with pytest.raises(StreamFault, match=cause.replace("[", r"\[")):
        reader.feed(b"data: " + json.dumps(chunks(2, "usage")[0]).encode() + b"\n\n" + raw, 0.0)
    assert reader.clock.stamps == [(0.0, 1)]  # the good chunk before the fault was read


def test_a_stream_without_a_finish_reason_is_a_fault() -> None:
    items = chunks(3, "usage")
    items[-2]["choices"][0]["finish_reason"] = None
    reader = ChunkReader(TokenClock(lambda: None), CODECS[0])
    reader.feed(sse(items[:-1])[: -len(b"data: [DONE]\n\n")], 0.0)
    with pytest.raises(StreamFault, match=r"ended without a finish reason after 4 token\(s\)"):
        reader.output()


def test_the_json_library_is_chosen_by_name_or_the_best_installed(monkeypatch) -> None:
    assert CODECS[-1].name == "json (stdlib)" and choose("json").name == "json (stdlib)"
    monkeypatch.delenv(ENV_VAR, raising=False)
    assert choose().name == CODECS[0].name
    monkeypatch.setenv(ENV_VAR, "json")
    assert choose().name == "json (stdlib)"
    with pytest.raises(ValueError, match="not a JSON library the load client knows"):
        choose("simdjson")
    for codec in CODECS:  # one body, the same bytes' meaning from each
        body = {"model": "m", "prompt": list(range(1, 1025)), "stream": True, "stream_options": {"a": True}}
        assert json.loads(codec.dumps(body)) == body


def test_the_client_loop_is_uvloop_where_installed_unless_asked_for_asyncio(monkeypatch) -> None:
    monkeypatch.setenv(LOOP_ENV_VAR, "asyncio")
    assert event_loop() == ("asyncio loop", None)
    monkeypatch.delenv(LOOP_ENV_VAR)
    name, factory = event_loop()
    try:
        import uvloop
    except ImportError:
        assert (name, factory) == ("asyncio loop", None)
    else:
        assert name == f"uvloop {uvloop.__version__}" and factory is uvloop.new_event_loop
