"""Many users at once: the ``load`` kind — agent sessions or fixed-shape requests at several loads.

Two shapes (``shape``):

- ``sessions``: U users, each replaying a multi-turn conversation (by default the built-in
  10-turn DevOps chat: ``conversation: conversation``; or inline ``system``/``tools``/``turns``).
  Every user gets their own logs and questions (a first line naming the user's incident is put
  before every user message, so two users' prompts part right after the shared system prompt and
  tool definitions) and each turn's prompt extends that user's previous one (fixed assistant
  replies as history), so an engine can reuse the system prompt across users and each user's
  history across turns. ``think_time_s`` waits between a user's turns.
  Or recorded sessions, ``transcripts: {path: sessions.jsonl, first: N}`` (the conversation
  kind's JSONL format; the loader reads them into ``sessions``, one messages list per user):
  user k replays transcript k, already a distinct user, so no incident line is added. Its
  requests are the conversation kind's for a transcript (``conversation.recorded_requests``):
  one before every recorded assistant message (after a user message, and after tool results:
  an agent calls the model there too) with the record before it as history, tool calls and
  results included, plus one at the end if the record ends with a user or tool message;
  rendered with the workload's ``tools`` (and its ``system`` where the record has none).
  ``users`` defaults to the number of transcripts and is capped by it: a level above it is a
  mistake, as a level above ``users`` is. Warm-up requests replay transcripts' first requests.
- ``fixed``: prompts of exactly ``prompt_tokens`` P, of which the first S (each value of
  ``shared_prefix_tokens``, one variant each) are shared by every request; the rest are token
  ids drawn per request (seeded, no special tokens), as vLLM's and SGLang's random datasets do.

Every request decodes ``output_tokens`` O with EOS ignored, so levels and backends compare.
Load is applied as closed-loop concurrency ``levels`` (C requests in flight at all times) and,
optionally, open-loop Poisson ``rates`` (requests/s). Each level is one plan group (its requests
run concurrently, ``backends.load_loop``), after an unrecorded warm-up group of its own; the prefix
cache is reset before both, so a level never inherits another's cache. A level runs ``requests``
requests (fixed shape; default 4 x C, at least 32) or C whole sessions (sessions shape: at least
4, at most ``users``); with ``seconds`` it stops starting requests after that many seconds
(requests not started are not recorded).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from contract.chat import Renderer, common_prefix_len
from contract.options import parse_pairs
from contract.plan import Group, Plan, Step
from workloads.conversation import recorded_requests
from workloads.kinds import FileRef, Kind, Override
from workloads.spec import Messages, TranscriptSource, Turn, _Strict, mistake

# What a load workload runs on a CPU when --load says nothing (the built-in's levels up to 128, with
# 128 ten-turn sessions, would take hours there): levels 1 and 4, four two-turn sessions, four 192-token
# fixed-shape requests (0 or 160 shared) per level, 8 output tokens; no capacity search (four requests
# a level leave no steady state to judge).
CPU_LOAD = "levels=1:4,search_levels=0,users=4,requests=4,max_turns=2,rates=,output_tokens=8,prompt_tokens=192,shared_prefix_tokens=0:160"
LIST_FIELDS = ("levels", "rates", "shared_prefix_tokens")
FIXED_FIELDS = ("name", "kind")  # what --load cannot set for every load workload at once
RANDOM_SEED = 13
STEADY_REQUESTS = 10  # a fixed-shape level's steady window: 10 x C requests after its first wave of C
DEFAULT_USERS = 32
# A wait longer than this (a user's think time, the mean gap between Poisson arrivals) makes a level that
# does not end in any sitting: neither --request-timeout (one request) nor seconds (starting requests) bounds it.
MAX_WAIT_S = 3600.0
SOURCES = ("conversation", "turns", "transcripts", "sessions")  # a sessions load replays exactly one


class LoadSpec(_Strict):
    name: str = Field(min_length=1)
    kind: Literal["load"]
    shape: Literal["sessions", "fixed"]
    levels: list[Annotated[int, Field(ge=1)]] = Field([1, 8, 32, 128], description="closed-loop concurrency levels")
    rates: list[Annotated[float, Field(gt=0)]] = Field([], description="open-loop Poisson request rates (requests/s)")
    requests: int | None = Field(None, ge=1, description=f"requests per level (fixed shape; default C + {STEADY_REQUESTS} x C: "
                                 "the first wave and a steady window, at least 32)")
    seconds: float | None = Field(None, ge=1, description="instead of a request count: run each level's window this long "
                                  "(at least 1 s)")
    warmup_requests: int | None = Field(None, ge=0, description="unrecorded requests before each level (default: C)")
    output_tokens: int = Field(64, ge=1, description="tokens decoded per request, EOS ignored")
    # fixed shape
    prompt_tokens: int = Field(1024, ge=2)
    shared_prefix_tokens: list[Annotated[int, Field(ge=0)]] = Field([0, 960])
    # sessions shape
    users: int | None = Field(None, ge=1, description=f"sessions (default {DEFAULT_USERS}; with transcripts: their number, at most)")
    conversation: str | None = Field(None, description="a built-in conversation workload whose turns every user replays")
    system: str | None = None
    tools: list[dict[str, Any]] | None = None
    turns: list[Turn] | None = Field(None, min_length=1)
    transcripts: TranscriptSource | None = Field(None, description="recorded sessions, one a user (JSONL, as conversations)")
    sessions: list[Messages] | None = Field(None, min_length=1, description="recorded sessions inline (what transcripts are read into)")
    think_time_s: float = Field(0.0, ge=0)
    max_turns: int | None = Field(None, ge=1, description="replay only each session's first K turns")
    # the capacity search (contract.capacity): levels it may add between (and above) the measured ones
    search_levels: int = Field(0, ge=0, description="levels the capacity search may add per variant and loop (0: off; "
                               "the built-in loads: 4)")
    search_max: int | None = Field(None, ge=1, description="the highest concurrency the search may try (default: the "
                                   "highest level; sessions: at most users)")
    search_targets: list[str] | None = Field(None, description="the targets searched for, in --slo syntax (default: "
                                             "--slo's, else contract.slo.DEFAULT_SPECS)")

    @model_validator(mode="after")
    def _consistent(self) -> LoadSpec:
        if self.requests is not None and self.seconds is not None:
            raise mistake("give requests or seconds, not both")
        if not self.levels and not self.rates:
            raise mistake("no load to run: levels and rates are both empty", ["levels"])
        for name in ("levels", "rates", *(["shared_prefix_tokens"] if self.shape == "fixed" else [])):
            values = getattr(self, name)
            twice = next((v for i, v in enumerate(values) if v in values[:i]), None)
            if twice is not None:
                raise mistake(f"{name}: {twice:g} is given twice: each value is one level, measured once", [name])
        if not 0 <= self.think_time_s <= MAX_WAIT_S:
            raise mistake(f"think_time_s {self.think_time_s:g}: at most {MAX_WAIT_S:g} s, or a level would never end "
                          "(neither --request-timeout nor seconds bounds a wait between turns)", ["think_time_s"])
        for i, r in enumerate(self.rates):
            if not 1 / MAX_WAIT_S <= r < float("inf"):
                raise mistake(f"rate {r:g}/s: a mean gap between arrivals above {MAX_WAIT_S:g} s makes a level that never "
                              f"ends (at least {1 / MAX_WAIT_S:.2g} requests/s, finite)", ["rates", i])
        if self.seconds is not None and self.seconds == float("inf"):
            raise mistake("seconds must be finite", ["seconds"])
        if self.search_max is not None and self.search_max < min(self.levels, default=1):
            raise mistake(f"search_max {self.search_max} is below the first level ({min(self.levels)}): "
                          "the search refines between and above the measured levels", ["search_max"])
        if self.search_targets is not None:
            from contract.slo import parse_targets

            try:
                parse_targets(self.search_targets)
            except ValueError as exc:
                raise mistake(str(exc), ["search_targets"]) from None
        if self.shape == "fixed":
            if not self.shared_prefix_tokens:
                raise mistake("shared_prefix_tokens is empty: give at least one (0: nothing shared)", ["shared_prefix_tokens"])
            for i, s in enumerate(self.shared_prefix_tokens):
                if s >= self.prompt_tokens:
                    raise mistake(f"a shared prefix of {s} tokens leaves nothing of a {self.prompt_tokens}-token prompt "
                                  "to tell requests apart", ["shared_prefix_tokens", i])
        else:
            given = [k for k in SOURCES if getattr(self, k) is not None]
            if len(given) != 1:
                what = "none given" if not given else f"{' and '.join(given)} given"
                raise mistake(f"a sessions load needs exactly one of conversation (a built-in's name), turns, transcripts ({what})")
            users = self.user_count()
            recorded = self.sessions is not None and users == len(self.sessions)
            who = f"{users} transcript{'s' * (users != 1)}" if recorded else f"{users} users"
            for i, c in enumerate(self.levels):
                if users is not None and c > users:
                    raise mistake(f"concurrency {c} is above the number of sessions ({who}): "
                                  "a closed loop cannot keep more users busy than it has", ["levels", i])
            if users is not None and self.search_max is not None and self.search_max > users:
                raise mistake(f"search_max {self.search_max} is above the number of sessions ({who})", ["search_max"])
        return self

    def user_count(self) -> int | None:
        """Users a sessions load has: ``users`` (default 32); with recorded sessions one per session, at
        most ``users``; None while the transcripts are not read (``users``, if given, bounds it)."""
        if self.sessions is not None:
            return min(self.users or len(self.sessions), len(self.sessions))
        return self.users if self.transcripts is not None else (self.users or DEFAULT_USERS)

    def loads(self) -> list[tuple[str, dict[str, Any]]]:
        """Each level as (case label, the group's load settings)."""
        out = [(f"C={c}", {"concurrency": c}) for c in self.levels]
        return out + [(f"rate={r:g}", {"rate_rps": r, "concurrency": None}) for r in self.rates]


# --- prompts ------------------------------------------------------------------------------------
def session_turns(spec: LoadSpec) -> tuple[str | None, list[dict[str, Any]] | None, list[Turn]]:
    """(system, tools, turns) every user replays."""
    if spec.turns is not None:
        return spec.system, spec.tools, spec.turns
    if spec.transcripts is not None:
        raise ValueError(f"load {spec.name!r}: transcripts not loaded (read the file with workloads.load_file)")
    from workloads import load_builtin

    found = [s for s in load_builtin([spec.conversation or ""]) if s.kind == "conversation" and s.turns]
    if not found:
        raise ValueError(f"load {spec.name!r}: {spec.conversation!r} is no built-in conversation with turns")
    base = found[0]
    return base.system, base.tools, base.turns


def user_prompts(spec: LoadSpec, renderer: Renderer, user: int, first: int | None = None, source=None) -> list[list[int]]:
    """One user's session: every turn's prompt (the whole history so far) as token ids (the first ``first``
    turns). With recorded sessions, user k replays session k (modulo their number: warm-up users)."""
    limit = min(first or 10**9, spec.max_turns or 10**9)
    if spec.sessions is not None:
        requests = recorded_requests(spec.sessions[user % len(spec.sessions)], spec.system)
        return [renderer.chat_ids(messages, spec.tools) for messages in requests[:limit]]
    system, tools, turns = source or session_turns(spec)
    turns = turns[:limit]
    head = [{"role": "system", "content": system}] if system else []
    history: list[dict[str, Any]] = []
    prompts = []
    for t, turn in enumerate(turns):
        own = f"Incident INC-{40000 + user * 37 + t}, reported by on-call user {user}:\n{turn.user}"
        history = [*history, {"role": "user", "content": own}]
        prompts.append(renderer.chat_ids(head + history, tools))
        history = [*history, {"role": "assistant", "content": turn.assistant}]
    return prompts


def fixed_prompt(renderer: Renderer, prefix: list[int], length: int, request: int) -> list[int]:
    """``prefix`` then token ids drawn for this request (seeded), ``length`` in all."""
    import numpy as np

    vocab, special = _vocab(renderer)
    draw = np.random.default_rng([RANDOM_SEED, request]).integers(0, vocab, size=2 * length)
    ids = [int(i) for i in draw if int(i) not in special]
    return (list(prefix) + ids)[:length]


def _vocab(renderer: Renderer) -> tuple[int, set[int]]:
    tok = renderer.tokenizer
    return len(tok), set(tok.all_special_ids) | {int(i) for i in getattr(tok, "added_tokens_decoder", {})}


def shared_prefix_ids(renderer: Renderer, n: int) -> list[int]:
    from workloads.sweep import filler_ids

    text = "The on-call engineer opened the dashboard at three in the morning and read every log in turn."
    return filler_ids(text, renderer, n)[:n]


# --- plan ---------------------------------------------------------------------------------------
def _users(spec: LoadSpec, concurrency: int | None) -> int:
    """Sessions a level runs, each whole: C of them (at least 4, so a level is not over after one
    session at C=1), at most the spec's users; an open-loop rate runs every user."""
    users = spec.user_count() or DEFAULT_USERS
    return users if concurrency is None else min(users, max(concurrency, 4))


def fixed_requests(requests: int | None, concurrency: int | None) -> int:
    """A fixed-shape level's requests (``requests`` when given): the first wave (C) and a steady window of
    STEADY_REQUESTS x C, at least 32 (an open-loop rate: 33)."""
    return requests if requests is not None else max(32, (1 + STEADY_REQUESTS) * (concurrency or 3))


def plan(spec: LoadSpec, renderer: Renderer, out: Plan, repeats: int, start: int = 0) -> None:  # noqa: ARG001 - levels, not repeats
    """Per variant and level: an unrecorded warm-up group (the cache reset before it), then the level's group,
    which inherits the warm-up's cache. With the capacity search on, the variant's last closed-loop and
    last open-loop group carry the search's settings, and a pool of steps (warm-up and timed, at the
    search's ceiling) lets the runner cut the levels it adds (``search_groups``)."""
    sessions = _Sessions(spec, renderer)
    variants = ["sessions"] if spec.shape == "sessions" else [f"S={s}" for s in spec.shared_prefix_tokens]
    ceiling = max([*spec.levels, spec.search_max or 0]) if spec.levels else None
    for variant in variants:
        prefix = shared_prefix_ids(renderer, int(variant[2:])) if spec.shape == "fixed" else []
        last: dict[str, Group] = {}
        for case, load in spec.loads():
            warm, timed = _level_steps(spec, sessions, renderer, out, variant, case, prefix, load.get("concurrency"))
            settings = _settings(spec, load)
            block = f"{spec.name}/{variant}/{case}"
            if warm:
                out.groups.append(Group(block=block, steps=warm, warmup=True, reset_cache=True, load=settings))
            out.groups.append(Group(block=block, steps=timed, reset_cache=not warm, load=settings))
            last["closed" if load.get("concurrency") else "open"] = out.groups[-1]
        if not spec.search_levels or not last:
            continue
        pool = f"{spec.name}/{variant}/search-pool"
        for loop, group in last.items():
            group.load = {**group.load, "search": {"loop": loop, "levels": spec.search_levels, "pool": pool,
                                                   "ceiling": ceiling if loop == "closed" else None,
                                                   "targets": spec.search_targets, "shape": spec.shape,
                                                   "users": _users(spec, None), "requests": spec.requests,
                                                   "warmup_requests": spec.warmup_requests,
                                                   "settings": _settings(spec, {"concurrency": None})}}
        warm = _level_steps(spec, sessions, renderer, out, variant, "pool", prefix, ceiling)[0]
        if spec.shape == "sessions":  # every user: an open-loop level runs them all
            timed = _level_steps(spec, sessions, renderer, out, variant, "pool", prefix, None)[1]
        else:  # as many requests as the largest level the search may add, closed or open
            n = max(fixed_requests(spec.requests, ceiling), fixed_requests(spec.requests, None))
            timed = _fixed_steps(spec, renderer, out, variant, "pool", prefix, range(n))
        if warm:
            out.groups.append(Group(block=pool, steps=warm, warmup=True, load={"pool": "warmup"}))
        out.groups.append(Group(block=pool, steps=timed, warmup=True, load={"pool": "timed"}))


def _settings(spec: LoadSpec, load: dict[str, Any]) -> dict[str, Any]:
    return {**load, "think_time_s": spec.think_time_s if spec.shape == "sessions" else 0.0, "seconds": spec.seconds,
            "seed": RANDOM_SEED}


def _level_steps(spec: LoadSpec, sessions: _Sessions, renderer: Renderer, out: Plan, variant: str, case: str,
                 prefix: list[int], concurrency: int | None) -> tuple[list[Step], list[Step]]:
    """A level's warm-up steps and timed steps."""
    c = concurrency or 1
    warm_n = spec.warmup_requests if spec.warmup_requests is not None else c
    if spec.shape == "sessions":
        users = spec.user_count() or DEFAULT_USERS  # warm-up users come after every timed one
        warm = _session_steps(spec, sessions, out, case, range(users, users + warm_n), warm_turns=1)
        return warm, _session_steps(spec, sessions, out, case, range(_users(spec, concurrency)))
    n = fixed_requests(spec.requests, concurrency)
    warm = _fixed_steps(spec, renderer, out, variant, case, prefix, range(10**6, 10**6 + warm_n))
    return warm, _fixed_steps(spec, renderer, out, variant, case, prefix, range(n))


def search_groups(info: dict[str, Any], pool_warm: list[Step], pool_timed: list[Step], block: str,
                  concurrency: int | None, rate_rps: float | None, searched_for: str) -> list[Group]:
    """The warm-up and timed groups of a level the capacity search adds, cut from the variant's pool (the
    same requests a planned level at that load has: a prefix of the pool's users or requests)."""
    import dataclasses

    case = f"C={concurrency}" if concurrency else f"rate={rate_rps:g}"
    c = concurrency or 1
    warm_n = info["warmup_requests"] if info["warmup_requests"] is not None else c
    if info["shape"] == "sessions":
        users = min(info["users"], max(c, 4)) if concurrency else info["users"]
        keep = sorted({s.user for s in pool_timed})[:users]
        timed = [s for s in pool_timed if s.user in set(keep)]
    else:
        timed = pool_timed[:fixed_requests(info["requests"], concurrency)]
    warm = pool_warm[:warm_n]
    settings = {**info["settings"], "concurrency": concurrency, "rate_rps": rate_rps, "searched_for": searched_for}
    groups = [Group(block=block + f"/{case}", steps=[dataclasses.replace(s, case=case) for s in warm], warmup=True,
                    reset_cache=True, load=settings)] if warm else []
    return groups + [Group(block=block + f"/{case}", steps=[dataclasses.replace(s, case=case) for s in timed],
                           reset_cache=not warm, load=settings)]


def _step(spec: LoadSpec, mode: str, case: str, key: str, rep: int, **kw: Any) -> Step:
    return Step(workload=spec.name, kind="load", mode=mode, case=case, prompt=key, max_new_tokens=spec.output_tokens,
                rep=rep, temperature=0.0, ignore_eos=True, reuse_prefix=True, needs=["load"], **kw)


class _Sessions:
    """Every user's prompts, rendered once per plan (per recorded session, with recorded sessions)."""

    def __init__(self, spec: LoadSpec, renderer: Renderer) -> None:
        self.spec, self.renderer = spec, renderer
        self.cache: dict[int, list[list[int]]] = {}
        self.complete: dict[int, bool] = {}
        self.recorded = len(spec.sessions) if spec.sessions is not None else None
        self.source = session_turns(spec) if spec.shape == "sessions" and self.recorded is None else None

    def __call__(self, user: int, first: int | None = None) -> list[list[int]]:
        key = user % self.recorded if self.recorded else user
        have = self.cache.get(key)
        if have is None or (len(have) < (first or 10**9) and not self.complete.get(key)):
            self.cache[key] = user_prompts(self.spec, self.renderer, key, first, self.source)
            self.complete[key] = first is None
        return self.cache[key][:first]

    def across(self, user: int, users: range) -> int:
        """What a prefix cache can hold for ``user``'s first request from other users': what every
        user shares (the built-in's users part after the system prompt and tools: user -1, whom no
        plan runs, stands for any other); with recorded sessions, the longest prefix it shares with
        another session's first request among ``users``."""
        first = self(user, 1)[0]
        if not self.recorded:
            return common_prefix_len(self(-1, 1)[0], first)
        others = {v % self.recorded for v in users} - {user % self.recorded}
        return max((common_prefix_len(self(v, 1)[0], first) for v in others), default=0)


def _session_steps(spec: LoadSpec, sessions: _Sessions, out: Plan, case: str, users: range,
                   warm_turns: int | None = None) -> list[Step]:
    """Every user's turns, user by user (the load loop runs a user's turns in order, users concurrently)."""
    steps: list[Step] = []
    for u in users:
        prompts = sessions(u, warm_turns)
        for t, ids in enumerate(prompts):
            # what a prefix cache can hold for this request: the user's previous turn, else what
            # other users' first requests share with it (the system prompt and tools, at least)
            shared = common_prefix_len(prompts[t - 1], ids) if t else sessions.across(u, users)
            steps.append(_step(spec, "sessions", case, out.add_prompt(ids), rep=u, turn=t + 1, user=u,
                               shared_prefix_tokens=shared))
    return steps


def _fixed_steps(spec: LoadSpec, renderer: Renderer, out: Plan, variant: str, case: str, prefix: list[int],
                 requests: range) -> list[Step]:
    return [_step(spec, variant, case, out.add_prompt(fixed_prompt(renderer, prefix, spec.prompt_tokens, r)), rep=r,
                  shared_prefix_tokens=len(prefix)) for r in requests]


def context_needed(spec: LoadSpec, renderer: Renderer) -> int:
    """The longest prompt + output of the workload, in tokens (checked against the model's context)."""
    if spec.shape == "fixed":
        return spec.prompt_tokens + spec.output_tokens
    users = range(spec.user_count() or 1) if spec.sessions is not None else [spec.user_count() or DEFAULT_USERS]
    return max(len(p) for u in users for p in user_prompts(spec, renderer, u)) + spec.output_tokens


def parse_load(text: str) -> dict[str, Any]:
    """``--load`` as field overrides (lists split at ``:``)."""
    out: dict[str, Any] = {}
    for key, value in parse_pairs(text, "--load").items():
        if key in FIXED_FIELDS:
            raise ValueError(f"--load {key}=...: sets every load workload's {key} at once (two loads would share one "
                             f"{key}); set it in a workload file")
        out[key] = [v for v in value.split(":") if v] if key in LIST_FIELDS else value
    return out


def with_files(spec: LoadSpec, loaded: Any, ctx: Any) -> list[LoadSpec]:
    """The transcripts read as the load's ``sessions`` (one a user), the spec validated again with them."""
    if spec.transcripts is None or loaded is None:
        return [spec]
    doc = {**spec.model_dump(exclude_none=True, exclude={"transcripts"}), "sessions": [m for _, m in loaded]}
    return [ctx.revalidate(spec, doc)]


KIND = Kind("load", LoadSpec, plan, runs_as="concurrent", timing_only=True,
            files=(FileRef(("transcripts", "path"), reads="transcripts", takes_first=True),), with_files=with_files,
            overrides=(Override("--load", parse_load, cpu_default=CPU_LOAD,
                               missing="--load: none of this run's workloads is a load workload (add --workloads load, "
                                       "or a kind: load workload with --workload-file)"),),
            search_groups=search_groups)
