"""``python compare.py report RUNS --size users=N,think_s=Z[,slo=NAME]``: the fleet a report is asked to size,
read and checked in one place (the answer is each workload kind's: the load kind's ``sizing``).

- ``users``: how many users the fleet serves, an integer 1 .. 10^9;
- ``think_s``: a user's mean think time between an answer and the next turn, seconds, 0 .. 86,400;
- ``slo``: the target to size at, by name (one of ``--slo``'s, else one of the runs' own); left out, the
  first target with latency limits.

A mistake is a ValueError of one line (the command line makes it exit 2).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from llm_call_anatomy.contract.options import parse_pairs
from llm_call_anatomy.contract.slo import NAME

KEYS = ("users", "think_s", "slo")
MAX_USERS = 10**9
MAX_THINK_S = 86_400.0


@dataclass(frozen=True)
class SizeAsk:
    users: int
    think_s: float
    slo: str | None = None  # a target's name; None: the first target with latency limits

    def spec(self) -> str:
        """The ask as ``--size`` takes it."""
        text = f"users={self.users},think_s={self.think_s:g}"
        return text + (f",slo={self.slo}" if self.slo else "")


def parse_size(text: str) -> SizeAsk:
    """``users=N,think_s=Z[,slo=NAME]`` -> :class:`SizeAsk`; ValueError (one line) on a mistake."""
    pairs = parse_pairs(text, "--size")
    unknown = [k for k in pairs if k not in KEYS]
    if unknown:
        raise ValueError(f"--size {text!r}: unknown key {unknown[0]!r} (known: {', '.join(KEYS)})")
    missing = [k for k in KEYS[:2] if k not in pairs]
    if missing:
        raise ValueError(f"--size {text!r}: {missing[0]} is missing (users=N,think_s=Z[,slo=NAME])")
    try:
        users = int(pairs["users"])
    except ValueError:
        raise ValueError(f"--size: users={pairs['users']!r} is not a whole number") from None
    if not 1 <= users <= MAX_USERS:
        raise ValueError(f"--size: users={users} is outside 1 .. {MAX_USERS:,}")
    try:
        think = float(pairs["think_s"])
    except ValueError:
        raise ValueError(f"--size: think_s={pairs['think_s']!r} is not a number of seconds") from None
    if not (math.isfinite(think) and 0 <= think <= MAX_THINK_S):
        raise ValueError(f"--size: think_s={pairs['think_s']} is outside 0 .. {MAX_THINK_S:g} s")
    slo = pairs.get("slo") or None
    if slo is not None and not NAME.match(slo):
        raise ValueError(f"--size: slo={slo!r} is not a target's name")
    return SizeAsk(users, think, slo)
