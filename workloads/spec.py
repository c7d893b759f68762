"""The workload file format: pydantic models of the four kinds of workload.

A workload file is YAML with a top-level ``workloads:`` list; each entry has a ``name`` and a
``kind`` (``conversation``, ``sweep``, ``json``, ``template``). The built-in workloads are files
in this format (``workloads/builtin/``), so user files and built-ins take one code path.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


# --- conversation -----------------------------------------------------------------------
class Turn(_Strict):
    user: str
    assistant: str = Field(description="the fixed reply written into the history for later turns")


class ConversationSpec(_Strict):
    name: str
    kind: Literal["conversation"]
    system: str | None = None
    tools: list[dict[str, Any]] | None = None
    max_new_tokens: int = Field(4, ge=1)
    turns: list[Turn] = Field(min_length=1)


# --- sweep ------------------------------------------------------------------------------
class SweepSpec(_Strict):
    name: str
    kind: Literal["sweep"]
    lengths: list[Annotated[int, Field(ge=1)]] = Field(min_length=1)
    decode_tokens: int = Field(64, ge=2)
    warmup: int = Field(1, ge=0)
    filler: str = Field(min_length=1)


# --- json -------------------------------------------------------------------------------
class JsonMode(_Strict):
    name: str
    prompt: str
    grammar: bool = False

    @field_validator("prompt")
    @classmethod
    def _has_input(cls, v: str) -> str:
        if "{input}" not in v:
            raise ValueError("prompt must contain {input}")
        return v


class JsonCase(_Strict):
    input: str
    expected: dict[str, Any] | None = None


class JsonSpec(_Strict):
    name: str
    kind: Literal["json"]
    max_new_tokens: int = Field(64, ge=1)
    top_p: float = Field(0.95, gt=0, le=1)
    temperatures: list[Annotated[float, Field(ge=0)]] = Field(min_length=1)
    calls_per_temperature: int = Field(16, ge=1)
    top_logprobs: int = Field(10, ge=0)
    modes: list[JsonMode] = Field(min_length=1)
    json_schema: dict[str, Any] = Field(alias="schema")
    cases: list[JsonCase] = Field(min_length=1)

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    @field_validator("json_schema")
    @classmethod
    def _valid_schema(cls, v: dict[str, Any]) -> dict[str, Any]:
        import jsonschema

        try:
            jsonschema.validators.validator_for(v).check_schema(v)
        except jsonschema.SchemaError as exc:
            raise ValueError(f"not a valid JSON Schema: {exc.message}") from exc
        return v


# --- template ---------------------------------------------------------------------------
class Question(_Strict):
    question: str
    answer: str


class TemplateFormat(_Strict):
    name: str
    text: str | None = Field(None, description="format string with {system} and {question}; none = chat template")


class TemplateSpec(_Strict):
    name: str
    kind: Literal["template"]
    max_new_tokens: int = Field(32, ge=1)
    system: str
    attention_probe: bool = True
    questions: list[Question] = Field(min_length=1)
    formats: list[TemplateFormat] = Field(min_length=1)


WorkloadSpec = Annotated[
    ConversationSpec | SweepSpec | JsonSpec | TemplateSpec, Field(discriminator="kind")
]


class WorkloadFile(_Strict):
    workloads: list[WorkloadSpec] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique_names(self) -> WorkloadFile:
        names = [w.name for w in self.workloads]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"workload names must be unique, repeated: {', '.join(dupes)}")
        return self
