"""Command-line values of the ``KEY=VALUE[,KEY=VALUE...]`` form, and the latency targets ``--slo``.

    --slo chat:ttft_p90_ms=500,tpot_p90_ms=50 --slo batch:     (contract.slo)

Shared by the workloads (``--load``: the load kind), the harness (``--slo``), the report (``--slo``) and
the HF continuous-batching adapter (``LCA_HF_CB``), so each says the same one-line error for the
same mistake.
"""

from __future__ import annotations

from llm_call_anatomy.contract.slo import legacy_slo, parse_targets


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


def parse_slo(texts: list[str] | str | None) -> tuple[tuple, dict[str, float] | None]:
    """Every ``--slo`` given (``contract.slo``): the targets (none given: the defaults), and the per-request
    goodput pair (``ttft_ms``, ``tpot_ms``) the Load section counts, from the first target given that has a
    TTFT and a TPOT limit (none given: None, the section's default); ValueError (one line) on a mistake."""
    texts = [texts] if isinstance(texts, str) else texts
    targets = parse_targets(texts)
    pair = next((p for t in targets if (p := legacy_slo(t))), None) if texts else None
    return targets, pair


def goodput_pair(texts: list[str] | str | None) -> dict[str, float] | None:
    """The report's per-request goodput pair (``ttft_ms``, ``tpot_ms``) from ``--slo`` (``contract.slo``'s
    grammar): the first target given with a TTFT or TPOT limit, at any percentile (the one it lacks: the
    page's default); None when none is given; ValueError (one line) on a mistake or no such limit."""
    texts = [texts] if isinstance(texts, str) else texts
    if not texts:
        return None
    for target in parse_targets(texts):
        by = {f"{lim.metric}_ms": lim.ms for lim in target.limits if lim.metric in ("ttft", "tpot")}
        if by:
            return by
    raise ValueError(f"--slo {' '.join(texts)}: the goodput target needs a TTFT or a TPOT limit")
