"""The load kind's file format: :class:`LoadSpec` (a ``kind: load`` entry of a workload file) with its
checks, the kind's constants, and ``--load``'s values parsed into field overrides.

What the fields mean is told in ``workloads/load/kind.py``; every check here raises a mistake
with the field it is about, so a file and ``--load`` report the same one line.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from llm_call_anatomy.contract.options import parse_pairs
from llm_call_anatomy.contract.slo import parse_targets
from llm_call_anatomy.workloads.spec import Messages, TranscriptSource, Turn, _Strict, mistake

# What a load workload runs on a CPU when --load says nothing (the built-in's levels up to 128, with
# 128 ten-turn sessions, would take hours there): levels 1 and 4, four two-turn sessions, four 192-token
# fixed-shape requests (0 or 160 shared) per level, 8 output tokens; no capacity search (four requests
# a level leave no steady state to judge).
CPU_LOAD = (
    "levels=1:4,search_levels=0,users=4,requests=4,max_turns=2,rates=,output_tokens=8,prompt_tokens=192,"
    "shared_prefix_tokens=0:160"
)
LIST_FIELDS = ("levels", "rates", "shared_prefix_tokens")
FIXED_FIELDS = ("name", "kind")  # what --load cannot set for every load workload at once
STEADY_REQUESTS = 10  # a fixed-shape level's steady window: 10 x C requests after its first wave of C
DEFAULT_USERS = 32
# A wait longer than this (a user's think time, the mean gap between Poisson arrivals) makes a level that does
# not end in any sitting: neither --request-timeout (one request) nor seconds (starting requests) bounds it.
MAX_WAIT_S = 3600.0
# The most requests in flight a level (planned, or added by the capacity search up to search_max) may ask for,
# and the most requests a level may plan: a fixed-shape level of C plans C + 10 x C requests, each a prompt,
# so search_max=1000000 took minutes and gigabytes before any check (issue 44, item 9).
MAX_CONCURRENCY = 4096
MAX_REQUESTS = 100_000
DEFAULT_DURATION_S = 60.0  # an open-loop level's timed window (MLPerf's server scenario asks 600 s)
# A rate level's requests are planned ahead (rate x duration_s of them, prompts and all): a bound on one level
MAX_LEVEL_REQUESTS = 200_000
SOURCES = ("conversation", "turns", "transcripts", "sessions")  # a sessions load replays exactly one


class LoadSpec(_Strict):
    name: str = Field(min_length=1)
    kind: Literal["load"]
    shape: Literal["sessions", "fixed"]
    levels: list[Annotated[int, Field(ge=1)]] = Field(
        [1, 8, 32, 128], description="closed-loop concurrency levels"
    )
    rates: list[Annotated[float, Field(gt=0)]] = Field(
        [], description="open-loop Poisson rates: requests/s (fixed shape), new sessions/s (sessions shape)"
    )
    requests: int | None = Field(
        None,
        ge=1,
        description=f"requests per level (fixed shape; default C + {STEADY_REQUESTS} x C: "
        "the first wave and a steady window, at least 32)",
    )
    seconds: float | None = Field(
        None, ge=1, description="instead of a request count: run each level's window this long (at least 1 s)"
    )
    warmup_requests: int | None = Field(
        None, ge=0, description="unrecorded requests before each level (default: C)"
    )
    output_tokens: int = Field(64, ge=1, description="tokens decoded per request, EOS ignored")
    # fixed shape
    prompt_tokens: int = Field(1024, ge=2)
    shared_prefix_tokens: list[Annotated[int, Field(ge=0)]] = Field([0, 960])
    # sessions shape
    users: int | None = Field(
        None, ge=1, description=f"sessions (default {DEFAULT_USERS}; with transcripts: their number, at most)"
    )
    conversation: str | None = Field(
        None, description="a built-in conversation workload whose turns every user replays"
    )
    system: str | None = None
    tools: list[dict[str, Any]] | None = None
    turns: list[Turn] | None = Field(None, min_length=1)
    transcripts: TranscriptSource | None = Field(
        None, description="recorded sessions, one a user (JSONL, as conversations)"
    )
    sessions: list[Messages] | None = Field(
        None, min_length=1, description="recorded sessions inline (what transcripts are read into)"
    )
    think_time_s: float = Field(0.0, ge=0, description="the older name of think_s (give one of them)")
    think_s: float | None = Field(
        None, ge=0, description="a user's mean think time between an answer and its next turn (default 0)"
    )
    think: Literal["fixed", "exponential"] = Field(
        "exponential",
        description="the think time's distribution, drawn per user from the seed (default exponential: "
        "independent users thinking for memoryless times arrive as a Poisson stream, and users who started "
        "together do not stay in step; fixed keeps them in waves)",
    )
    users_start: Literal["stationary", "fresh"] | None = Field(
        None,
        description="where a closed loop's users who think are in their sessions when a level starts "
        "(an open loop's arrivals are new users, at their first turn): "
        "stationary (default with a think time: each user at a turn drawn evenly over its session, as a "
        "population that has run for long is, and on to a new session after its last turn) or fresh (every "
        "user at its first turn: a level shorter than a session's turns x think measures young users only)",
    )
    # open loop: a sustained offered rate (contract.arrivals)
    duration_s: float = Field(
        DEFAULT_DURATION_S,
        ge=1,
        description="an open-loop level's timed window after its warm-up: arrivals are drawn for this long",
    )
    arrival: Literal["poisson", "constant", "gamma"] = Field(
        "poisson", description="the open loop's arrival process (contract.arrivals)"
    )
    burstiness: float = Field(
        1.0,
        gt=0,
        le=100,
        description="gamma arrivals' shape: 1 is Poisson, below 1 burstier, above more even",
    )
    max_turns: int | None = Field(None, ge=1, description="replay only each session's first K turns")
    # the capacity search (contract.capacity): levels it may add between (and above) the measured ones
    search_levels: int = Field(
        0,
        ge=0,
        description="levels the capacity search may add per variant and loop (0: off; the built-in loads: 4)",
    )
    search_max: int | None = Field(
        None,
        ge=1,
        description="the highest concurrency the search may try (default: the "
        "highest level; sessions: at most users)",
    )
    search_max_rate: float | None = Field(
        None, gt=0, description="the highest rate the open loop's search may try (default: the highest rate)"
    )
    search_ratio: float = Field(
        1.25,
        gt=1,
        le=16,
        description="the search bisects until the bracket [last pass, first miss] is no wider than this",
    )
    search_targets: list[str] | None = Field(
        None,
        description="the targets searched for, in --slo syntax (default: "
        "--slo's, else contract.slo.DEFAULT_SPECS)",
    )

    @model_validator(mode="after")
    def _consistent(self) -> LoadSpec:
        """Every check of the whole entry, in the order a file's first mistake is reported."""
        self._check_bounds()
        self._check_levels_apart()
        self._check_waits()
        self._check_rates()
        self._check_search()
        if self.shape == "fixed":
            self._check_fixed()
        else:
            self._check_sessions()
        return self

    def _check_bounds(self) -> None:
        """Requests or seconds, some load, and every count within its bound."""
        if self.requests is not None and self.seconds is not None:
            raise mistake("give requests or seconds, not both")
        if not self.levels and not self.rates:
            raise mistake("no load to run: levels and rates are both empty", ["levels"])
        for name, value, most, what in (
            *(("levels", c, MAX_CONCURRENCY, "requests in flight") for c in self.levels),
            ("search_max", self.search_max, MAX_CONCURRENCY, "requests in flight"),
            ("requests", self.requests, MAX_REQUESTS, "requests a level"),
            ("users", self.users, MAX_REQUESTS, "sessions"),
        ):
            if value is not None and value > most:
                raise mistake(f"{name} {value}: at most {most} {what}", [name])

    def _check_levels_apart(self) -> None:
        """Each level once, and no two levels that print alike."""
        for name in ("levels", "rates", *(["shared_prefix_tokens"] if self.shape == "fixed" else [])):
            values = getattr(self, name)
            twice = next((v for i, v in enumerate(values) if v in values[:i]), None)
            if twice is not None:
                raise mistake(
                    f"{name}: {twice:g} is given twice: each value is one level, measured once", [name]
                )
        labels = [label for label, _ in self.loads()]  # the case keys, as printed: unique by construction
        twice = next((x for i, x in enumerate(labels) if x in labels[:i]), None)
        if twice is not None:
            raise mistake(
                f"two levels print alike as {twice} (each level is one case, keyed by its printed value): "
                "give values that differ in their first 6 significant digits",
                ["rates" if twice.startswith("rate=") else "levels"],
            )

    def _check_waits(self) -> None:
        """Think times and durations a level can end within."""
        if self.think_s is not None and self.think_time_s:
            raise mistake("give think_s or its older name think_time_s, not both", ["think_s"])
        if self.users_start is not None and (self.shape != "sessions" or not self.mean_think_s):
            raise mistake(
                "users_start: where users who think are in their sessions; give it to a sessions load "
                "with a think time (think_s)",
                ["users_start"],
            )
        for name in ("think_time_s", "think_s", "duration_s"):
            value = getattr(self, name)
            if value is not None and not 0 <= value <= MAX_WAIT_S:
                raise mistake(
                    f"{name} {value:g}: at most {MAX_WAIT_S:g} s, or a level would never end "
                    "(neither --request-timeout nor seconds bounds it)",
                    [name],
                )

    def _check_rates(self) -> None:
        """Rates whose levels plan a bounded number of requests and end."""
        for i, r in enumerate([*self.rates, *([self.search_max_rate] if self.search_max_rate else [])]):
            if r * self.duration_s > MAX_LEVEL_REQUESTS:
                raise mistake(
                    f"rate {r:g}/s for duration_s {self.duration_s:g} plans {r * self.duration_s:,.0f} "
                    f"requests in one level (at most {MAX_LEVEL_REQUESTS:,}): "
                    "a shorter duration_s or a lower rate",
                    ["rates", i] if i < len(self.rates) else ["search_max_rate"],
                )
        for i, r in enumerate(self.rates):
            if not 1 / MAX_WAIT_S <= r < float("inf"):
                raise mistake(
                    f"rate {r:g}/s: a mean gap between arrivals above {MAX_WAIT_S:g} s makes a level that "
                    f"never ends (at least {1 / MAX_WAIT_S:.2g} requests/s, finite)",
                    ["rates", i],
                )
        if self.seconds is not None and self.seconds == float("inf"):
            raise mistake("seconds must be finite", ["seconds"])

    def _check_search(self) -> None:
        """The search's bounds and targets."""
        if self.search_max is not None and self.search_max < min(self.levels, default=1):
            raise mistake(
                f"search_max {self.search_max} is below the first level ({min(self.levels)}): "
                "the search refines between and above the measured levels",
                ["search_max"],
            )
        if self.search_targets is not None:
            try:
                parse_targets(self.search_targets)
            except ValueError as exc:
                raise mistake(str(exc), ["search_targets"]) from None

    def _check_fixed(self) -> None:
        """The fixed shape: some shared-prefix variant, each shorter than the prompt."""
        if not self.shared_prefix_tokens:
            raise mistake(
                "shared_prefix_tokens is empty: give at least one (0: nothing shared)",
                ["shared_prefix_tokens"],
            )
        for i, s in enumerate(self.shared_prefix_tokens):
            if s >= self.prompt_tokens:
                raise mistake(
                    f"a shared prefix of {s} tokens leaves nothing of a {self.prompt_tokens}-token "
                    "prompt to tell requests apart",
                    ["shared_prefix_tokens", i],
                )

    def _check_sessions(self) -> None:
        """The sessions shape: one source, and levels and search_max within its users."""
        given = [k for k in SOURCES if getattr(self, k) is not None]
        if len(given) != 1:
            what = "none given" if not given else f"{' and '.join(given)} given"
            raise mistake(
                "a sessions load needs exactly one of conversation (a built-in's name), turns, "
                f"transcripts ({what})"
            )
        users = self.user_count()
        recorded = self.sessions is not None and users == len(self.sessions)
        who = f"{users} transcript{'s' * (users != 1)}" if recorded else f"{users} users"
        for i, c in enumerate(self.levels):
            if users is not None and c > users:
                raise mistake(
                    f"concurrency {c} is above the number of sessions ({who}): "
                    "a closed loop cannot keep more users busy than it has",
                    ["levels", i],
                )
        if users is not None and self.search_max is not None and self.search_max > users:
            raise mistake(
                f"search_max {self.search_max} is above the number of sessions ({who})", ["search_max"]
            )

    def user_count(self) -> int | None:
        """Users a sessions load has: ``users`` (default 32); with recorded sessions one per session, at
        most ``users``; None while the transcripts are not read (``users``, if given, bounds it)."""
        if self.sessions is not None:
            return min(self.users or len(self.sessions), len(self.sessions))
        return self.users if self.transcripts is not None else (self.users or DEFAULT_USERS)

    @property
    def mean_think_s(self) -> float:
        """The mean think time: ``think_s``, else the older ``think_time_s``."""
        return self.think_s if self.think_s is not None else self.think_time_s

    @property
    def stationary_users(self) -> bool:
        """Users who think start a level where a long-running population is in its sessions
        (``users_start``: stationary by default for sessions with a think time; a closed loop's)."""
        if self.shape != "sessions" or not self.mean_think_s:
            return False
        return self.users_start != "fresh"

    def loads(self) -> list[tuple[str, dict[str, Any]]]:
        """Each level as (case label, the group's load settings)."""
        out = [(f"C={c}", {"concurrency": c}) for c in self.levels]
        return out + [(f"rate={r:g}", {"rate_rps": r, "concurrency": None}) for r in self.rates]


def parse_load(text: str) -> dict[str, Any]:
    """``--load`` as field overrides (lists split at ``:``)."""
    out: dict[str, Any] = {}
    for key, value in parse_pairs(text, "--load").items():
        if key in FIXED_FIELDS:
            raise ValueError(
                f"--load {key}=...: sets every load workload's {key} at once (two loads would share one "
                f"{key}); set it in a workload file"
            )
        out[key] = [v for v in value.split(":") if v] if key in LIST_FIELDS else value
    return out
