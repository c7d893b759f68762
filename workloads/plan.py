"""The run plan: every request of every workload, as token ids, in the order it must run.

The harness builds the plan once (tokenizer only, no weights) and every backend's child
process replays it, so all backends see the same prompts in the same order. Steps are grouped:
a group runs as a unit (a conversation repeat keeps its cache from turn to turn), and warm-up
groups run untimed before the groups of their block, only when one of those still has to run.

Order (:data:`ORDER_DESCRIPTION`): each workload lists its warm-ups first, then its repeats; within
a repeat every variant (sweep length N, conversation mode, JSON mode, template format) runs once,
in an order rotated by one place from repeat to repeat (:func:`rotated`), so drift during a run
shows up as spread across repeats rather than as an effect of N or of the mode. With ``--starts
K``, every step carries the engine start (a fresh child process) that runs it (``Kind.repeated``).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class Step:
    workload: str
    kind: str
    mode: str
    case: str
    prompt: str  # key into Plan.prompts
    max_new_tokens: int
    rep: int = 0
    turn: int | None = None
    temperature: float | None = None
    top_p: float = 1.0
    ignore_eos: bool = False
    json_schema: dict[str, Any] | None = None  # what valid_json is checked against
    grammar: bool = False  # constrain decoding to json_schema
    top_logprobs: int = 0
    reuse_prefix: bool = False
    want_attentions: bool = False
    shared_prefix_tokens: int | None = None
    prefix_break: dict[str, Any] | None = None
    expected: dict[str, Any] | None = None
    answer: str | None = None
    needs: list[str] = field(default_factory=list)  # Capabilities flags the step requires
    seed: int | None = None
    engine_start: int = 0  # which engine start (child process) runs it: --starts K
    user: int | None = None  # load: the session (user) the request belongs to

    def key(self) -> tuple:
        return (self.engine_start, self.workload, self.mode, self.case, self.rep, self.turn, self.temperature)


@dataclass
class Group:
    block: str  # e.g. "sweep/N=512": warm-ups precede the groups of their block
    steps: list[Step]
    warmup: bool = False
    reset_cache: bool = False  # drop every cached prefix before the group (a conversation repeat)
    load: dict[str, Any] | None = None  # a load level: its steps run concurrently (backends.load_loop.LoadSettings)


@dataclass
class Plan:
    prompts: dict[str, list[int]] = field(default_factory=dict)
    groups: list[Group] = field(default_factory=list)

    def add_prompt(self, ids: list[int]) -> str:
        key = hashlib.sha1(json.dumps(ids).encode()).hexdigest()[:16]
        self.prompts[key] = ids
        return key

    def to_json(self) -> str:
        return json.dumps({"prompts": self.prompts, "groups": [asdict(g) for g in self.groups]})

    @classmethod
    def from_json(cls, text: str) -> Plan:
        data = json.loads(text)
        groups = [
            Group(block=g["block"], warmup=g["warmup"], reset_cache=g["reset_cache"], load=g.get("load"),
                  steps=[Step(**s) for s in g["steps"]])
            for g in data["groups"]
        ]
        return cls(prompts={k: list(v) for k, v in data["prompts"].items()}, groups=groups)

    def workloads(self, engine_start: int | None = None) -> list[str]:
        return list(dict.fromkeys(
            s.workload for g in self.groups for s in g.steps if engine_start in (None, s.engine_start)
        ))


ORDER_DESCRIPTION = (
    "within a repeat each variant (sweep length, conversation mode, JSON mode, template format) runs once, "
    "in an order rotated by one place from repeat to repeat (and from engine start to engine start), "
    "so drift during a run shows as spread, not as an effect of N or of the mode"
)


def rotated(items: list | tuple, turn: int) -> list:
    """``items`` rotated left by ``turn`` places: repeat r runs the variants in the order r, r+1, ..."""
    items = list(items)
    if not items:
        return items
    k = turn % len(items)
    return items[k:] + items[:k]


def call_seed(*parts: object) -> int:
    """A stable per-call sampling seed (the same call gets the same seed on every backend)."""
    return int(hashlib.sha1(repr(parts).encode()).hexdigest()[:8], 16)
