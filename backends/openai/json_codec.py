"""The load client's JSON library: the fastest this interpreter has (orjson, then msgspec, then the stdlib).

The lean client (``lean_stream.py``) decodes one JSON object per streamed chunk and encodes one request
body (a 1,024-id prompt) per request, so the library is a per-chunk cost of every client process. On a
2-core VM, per 260-byte vLLM chunk (decode, split, tick): orjson and msgspec ~2.6 µs, ``json`` ~6.5 µs;
per 1,024-id body: ~5 µs against ~63 µs (``python -m benchmarks.lean_parse``).
The engine bundles differ: vLLM's carries msgspec (a vLLM dependency) but not orjson, SGLang's carries
orjson, so either way a fast one is there; the stdlib stays the fallback and gives identical values.

``LCA_LOAD_JSON`` (``orjson`` / ``msgspec`` / ``json``) picks one by name, for benchmarks that compare
them; unset: the first available of :data:`PREFERENCE`. Each decodes to plain dicts and lists, and raises a
``ValueError`` (their error classes all derive from it) on a line that is not JSON.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

PREFERENCE = ("orjson", "msgspec", "json")
ENV_VAR = "LCA_LOAD_JSON"


@dataclass(frozen=True)
class Codec:
    """One JSON library as the client uses it: bytes in, plain objects out; objects in, compact bytes out."""

    name: str  # "orjson 3.11.4": library and version, as env.json / the level's ``client`` says
    loads: Callable[[bytes], Any]
    dumps: Callable[[Any], bytes]


def _stdlib() -> Codec:
    def dumps(obj: Any) -> bytes:
        return json.dumps(obj, separators=(",", ":")).encode()

    return Codec("json (stdlib)", json.loads, dumps)


def _make(name: str) -> Codec | None:
    """The codec of library ``name``, or None where it is not installed."""
    if name == "json":
        return _stdlib()
    try:
        if name == "orjson":
            import orjson

            return Codec(f"orjson {orjson.__version__}", orjson.loads, orjson.dumps)
        if name == "msgspec":
            import msgspec

            decoder, encoder = msgspec.json.Decoder(), msgspec.json.Encoder()
            return Codec(f"msgspec {msgspec.__version__}", decoder.decode, encoder.encode)
    except ImportError:
        return None
    raise ValueError(f"{ENV_VAR}={name}: not a JSON library the load client knows ({', '.join(PREFERENCE)})")


def available() -> list[Codec]:
    """Every library of :data:`PREFERENCE` installed here, best first (the stdlib always)."""
    return [c for c in (_make(n) for n in PREFERENCE) if c is not None]


def choose(name: str | None = None) -> Codec:
    """The codec named (``LCA_LOAD_JSON`` when ``name`` is None), or the best installed; a named library
    that is unknown or not installed raises ``ValueError`` saying so."""
    name = name if name is not None else os.environ.get(ENV_VAR) or None
    if name is None:
        return available()[0]
    codec = _make(name)
    if codec is None:
        raise ValueError(f"{ENV_VAR}={name}: {name} is not installed in this interpreter")
    return codec
