"""The load kind's prompts, as token ids: each user's session turn by turn, fixed-shape requests of
random token ids behind a shared prefix, and what a prefix cache can hold for each request.

Rendered once per plan (``SessionPrompts``) by the planner (``workloads/load/planner.py``);
``fixed_prompt`` and ``shared_prefix_ids`` are also the benchmarks' fixed shape
(``benchmarks/load_ceiling.py``), so both measure the same requests.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from llm_call_anatomy.contract.chat import Renderer, common_prefix_len
from llm_call_anatomy.workloads.load.spec import DEFAULT_USERS, LoadSpec
from llm_call_anatomy.workloads.plan import filler_ids
from llm_call_anatomy.workloads.spec import Turn
from llm_call_anatomy.workloads.transcripts import recorded_requests

RANDOM_SEED = 13
PREFETCH_USERS = 128  # users whose histories one tokenizer batch holds (~1,300 prompts of the long chat)


def session_turns(spec: LoadSpec) -> tuple[str | None, list[dict[str, Any]] | None, list[Turn]]:
    """(system, tools, turns) every user replays."""
    if spec.turns is not None:
        return spec.system, spec.tools, spec.turns
    if spec.transcripts is not None:
        raise ValueError(
            f"load {spec.name!r}: transcripts not loaded (read the file with workloads.read_workload_file)"
        )
    # late: the catalog reads the kinds' registry, which imports this kind's room (a circle by name)
    from llm_call_anatomy.workloads.catalog import read_builtin

    found = [s for s in read_builtin([spec.conversation or ""]) if s.kind == "conversation" and s.turns]
    if not found:
        raise ValueError(f"load {spec.name!r}: {spec.conversation!r} is no built-in conversation with turns")
    base = found[0]
    return base.system, base.tools, base.turns


def user_prompts(
    spec: LoadSpec, renderer: Renderer, user: int, first: int | None = None, source=None
) -> list[list[int]]:
    """One user's session: every turn's prompt (the whole history so far) as token ids (the first ``first``
    turns). With recorded sessions, user k replays session k (modulo their number: warm-up users)."""
    conversations, tools = user_conversations(spec, user, first, source)
    return renderer.chats_ids(conversations, tools)


Conversation = list[dict[str, Any]]


def user_conversations(
    spec: LoadSpec, user: int, first: int | None = None, source=None
) -> tuple[list[Conversation], list[dict[str, Any]] | None]:
    """What :func:`user_prompts` renders: each turn's messages (the history so far), and the tools, before the
    template."""
    limit = min(first or 10**9, spec.max_turns or 10**9)
    if spec.sessions is not None:
        return recorded_requests(spec.sessions[user % len(spec.sessions)], spec.system)[:limit], spec.tools
    system, tools, turns = source or session_turns(spec)
    turns = turns[:limit]
    head = [{"role": "system", "content": system}] if system else []
    history: list[dict[str, Any]] = []
    conversations = []
    for t, turn in enumerate(turns):
        own = f"Incident INC-{40000 + user * 37 + t}, reported by on-call user {user}:\n{turn.user}"
        history = [*history, {"role": "user", "content": own}]
        conversations.append(head + history)
        history = [*history, {"role": "assistant", "content": turn.assistant}]
    return conversations, tools


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
    text = "The on-call engineer opened the dashboard at three in the morning and read every log in turn."
    return filler_ids(text, renderer, n)[:n]


class SessionPrompts:
    """Every user's prompts, rendered once per plan (per recorded session, with recorded sessions)."""

    def __init__(self, spec: LoadSpec, renderer: Renderer) -> None:
        self.spec, self.renderer = spec, renderer
        self.cache: dict[int, list[list[int]]] = {}
        self.complete: dict[int, bool] = {}
        self.recorded = len(spec.sessions) if spec.sessions is not None else None
        self.source = session_turns(spec) if spec.shape == "sessions" and self.recorded is None else None

    def __call__(self, user: int, first: int | None = None) -> list[list[int]]:
        self.prefetch([user], first)  # rendered now where it is not yet (a batch of one user)
        return self.cache[self._key(user)][:first]

    def prefetch(self, users: Iterable[int], first: int | None = None) -> None:
        """Render every one of ``users``' prompts not rendered yet in one tokenizer batch (what ``self(user,
        first)`` then returns): the tokenizer spreads a batch over the machine's cores, and a level of a
        thousand users who each replay ten turns is ten thousand histories."""
        keys = list(dict.fromkeys(k for k in map(self._key, users) if self._missing(k, first)))
        for at in range(0, len(keys), PREFETCH_USERS):  # a batch's encodings are held at once: bounded
            chunk = keys[at : at + PREFETCH_USERS]
            rendered = [user_conversations(self.spec, k, first, self.source) for k in chunk]
            tools = rendered[0][1]  # one spec's users share its tools
            flat = [c for conversations, _ in rendered for c in conversations]
            ids = iter(self.renderer.chats_ids(flat, tools))
            for k, (conversations, _) in zip(chunk, rendered, strict=True):
                self.cache[k] = [next(ids) for _ in conversations]
                self.complete[k] = first is None

    def _key(self, user: int) -> int:
        return user % self.recorded if self.recorded else user

    def _missing(self, key: int, first: int | None) -> bool:
        have = self.cache.get(key)
        return have is None or (len(have) < (first or 10**9) and not self.complete.get(key))

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


def context_needed(spec: LoadSpec, renderer: Renderer) -> int:
    """The longest prompt + output of the workload, in tokens (checked against the model's context)."""
    if spec.shape == "fixed":
        return spec.prompt_tokens + spec.output_tokens
    users = (
        range(spec.user_count() or 1) if spec.sessions is not None else [spec.user_count() or DEFAULT_USERS]
    )
    return max(len(p) for u in users for p in user_prompts(spec, renderer, u)) + spec.output_tokens
