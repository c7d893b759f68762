"""One load level's steady state, from its request records: the cold first wave apart, the timed window,
the share of it with C in flight, per-metric samples, throughput, and bootstrap intervals.

Used by the capacity search (``contract.capacity``, while the run goes on) and by the report (from the
records afterwards): one definition of every figure.

- **First wave** (closed loop at C): the level's first C requests by submit time. All C start together
  on a cache that holds only the warm-up's prefixes, so their TTFT is a burst's, not a steady state's;
  they are kept and reported apart. An open loop has no first wave.
- **Steady window**: from the first submit after the first wave to the level's last submit (after
  it the level drains: fewer than C remain). Open loop: first to last submit.
- **Steady requests**: those submitted in the window (the first wave excluded); their TTFT, TPOT,
  end-to-end latency and every inter-token gap (ITL) are the samples a target is judged on.
- **Throughput**: output tokens that arrived in the window ÷ its length (tokens of any request,
  the first wave's too, as they arrive then); input tokens = prompts submitted in it ÷ its length.
  Only where the window is a steady state at all: it must last at least ``MIN_TURNOVERS`` times the
  level's median request (submit to finish), or its few arrivals measure a burst (seen on the CPU
  demo: a 4-user level whose window was a few milliseconds read 15,001 tok/s). Shorter: no
  throughput (``no_steady`` says why); the latency samples stay.
- **In flight**: the share of the window with at least C requests between submit and finish.
- **Intervals**: the window cut into ``BLOCKS`` equal time blocks, resampled with replacement
  (``RESAMPLES``, seeded): the 5th and 95th percentile of a figure over the resamples. One long run,
  bootstrapped over time, not repeats. Throughput's interval resamples the blocks' token arrivals
  (:meth:`LevelStats.tps_interval`), the same count its figure is, so the figure lies inside it.
- **Several engine starts** (``--starts K``): each start ran the level on its own clock (a level's
  ``submit_s`` counts from its own beginning), so its first wave, window and throughput are its own
  (:func:`over_starts`): the level's throughput and in-flight share are the median over the starts,
  their intervals the envelope of the starts' (every start's inside it), and the latency samples pool
  the starts' steady requests. Pooling the starts' rows into one window would count two starts' tokens
  over one start's seconds.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from llm_call_anatomy.contract.records import num
from llm_call_anatomy.contract.slo import percentile

BLOCKS = 5
RESAMPLES = 400
SEED = 13
MIN_TURNOVERS = 1.0  # a steady window lasts at least this many median requests


def _failed(row: dict) -> bool:
    e = row.get("error")
    return e is not None and not (isinstance(e, float) and math.isnan(e))


@dataclass
class LevelStats:
    concurrency: int | None
    requests: int  # every request of the level that started
    failed: int  # of the steady requests
    first_wave: list[dict] = field(default_factory=list)
    steady: list[dict] = field(default_factory=list)  # requests submitted in the window
    window: tuple[float, float] | None = None  # (t0, t1) on the level's clock
    output_tps: float | None = None
    input_tps: float | None = None
    in_flight_share: float | None = None  # closed loop: share of the window with >= C in flight
    no_steady: str | None = None  # why the level has no steady throughput (None: it has one)
    arrivals: list[float] = field(
        default_factory=list, repr=False
    )  # output tokens' arrival times in the window
    parts: list[LevelStats] = field(default_factory=list, repr=False)  # per engine start (over_starts)

    @property
    def window_s(self) -> float | None:
        return None if self.window is None else self.window[1] - self.window[0]

    @property
    def requests_per_s(self) -> float | None:
        """Steady requests (submitted in the window) a second; several engine starts: the median over the
        starts that have a window (a merged level has no window of its own), as ``output_tps``."""
        if self.parts:
            return _median([p.requests_per_s for p in self.parts])
        return len(self.steady) / self.window_s if self.window_s else None

    @property
    def total_tps(self) -> float | None:
        return None if self.output_tps is None or self.input_tps is None else self.output_tps + self.input_tps

    def samples(self, rows: list[dict] | None = None) -> dict[str, list[float]]:
        """Per metric, the successful requests' values (``itl``: every gap, pooled)."""
        rows = self.steady if rows is None else rows
        ok = [r for r in rows if not _failed(r)]
        out: dict[str, list[float]] = {"ttft": [], "tpot": [], "e2e": [], "itl": []}
        for r in ok:
            for metric, key in (("ttft", "ttft_ms"), ("tpot", "decode_ms_per_token"), ("e2e", "e2e_ms")):
                v = num(r.get(key))
                if v is not None:
                    out[metric].append(v)
            t = r.get("token_times_s")
            if isinstance(t, list | tuple):
                out["itl"] += [(b - a) * 1e3 for a, b in zip(t, t[1:], strict=False)]
        return out

    def tps_interval(self, low: float = 5, high: float = 95) -> tuple[float, float] | None:
        """Bootstrap interval of ``output_tps``: the window's token arrivals counted per time block, the
        blocks resampled with replacement (seeded), each resample's count ÷ the window. Several engine
        starts: the envelope of the starts' intervals."""
        if self.parts:
            return _envelope([p.tps_interval(low, high) for p in self.parts])
        if self.output_tps is None or not self.window_s:
            return None
        t0, span = self.window[0], self.window_s
        counts = [0] * BLOCKS
        for t in self.arrivals:
            counts[min(BLOCKS - 1, int((t - t0) / span * BLOCKS))] += 1
        rng = random.Random(SEED)
        values = sorted(
            sum(counts[rng.randrange(BLOCKS)] for _ in range(BLOCKS)) / span for _ in range(RESAMPLES)
        )

        def at(p: float) -> float:
            return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]

        return at(low), at(high)

    def failed_in(self, rows: list[dict]) -> int:
        return sum(_failed(r) for r in rows)

    def interval(
        self, figure: Callable[[list[dict], float], float | None], low: float = 5, high: float = 95
    ) -> tuple[float, float] | None:
        """Bootstrap interval of ``figure(rows, window_s)`` over BLOCKS time blocks of the window (several
        engine starts: the envelope of the starts')."""
        if self.parts:
            return _envelope([p.interval(figure, low, high) for p in self.parts])
        if self.window is None or not self.steady or not self.window_s:
            return None
        t0, span = self.window[0], self.window_s
        blocks: list[list[dict]] = [[] for _ in range(BLOCKS)]
        for r in self.steady:
            k = min(BLOCKS - 1, int((num(r.get("submit_s")) - t0) / span * BLOCKS))
            blocks[k].append(r)
        rng = random.Random(SEED)
        values = []
        for _ in range(RESAMPLES):
            rows = [r for _ in range(BLOCKS) for r in blocks[rng.randrange(BLOCKS)]]
            v = figure(rows, span)
            if v is not None and math.isfinite(v):
                values.append(v)
        if not values:
            return None
        values.sort()

        def at(p: float) -> float:
            return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]

        return at(low), at(high)


def _envelope(intervals: list[tuple[float, float] | None]) -> tuple[float, float] | None:
    found = [i for i in intervals if i is not None]
    return (min(lo for lo, _ in found), max(hi for _, hi in found)) if found else None


def _median(values: list[float | None]) -> float | None:
    return percentile([x for x in values if x is not None], 50)


def over_starts(parts: list[LevelStats]) -> LevelStats:
    """One level's steady state over the engine starts that ran it (each start's ``level_stats``): counts
    and the first-wave and steady requests pooled; throughput, input tok/s and the in-flight share the
    median over the starts that have one; intervals the envelope of theirs. One start: itself."""
    if len(parts) == 1:
        return parts[0]
    out = LevelStats(
        concurrency=parts[0].concurrency,
        requests=sum(p.requests for p in parts),
        failed=sum(p.failed for p in parts),
        first_wave=[r for p in parts for r in p.first_wave],
        steady=[r for p in parts for r in p.steady],
        parts=list(parts),
    )
    out.output_tps = _median([p.output_tps for p in parts])
    out.input_tps = _median([p.input_tps for p in parts]) if out.output_tps is not None else None
    out.in_flight_share = _median([p.in_flight_share for p in parts])
    if out.output_tps is None:
        out.no_steady = next((p.no_steady for p in parts if p.no_steady), None)
    return out


def _in_flight_share(rows: list[dict], c: int, t0: float, t1: float) -> float | None:
    if t1 <= t0:
        return None
    events = []
    for r in rows:
        s, f = num(r.get("submit_s")), num(r.get("finish_s"))
        if s is None or f is None or f <= t0 or s >= t1:
            continue
        events += [(max(s, t0), 1), (min(f, t1), -1)]
    events.sort()
    full, level, last = 0.0, 0, t0
    for t, d in events:
        if level >= c:
            full += t - last
        level, last = level + d, t
    if level >= c:
        full += t1 - last
    return full / (t1 - t0)


def level_stats(rows: list[dict], concurrency: int | None) -> LevelStats:
    """The steady state of one level from its request rows (records with a ``submit_s``)."""
    rows = sorted((r for r in rows if num(r.get("submit_s")) is not None), key=lambda r: num(r["submit_s"]))
    c = int(concurrency) if concurrency else None
    first = rows[:c] if c else []
    rest = rows[c:] if c else rows
    stats = LevelStats(concurrency=c, requests=len(rows), failed=0, first_wave=first)
    if not rest:  # every request was in the first wave: no steady state to speak of
        return stats
    t0, t1 = num(rest[0]["submit_s"]), num(rows[-1]["submit_s"])
    if t1 <= t0:  # one request after the wave: its own submit to its finish
        t1 = max(num(r.get("finish_s")) or t0 for r in rest)
    stats.steady, stats.window = rest, (t0, t1)
    stats.failed = stats.failed_in(rest)
    span = t1 - t0
    if c and span > 0:
        stats.in_flight_share = _in_flight_share(rows, c, t0, t1)
    durations = sorted(
        f - s
        for r in rows
        if not _failed(r)
        for s, f in [(num(r.get("submit_s")), num(r.get("finish_s")))]
        if s is not None and f is not None
    )
    turnover = durations[len(durations) // 2] if durations else None
    if span <= 0 or turnover is None or span < MIN_TURNOVERS * turnover:
        stats.no_steady = (
            f"the window ({span * 1e3:.0f} ms) is shorter than {MIN_TURNOVERS:g} median request"
            + (f" ({turnover * 1e3:.0f} ms)" if turnover is not None else "")
            + ": too few arrivals for a steady throughput (a longer level has one)"
        )
        return stats
    stats.arrivals = [
        t for r in rows if not _failed(r) for t in (r.get("token_times_s") or []) if t0 <= t <= t1
    ]
    stats.output_tps = len(stats.arrivals) / span
    stats.input_tps = sum(num(r.get("prompt_tokens")) or 0 for r in rest) / span
    return stats
