"""Command-line values of the ``KEY=VALUE[,KEY=VALUE...]`` form, and the goodput target ``--slo``.

    --slo ttft_ms=2000,tpot_ms=100

Shared by the harness (``--load``, ``--slo``: ``harness.load_args``), the report (``--slo``) and
the HF continuous-batching adapter (``LCA_HF_CB``), so each says the same one-line error for the
same mistake.
"""

from __future__ import annotations

SLO_KEYS = ("ttft_ms", "tpot_ms")


def parse_pairs(text: str, option: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in filter(None, (x.strip() for x in text.split(","))):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"{option} {text!r}: expected KEY=VALUE[,KEY=VALUE...], not {item!r}")
        out[key.strip()] = value.strip()
    if not out:
        raise ValueError(f"{option} {text!r}: expected KEY=VALUE[,KEY=VALUE...]")
    return out


def parse_slo(text: str) -> dict[str, float]:
    """``ttft_ms=...,tpot_ms=...`` as positive numbers; ValueError (one line) otherwise."""
    out: dict[str, float] = {}
    for key, value in parse_pairs(text, "--slo").items():
        if key not in SLO_KEYS:
            raise ValueError(f"--slo: unknown key {key!r} (choose from: {', '.join(SLO_KEYS)})")
        try:
            number = float(value)
        except ValueError:
            raise ValueError(f"--slo: {key}={value!r} is not a number") from None
        if not number > 0 or number != number or number == float("inf"):
            raise ValueError(f"--slo: {key} must be a positive number of milliseconds (got {value})")
        out[key] = number
    return out
