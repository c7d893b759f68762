"""The ``brevity`` kind's measuring half: does the model stop on its own within a few tokens?

A workload lists prompts; each is asked once per repeat at T=0 with ``max_new_tokens`` new
tokens. Scored into the record's ``clean`` field: the backend finished with ``stop`` (EOS)
before the limit.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Literal

from pydantic import Field

from llm_call_anatomy.contract.chat import Renderer
from llm_call_anatomy.contract.plan import Group, Plan, Step
from llm_call_anatomy.workloads.kinds import Kind
from llm_call_anatomy.workloads.spec import _Strict


class BrevitySpec(_Strict):
    name: str = Field(min_length=1)
    kind: Literal["brevity"]
    prompts: list[str] = Field(min_length=1)
    max_new_tokens: int = Field(8, ge=1)


def plan(spec: BrevitySpec, renderer: Renderer, out: Plan, repeats: int, start: int = 0) -> None:
    keys = [out.add_prompt(renderer.chat_ids([{"role": "user", "content": text}])) for text in spec.prompts]
    for rep in range(repeats):
        for i, key in enumerate(keys):
            step = Step(
                workload=spec.name,
                kind="brevity",
                mode="greedy",
                case=f"prompt={i}",
                prompt=key,
                max_new_tokens=spec.max_new_tokens,
                rep=rep,
                temperature=0.0,
            )
            out.groups.append(Group(block=f"{spec.name}/prompt={i}", steps=[step]))


def score(step: Step, output: Any) -> dict[str, Any]:
    return {"clean": output.finish_reason == "stop"}


KIND = Kind("brevity", BrevitySpec, plan, score=score)

# The same kind run by the concurrent group runner (``Kind.runs_as``): the runner must take it from the kind.
AS_LEVELS = replace(KIND, runs_as="concurrent")
