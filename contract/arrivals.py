"""Open-loop arrivals: a named arrival process at an offered rate, drawn ahead from a seed, and the tests
that say whether a level offered it.

    times = arrival_times(32.0, until_s=60.0, process="poisson", seed=13)

One generator for every path: the in-process load loop, the client processes of a server's load
(``backends.load_shards``), the planner (which sizes a rate level's requests from the same draw) and
the benchmark that checks the generator against its plan (``benchmarks/arrivals.py``).

Processes (``PROCESSES``), each a renewal process whose gaps have mean ``1 / rate``:

- ``poisson`` (the default): exponential gaps, what MLPerf's server scenario and ``vllm bench serve``
  offer; independent users arriving at random;
- ``constant``: every gap ``1 / rate`` (a metronome: no arrival noise at all);
- ``gamma``: gamma gaps of shape ``burstiness`` and scale ``1 / (rate x burstiness)`` (``vllm bench
  serve --burstiness``'s convention): 1 is Poisson, below 1 burstier (clumps and lulls), above 1
  more even. The squared coefficient of variation of a gap is ``1 / burstiness``.

The first arrival is at 0 (the level starts with a request); arrival k is the sum of the first k gaps.
Only the standard library (``random.Random`` seeded once per level): the same seed gives the same
schedule on every machine and Python 3.11+.
"""

from __future__ import annotations

import math
import random

PROCESSES = ("poisson", "constant", "gamma")
DEFAULT_PROCESS = "poisson"
MAX_ARRIVALS = 1_000_000  # a level's schedule is drawn ahead: a bound on what one level may plan
# The rate test's two-sided threshold: |z| above it happens by chance once in 1,000 levels (p = 0.001)
RATE_Z = 3.29


def gap_cv2(process: str, burstiness: float = 1.0) -> float:
    """The squared coefficient of variation of a gap: 1 (Poisson), 0 (constant), 1 / burstiness (gamma)."""
    return {"poisson": 1.0, "constant": 0.0}.get(process, 1.0 / burstiness)


def _check(rate_rps: float, process: str, burstiness: float) -> None:
    if process not in PROCESSES:
        raise ValueError(f"arrival process {process!r}: choose one of {', '.join(PROCESSES)}")
    if not (rate_rps > 0 and math.isfinite(rate_rps)):
        raise ValueError(f"arrival rate {rate_rps!r}: a positive, finite number of arrivals per second")
    if not (burstiness > 0 and math.isfinite(burstiness)):
        raise ValueError(f"burstiness {burstiness!r}: a positive, finite number (1 is Poisson)")


def arrival_times(
    rate_rps: float,
    n: int | None = None,
    *,
    until_s: float | None = None,
    process: str = DEFAULT_PROCESS,
    burstiness: float = 1.0,
    seed: int = 13,
) -> list[float]:
    """The schedule (s from the level's start): ``n`` arrivals, or every arrival before ``until_s`` (both
    given: whichever ends first)."""
    _check(rate_rps, process, burstiness)
    if n is None and until_s is None:
        raise ValueError("arrival_times: give n, until_s or both")
    rng, at, out = random.Random(seed), 0.0, []
    cap = MAX_ARRIVALS if n is None else min(n, MAX_ARRIVALS)
    while len(out) < cap and (until_s is None or at < until_s):
        out.append(at)
        if process == "poisson":
            at += rng.expovariate(rate_rps)
        elif process == "constant":
            at = len(out) / rate_rps  # no drift from summing a rounded gap
        else:
            at += rng.gammavariate(burstiness, 1.0 / (rate_rps * burstiness))
    return out


# --- did a level offer what it planned? ------------------------------------------------------------
def rate_z(
    count: int, rate_rps: float, span_s: float, process: str = DEFAULT_PROCESS, b: float = 1.0
) -> float:
    """How far ``count`` arrivals in ``span_s`` seconds lie from ``rate_rps x span_s``, in standard deviations
    of the process's count: a renewal process's count over a long span has variance ``rate x span x
    CV²`` (Poisson: the mean itself); a constant process has none, so one arrival either way is its
    noise (the variance is floored at 1)."""
    expected = rate_rps * span_s
    return (count - expected) / math.sqrt(max(expected * gap_cv2(process, b), 1.0))


def ks_exponential(gaps: list[float], rate_rps: float) -> float | None:
    """The Kolmogorov-Smirnov statistic of ``gaps`` against the exponential of mean ``1 / rate``: the largest
    distance between their empirical distribution and ``1 - exp(-rate x t)`` (None: no gap). Its 5 %
    critical value is about ``1.36 / sqrt(len(gaps))``."""
    xs = sorted(g for g in gaps if g is not None and math.isfinite(g))
    if not xs:
        return None
    n, d = len(xs), 0.0
    for i, x in enumerate(xs):
        f = 1.0 - math.exp(-rate_rps * max(x, 0.0))
        d = max(d, (i + 1) / n - f, f - i / n)
    return d


def ks_critical(n: int, alpha: float = 0.05) -> float:
    """The KS statistic's critical value for ``n`` samples (the asymptotic ``sqrt(-ln(alpha / 2) / 2) /
    sqrt(n)``: 1.36 / sqrt(n) at 5 %)."""
    return math.sqrt(-math.log(alpha / 2) / 2) / math.sqrt(max(n, 1))
