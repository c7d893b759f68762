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
  kind's JSONL format; ``workloads/reader.py`` puts them into ``sessions``, one messages list per user):
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
optionally, open-loop Poisson ``rates`` (sessions started per second: requests/s for the fixed shape,
whose requests are sessions of one; new users/s for the sessions shape, each then running its turns).
Each level is one plan group (its requests
run concurrently, ``backends.load_loop``), after an unrecorded warm-up group of its own; the prefix
cache is reset before both, so a level never inherits another's cache. A closed level runs ``requests``
requests (fixed shape; default C + 10 x C, at least 32) or C whole sessions (sessions shape: at least
4, at most ``users``); with ``seconds`` it stops starting requests after that many seconds
(requests not started are not recorded). An open level is a sustained rate: the arrivals its process
(``arrival``: poisson, constant, gamma with ``burstiness``) draws from the seed over ``duration_s``
(default 60 s), one request (fixed) or one new user (sessions) each. Users think ``think_s`` (mean;
``think``: exponential by default, or fixed) between an answer and their next turn.

The kind's files: ``spec.py`` (the format and ``--load``), ``prompts.py`` (the token ids),
``planner.py`` (the plan's groups), ``search.py`` (the levels the capacity search adds); this
module is the registry's entry (``KIND``) and puts a workload's transcripts into ``sessions``.
"""

from __future__ import annotations

from typing import Any

from llm_call_anatomy.workloads.kinds import FileRef, Kind, Override
from llm_call_anatomy.workloads.load.planner import plan
from llm_call_anatomy.workloads.load.search import search_groups
from llm_call_anatomy.workloads.load.spec import CPU_LOAD, LoadSpec, parse_load


def with_files(spec: LoadSpec, loaded: Any, ctx: Any) -> list[LoadSpec]:
    """The transcripts read as the load's ``sessions`` (one a user), the spec validated again with them."""
    if spec.transcripts is None or loaded is None:
        return [spec]
    doc = {**spec.model_dump(exclude_none=True, exclude={"transcripts"}), "sessions": [m for _, m in loaded]}
    return [ctx.revalidate(spec, doc)]


KIND = Kind(
    "load",
    LoadSpec,
    plan,
    runs_as="concurrent",
    timing_only=True,
    files=(FileRef(("transcripts", "path"), reads="transcripts", takes_first=True),),
    with_files=with_files,
    overrides=(
        Override(
            "--load",
            parse_load,
            cpu_default=CPU_LOAD,
            missing="--load: none of this run's workloads is a load workload (add --workloads load, "
            "or a kind: load workload with --workload-file)",
        ),
    ),
    search_groups=search_groups,
    order=50,
)
