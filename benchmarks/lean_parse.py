"""Micro-benchmark of the lean client's own per-chunk and per-request work, without a server or a socket.

The parse path of ``backends/openai/lean_stream.py`` (``ChunkReader.feed``: lines split, JSON decoded,
the clock ticked) on a fabricated vLLM stream of ``--tokens`` chunks with continuous usage (what every
request but a process's first one receives), fed one read per chunk as the socket delivers it, for every
JSON library installed (``backends/openai/json_codec.py``); and the request body (a ``--prompt-tokens``-id
prompt) encoded by each. What it leaves out, the HTTP and event-loop work per read, is what benchmark 4
(``benchmarks/load_client.py``) measures with the rest.

    python -m benchmarks.lean_parse [--tokens 64] [--prompt-tokens 1024] [--repeats 5]

Prints µs per chunk and per body, median of ``--repeats`` (min-max). Not a timed test: it measures this
machine.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from llm_call_anatomy.backends.base import TokenClock
from llm_call_anatomy.backends.openai.json_codec import available
from llm_call_anatomy.backends.openai.lean_stream import ChunkReader, LeanClient, LeanClientSpec
from llm_call_anatomy.contract.adapter import Request


def stream_reads(tokens: int) -> list[bytes]:
    """One read per chunk (vLLM's compact chunks with ``continuous_usage_stats``), then usage, [DONE]."""
    reads = []
    for i in range(tokens):
        chunk = {
            "id": "cmpl-0123456789abcdef",
            "object": "text_completion",
            "created": 1764600000,
            "model": "Qwen/Qwen3-8B",
            "choices": [
                {
                    "index": 0,
                    "text": " word",
                    "logprobs": None,
                    "finish_reason": "length" if i == tokens - 1 else None,
                    "stop_reason": None,
                }
            ],
            "usage": {"prompt_tokens": 1024, "total_tokens": 1025 + i, "completion_tokens": i + 1},
        }
        reads.append(b"data: " + json.dumps(chunk, separators=(",", ":")).encode() + b"\n\n")
    usage = {
        "prompt_tokens": 1024,
        "completion_tokens": tokens,
        "prompt_tokens_details": {"cached_tokens": 0},
    }
    reads.append(b"data: " + json.dumps({"id": "x", "choices": [], "usage": usage}).encode() + b"\n\n")
    reads.append(b"data: [DONE]\n\n")
    return reads


def per_chunk_us(reads: list[bytes], codec, loops: int) -> float:
    t0 = time.perf_counter()
    for _ in range(loops):
        reader = ChunkReader(TokenClock(lambda: None), codec)
        for data in reads:
            if reader.feed(data, 0.0):
                break
        reader.output()
    return (time.perf_counter() - t0) / loops / (len(reads) - 2) * 1e6


def per_body_us(codec, request: Request, loops: int) -> float:
    import llm_call_anatomy.backends.openai.lean_stream as lean

    client, saved = LeanClient(LeanClientSpec(base_url="http://x/v1", model="m", flavor="vllm")), lean.CODEC
    lean.CODEC = codec
    try:
        t0 = time.perf_counter()
        for _ in range(loops):
            client.body(request, want_ids=False)
        return (time.perf_counter() - t0) / loops * 1e6
    finally:
        lean.CODEC = saved


def main(argv: list[str] | None = None) -> int:
    """The command line: one row per installed JSON library (its per-chunk and per-body cost); a count below
    1 is one line and exit 2."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tokens", type=int, default=64)
    p.add_argument("--prompt-tokens", type=int, default=1024)
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args(argv)
    if min(args.tokens, args.prompt_tokens, args.repeats) < 1:
        p.error("--tokens, --prompt-tokens and --repeats must be at least 1")
    reads = stream_reads(args.tokens)
    request = Request(
        prompt_ids=[(i * 7919) % 30000 + 1 for i in range(args.prompt_tokens)], max_new_tokens=64
    )
    print("| JSON library | µs per chunk (parse, tick) | µs per request body |\n|---|---|---|")
    for codec in available():
        chunk = [per_chunk_us(reads, codec, 200) for _ in range(args.repeats)]
        body = [per_body_us(codec, request, 200) for _ in range(args.repeats)]
        cells = [f"{statistics.median(x):.2f} ({min(x):.2f}-{max(x):.2f})" for x in (chunk, body)]
        print(f"| {codec.name} | {cells[0]} | {cells[1]} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
