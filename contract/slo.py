"""Latency targets (SLOs): named sets of percentile limits, what ``--slo`` gives and the capacity search
meets.

    --slo chat:ttft_p90_ms=500,tpot_p90_ms=50 --slo agent:ttft_p90_ms=2000,tpot_p90_ms=100 --slo batch:

A target is a name and limits ``METRIC_pP_ms=V``: the P-th percentile (0 < P <= 100) of METRIC over a
level's steady-state requests is at most V ms. Metrics: ``ttft`` (submit to first token, at the
caller), ``tpot`` (a request's (last - first token) / (tokens - 1)), ``itl`` (every gap between two
tokens, pooled), ``e2e`` (submit to finish). A failed request counts as a miss (an infinite latency
in every per-request metric), so a level cannot meet a target by failing its slow requests. A target
with no limits (``batch:``) is throughput only: met by every level without failures.

An unnamed target (``--slo ttft_p90_ms=1000``) is named ``custom`` (``DEFAULT_NAME``). The unnamed form
of older runs, ``ttft_ms=X,tpot_ms=Y``, still reads: as the target ``custom`` with
``ttft_p90_ms=X,tpot_p90_ms=Y`` (the old "holds" rule: 90 % of requests within both); it must give both
keys (a partial one used to pass the check and crash the report).

One grammar, printed exactly: ``parse_target(t.spec()) == t`` for every target, and ``parse_target(s).spec()
== s`` for every text ``spec`` prints (numbers as the shortest decimal, never in exponent form). A
percentile is a decimal with at most 3 decimals in (0, 100] (``p99.999``; ``p1e-05``, ``p0.00001`` and
``p99.99999``, which would print as ``p100``, are refused); a limit is 0.001 .. 1e9 ms.

The defaults and where they come from: ``docs/explanation/capacity.md`` (``SOURCES`` below says it on the
page).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from decimal import Decimal

from llm_call_anatomy.contract.docs import doc

METRICS = {"ttft": "TTFT", "tpot": "TPOT", "itl": "ITL", "e2e": "end-to-end latency"}
LIMIT_KEY = re.compile(r"^(?P<metric>[a-z0-9]+)_p(?P<p>.*)_ms$")
PERCENTILE = re.compile(r"^[0-9]+(?:\.[0-9]{1,3})?$")  # decimal, at most 3 decimals: no exponent form
NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,31}$")
DEFAULT_NAME = "custom"  # the name of an unnamed target (``--slo ttft_p90_ms=1000``)
LEGACY_KEYS = ("ttft_ms", "tpot_ms")
LEGACY_PERCENTILE = 90.0
MAX_MS = 1e9  # about 11.6 days: a limit beyond is a typo, and would print in exponent form
GRAMMAR = "NAME:METRIC_pP_ms=V[,...]"


def number_text(value: float) -> str:
    """A number as the grammar prints it: the shortest decimal that reads back as the same float, never in
    exponent form (``1e-05`` would not read back as a percentile), no trailing ``.0``."""
    text = format(Decimal(repr(float(value))), "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


@dataclass(frozen=True)
class Limit:
    metric: str  # a key of METRICS
    percentile: float  # 0 < p <= 100, at most 3 decimals
    ms: float

    @property
    def key(self) -> str:
        return f"{self.metric}_p{number_text(self.percentile)}_ms"

    def label(self) -> str:
        return f"{METRICS[self.metric]} p{number_text(self.percentile)} ≤ {number_text(self.ms)} ms"


@dataclass(frozen=True)
class Target:
    name: str
    limits: tuple[Limit, ...] = ()

    @property
    def throughput_only(self) -> bool:
        return not self.limits

    def spec(self) -> str:
        """The target in ``--slo`` syntax (what run.json keeps; ``parse_target`` reads it back: the same
        target, and for a text this printed, the same text)."""
        return f"{self.name}:" + ",".join(f"{lim.key}={number_text(lim.ms)}" for lim in self.limits)

    __str__ = spec

    def label(self) -> str:
        return f"{self.name} ({', '.join(lim.label() for lim in self.limits) or 'throughput only'})"


DEFAULT_SPECS = ("chat:ttft_p90_ms=500,tpot_p90_ms=50", "agent:ttft_p90_ms=2000,tpot_p90_ms=100", "batch:")
SOURCES = (
    "MLPerf Inference (loadgen/mlperf.conf, server scenario, p99): Llama-3.1-8B server TTFT 2 s, TPOT 100 ms "
    "(agent); Llama-3.1-8B interactive TTFT 500 ms, TPOT 30 ms (chat's TTFT; its TPOT 50 ms = 20 tokens/s a "
    "reader); offline: throughput only (batch). p90, not p99: a level has tens to hundreds of requests. "
    + doc("explanation/capacity.md")
)


def _number(text: str, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"--slo: {what}={text!r} is not a number") from None
    if not (value > 0 and math.isfinite(value)):
        raise ValueError(f"--slo: {what} must be a positive number of milliseconds (got {text})")
    if not 0.001 <= value <= MAX_MS:
        raise ValueError(f"--slo: {what}={text} is outside 0.001 .. {MAX_MS:.0f} ms")
    return value


def _pairs(body: str, text: str) -> list[tuple[str, str]]:
    out = []
    for item in filter(None, (x.strip() for x in body.split(","))):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--slo {text!r}: expected {GRAMMAR}, not {item!r}")
        out.append((key.strip(), value.strip()))
    return out


def parse_percentile(text: str, key: str) -> float:
    """P of ``METRIC_pP_ms``: a decimal with at most 3 decimals in (0, 100], so that it prints back as given
    (an exponent form, or p99.99999, which would print as p100, is refused)."""
    if not PERCENTILE.match(text):
        raise ValueError(
            f"--slo: percentile {text!r} in {key!r} is not a decimal with at most 3 decimals "
            "(e.g. p90, p99.9, p99.999)"
        )
    p = float(text)
    if not 0 < p <= 100:
        raise ValueError(f"--slo: percentile {text} in {key!r} is outside (0, 100]")
    return p


def parse_limit(key: str, value: str) -> Limit:
    m = LIMIT_KEY.match(key)
    if not m:
        raise ValueError(
            f"--slo: unknown key {key!r} (expected METRIC_pP_ms with METRIC one of: {', '.join(METRICS)}, "
            "e.g. ttft_p90_ms)"
        )
    if m["metric"] not in METRICS:
        raise ValueError(
            f"--slo: unknown metric {m['metric']!r} in {key!r} (choose from: {', '.join(METRICS)})"
        )
    return Limit(m["metric"], parse_percentile(m["p"], key), _number(value, key))


def _legacy(pairs: dict[str, str], text: str) -> Target:
    """The unnamed ``ttft_ms=X,tpot_ms=Y`` of older runs: the target ``custom`` at p90."""
    values = {k: _number(v, k) for k, v in pairs.items()}
    missing = [k for k in LEGACY_KEYS if k not in values]
    if missing:
        raise ValueError(
            f"--slo {text!r}: an unnamed target needs both {' and '.join(LEGACY_KEYS)} (missing "
            f"{missing[0]}); to limit TTFT only, name it: "
            f"{DEFAULT_NAME}:ttft_p90_ms={number_text(next(iter(values.values())))}"
        )
    return Target(
        DEFAULT_NAME,
        (
            Limit("ttft", LEGACY_PERCENTILE, values["ttft_ms"]),
            Limit("tpot", LEGACY_PERCENTILE, values["tpot_ms"]),
        ),
    )


def parse_target(text: str) -> Target:
    """One ``--slo`` value: ``NAME:LIMIT=V,...``; unnamed (``LIMIT=V,...``), the target ``custom``
    (``DEFAULT_NAME``); the older ``ttft_ms=X,tpot_ms=Y``, ``custom`` at p90. ValueError (one line)."""
    name, sep, body = text.partition(":")
    if not sep:  # unnamed: the default name
        pairs = _pairs(text, text)
        if not pairs:
            raise ValueError(f"--slo {text!r}: expected {GRAMMAR}")
        legacy = [k for k, _ in pairs if k in LEGACY_KEYS]
        if legacy and len(legacy) < len(pairs):
            raise ValueError(
                f"--slo {text!r}: the older {' / '.join(LEGACY_KEYS)} keys do not mix with METRIC_pP_ms keys"
            )
        if legacy:
            return _legacy(dict(pairs), text)
        name, body = DEFAULT_NAME, text
    name = name.strip()
    if not NAME.match(name):
        raise ValueError(
            f"--slo {text!r}: a target's name is a letter then letters, digits, '_' or '-' (got {name!r})"
        )
    limits = [parse_limit(k, v) for k, v in _pairs(body, text)]
    keys = [lim.key for lim in limits]
    if len(set(keys)) != len(keys):
        raise ValueError(f"--slo {text!r}: a limit is given twice")
    return Target(name, tuple(limits))


def parse_targets(texts: list[str] | None) -> tuple[Target, ...]:
    """Every ``--slo`` given (none: the defaults); names must differ."""
    targets = tuple(parse_target(t) for t in (texts or DEFAULT_SPECS))
    names = [t.name for t in targets]
    for n in names:
        if names.count(n) > 1:
            raise ValueError(f"--slo: the target name {n!r} is given twice")
    return targets


def legacy_slo(target: Target) -> dict[str, float] | None:
    """The ``{"ttft_ms", "tpot_ms"}`` pair of older reports, where the target has a TTFT and a TPOT limit."""
    by = {lim.metric: lim.ms for lim in target.limits}
    return {"ttft_ms": by["ttft"], "tpot_ms": by["tpot"]} if {"ttft", "tpot"} <= set(by) else None


# --- meeting a target ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Verdict:
    met: bool | None  # None: no requests to judge; False also where the level was not offered or overloaded
    values: dict[str, float | None]  # each limit's measured percentile (inf: failures alone exceed it)
    n: dict[str, int]  # samples behind each
    limiter: str | None  # the first limit missed, as text
    # with its level's intervals and flags (contract.capacity.judge): "pass", "miss", "undecided" (a limit
    # inside its deciding percentile's interval) or "not offered" (never a pass); None: not judged so
    decision: str | None = None
    intervals: dict[str, tuple[float, float] | None] = field(default_factory=dict)  # per limit key
    flags: dict = field(default_factory=dict)  # contract.level_flags.LevelFlags.to_dict()
    # the key of the limit that decided it (judge): a miss's first limit missed, an undecided level's limit
    # inside its interval, a pass's limit nearest its bound
    deciding: str | None = None

    @property
    def passed(self) -> bool:
        return self.decision == "pass" if self.decision is not None else bool(self.met)

    def to_dict(self) -> dict:
        return {
            "met": self.met,
            "values": self.values,
            "n": self.n,
            "limiter": self.limiter,
            "decision": self.decision,
            "intervals": self.intervals,
            "flags": self.flags,
        }


def percentile(values: list[float], p: float) -> float | None:
    """The p-th percentile by linear interpolation between closest ranks (numpy's default), in plain
    Python (the contract imports no third-party package); inf where the rank reaches a failure."""
    if not values:
        return None
    xs = sorted(float(v) for v in values)
    rank = (len(xs) - 1) * p / 100.0
    lo = math.floor(rank)
    hi = min(lo + 1, len(xs) - 1)
    frac = rank - lo
    if frac == 0 or xs[lo] == xs[hi]:
        return xs[lo]
    return xs[lo] + (xs[hi] - xs[lo]) * frac


def evaluate(target: Target, samples: dict[str, list[float]], failed: int) -> Verdict:
    """Does a level meet ``target``? ``samples``: per metric, the successful requests' values (``itl``: every
    gap); ``failed`` requests are misses (inf) in every per-request metric."""
    values: dict[str, float | None] = {}
    ns: dict[str, int] = {}
    limiter = None
    judged = False
    for lim in target.limits:
        xs = list(samples.get(lim.metric) or [])
        if lim.metric != "itl":
            xs += [math.inf] * failed
        v = percentile(xs, lim.percentile)
        values[lim.key], ns[lim.key] = v, len(xs)
        judged = judged or v is not None
        if v is not None and v > lim.ms and limiter is None:
            limiter = (
                f"{METRICS[lim.metric]} p{number_text(lim.percentile)} "
                + ("failures" if v == math.inf else f"{v:.0f} ms")
                + f" > {number_text(lim.ms)} ms (n={len(xs)})"
            )
    if target.throughput_only:
        has = any(samples.values()) or failed
        return Verdict(
            None if not has else failed == 0, {}, {}, f"{failed} failed requests" if failed else None
        )
    return Verdict(limiter is None if judged else None, values, ns, limiter)
