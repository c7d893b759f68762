"""The run plan's types: every request of every workload, as token ids, in the order it must run.

The harness builds the plan once (tokenizer only, no weights; the planners in ``workloads/``) and
every backend's child process replays it from ``plan.json``, so all backends see the same prompts
in the same order. Steps are grouped: a group runs as a unit (a conversation repeat keeps its cache
from turn to turn), and warm-up groups run untimed before the groups of their block, only when one
of those still has to run. The order itself is the planners' (``workloads.plan.ORDER_DESCRIPTION``).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from llm_call_anatomy.contract.chat import prompt_key
from llm_call_anatomy.contract.records import RecordKey


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
        """The key of the step's record without the backend (``RecordKey.without_backend``)."""
        return RecordKey.of(self).without_backend()


@dataclass
class Group:
    block: str  # e.g. "sweep/N=512": warm-ups precede the groups of their block
    steps: list[Step]
    warmup: bool = False
    reset_cache: bool = False  # drop every cached prefix before the group (a conversation repeat)
    load: dict[str, Any] | None = (
        None  # a load level: its steps run concurrently (backends.load_loop.LoadSettings)
    )


@dataclass
class Plan:
    prompts: dict[str, list[int]] = field(default_factory=dict)
    groups: list[Group] = field(default_factory=list)

    def add_prompt(self, ids: list[int]) -> str:
        key = prompt_key(ids)
        self.prompts[key] = ids
        return key

    def to_json(self) -> str:
        return json.dumps({"prompts": self.prompts, "groups": [asdict(g) for g in self.groups]})

    @classmethod
    def from_json(cls, text: str) -> Plan:
        data = json.loads(text)
        groups = [
            Group(
                block=g["block"],
                warmup=g["warmup"],
                reset_cache=g["reset_cache"],
                load=g.get("load"),
                steps=[Step(**s) for s in g["steps"]],
            )
            for g in data["groups"]
        ]
        return cls(prompts={k: list(v) for k, v in data["prompts"].items()}, groups=groups)

    def workloads(self, engine_start: int | None = None) -> list[str]:
        return list(
            dict.fromkeys(
                s.workload for g in self.groups for s in g.steps if engine_start in (None, s.engine_start)
            )
        )
