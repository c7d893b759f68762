"""Template formats: short questions asked in several prompt formats, greedy, scored for a clean answer.

``clean``: the reply, stripped of surrounding whitespace, is exactly the short answer and the
model stopped on its own (finish reason ``stop``). The attention probe (HF eager only) records,
for one prompt, the share of the last position's attention that lands on special tokens.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from llm_call_anatomy.contract.chat import Renderer
from llm_call_anatomy.contract.plan import Group, Plan, Step
from llm_call_anatomy.workloads.kinds import Kind
from llm_call_anatomy.workloads.plan import rotated
from llm_call_anatomy.workloads.spec import _Strict, no_repeats


# --- the file format -----------------------------------------------------------------
class Question(_Strict):
    question: str
    answer: str


class TemplateFormat(_Strict):
    name: str = Field(min_length=1)
    text: str | None = Field(
        None, description="format string with {system} and {question}; none = chat template"
    )

    @field_validator("text")
    @classmethod
    def _has_question(cls, v: str | None) -> str | None:
        if v is not None and "{question}" not in v:
            raise ValueError("text must contain {question}")
        return v


class TemplateSpec(_Strict):
    name: str = Field(min_length=1)
    kind: Literal["template"]
    max_new_tokens: int = Field(32, ge=1)
    system: str
    attention_probe: bool = True
    questions: list[Question] = Field(min_length=1)
    formats: list[TemplateFormat] = Field(min_length=1)

    @model_validator(mode="after")
    def _no_repeats(self) -> TemplateSpec:
        no_repeats(self.formats, "formats", "name")
        return self


def score(text: str, answer: str, finish_reason: str | None) -> bool:
    return text.strip() == answer and finish_reason == "stop"


def render(fmt: TemplateFormat, system: str, question: str, renderer: Renderer) -> list[int]:
    if fmt.text is None:
        messages = [{"role": "system", "content": system}, {"role": "user", "content": question}]
        return renderer.chat_ids(messages)
    return renderer.text_ids(fmt.text.replace("{system}", system).replace("{question}", question))


# ``repeats`` is not used: greedy, one call each
def plan(spec: TemplateSpec, renderer: Renderer, out: Plan, repeats: int, start: int = 0) -> None:
    """Per question every format once, the order of the formats rotated from question to question."""
    steps = []
    for qi, q in enumerate(spec.questions):
        for fmt in rotated(spec.formats, qi + start):
            key = out.add_prompt(render(fmt, spec.system, q.question, renderer))
            steps.append(
                Step(
                    workload=spec.name,
                    kind="template",
                    mode=fmt.name,
                    case=f"q={qi}",
                    prompt=key,
                    max_new_tokens=spec.max_new_tokens,
                    temperature=0.0,
                    answer=q.answer,
                )
            )
    block = spec.name
    out.groups.append(Group(block=block, steps=[steps[0]], warmup=True))
    out.groups.extend(Group(block=block, steps=[s]) for s in steps)
    if spec.attention_probe:
        chat = next((f for f in spec.formats if f.text is None), TemplateFormat(name="chat_template"))
        key = out.add_prompt(render(chat, spec.system, spec.questions[0].question, renderer))
        probe = Step(
            workload=spec.name,
            kind="template",
            mode="attention",
            case="q=0",
            prompt=key,
            max_new_tokens=1,
            temperature=0.0,
            want_attentions=True,
            needs=["attentions"],
        )
        out.groups.append(Group(block=f"{spec.name}/attention", steps=[probe]))


def score_output(step: Step, output: Any) -> dict[str, Any]:
    """Record fields of a finished template call: ``clean`` where the question has a short answer."""
    return {} if step.answer is None else {"clean": score(output.text, step.answer, output.finish_reason)}


KIND = Kind("template", TemplateSpec, plan, score=score_output, order=40)
