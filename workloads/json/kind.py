"""JSON extraction: log line in, a JSON object out; prompt modes x temperatures, scored strictly.

``valid_json``: the reply parses with ``json.loads`` as it is (no fence stripping) and validates
against the workload's JSON Schema (exact keys, right types, enum). ``correct``: it is valid and
equals the case's expected values, where given (form vs truth). A mode with ``grammar: true``
asks the backend to constrain decoding to the schema.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, ConfigDict, Field, field_validator, model_validator

from llm_call_anatomy.contract.chat import Renderer
from llm_call_anatomy.contract.plan import Group, Plan, Step
from llm_call_anatomy.workloads.kinds import Kind, Override
from llm_call_anatomy.workloads.plan import call_seed, rotated
from llm_call_anatomy.workloads.spec import _Strict, check_json_schema, mistake, no_repeats


# --- the file format -----------------------------------------------------------------
class JsonMode(_Strict):
    name: str = Field(min_length=1)
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
    name: str = Field(min_length=1)
    kind: Literal["json"]
    max_new_tokens: int = Field(64, ge=1)
    top_p: float = Field(0.95, gt=0, le=1)
    temperatures: list[Annotated[float, Field(ge=0)]] = Field(min_length=1)
    calls_per_temperature: int = Field(16, ge=1)
    top_logprobs: int = Field(10, ge=0)
    modes: list[JsonMode] = Field(min_length=1)
    json_schema: Annotated[dict[str, Any], AfterValidator(check_json_schema)] = Field(alias="schema")
    cases: list[JsonCase] = Field(min_length=1)

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    @model_validator(mode="after")
    def _no_repeats(self) -> JsonSpec:
        no_repeats(self.temperatures, "temperatures")
        no_repeats(self.modes, "modes", "name")
        return self

    @model_validator(mode="after")
    def _expected_fits_schema(self) -> JsonSpec:
        import jsonschema

        check = jsonschema.validators.validator_for(self.json_schema)(self.json_schema)
        for i, case in enumerate(self.cases):
            error = (
                None
                if case.expected is None
                else jsonschema.exceptions.best_match(check.iter_errors(case.expected))
            )
            if error is not None:
                reason = f"expected values do not validate against the schema: {error.message}"
                raise mistake(reason, ["cases", i, "expected", *error.path])
        return self


def score(text: str, schema: dict[str, Any], expected: dict[str, Any] | None) -> tuple[bool, bool | None]:
    """(valid_json, correct); correct is None when the case has no expected values."""
    import jsonschema

    try:
        value = json.loads(text)
        jsonschema.validate(value, schema)
        valid = True
    except (ValueError, jsonschema.ValidationError):
        valid, value = False, None
    correct = None if expected is None else (valid and value == expected)
    return valid, correct


# ``repeats`` is not used: calls are fixed (``--repeats R`` given caps them: the --json-calls override)
def plan(spec: JsonSpec, renderer: Renderer, out: Plan, repeats: int, start: int = 0) -> None:
    """Warm-ups of every mode first; then, per temperature and call, every mode once, in an order
    rotated from call to call (the grammar cost is a difference between modes: drift must not
    land on one of them)."""
    steps_of: dict[str, Any] = {}
    for mode in spec.modes:
        keys = [
            out.add_prompt(
                renderer.chat_ids([{"role": "user", "content": mode.prompt.replace("{input}", c.input)}])
            )
            for c in spec.cases
        ]
        needs = ["grammar"] if mode.grammar else []

        def step(
            i: int,
            t: float,
            rep: int,
            *,
            top_logprobs: int = 0,
            mode_name: str = mode.name,
            keys: list[str] = keys,
            grammar: bool = mode.grammar,
            needs: list[str] = needs,
        ) -> Step:
            """The step of call ``i`` at temperature ``t`` for this mode: the cases taken in turn, the spec's
            top_p only when sampling, and a seed from (workload, mode, case, rep, temperature) so that every
            backend gets the same seed for the same call. The mode's fields are bound as defaults because this
            closure is made once per mode in a loop."""
            c = i % len(spec.cases)
            return Step(
                workload=spec.name,
                kind="json",
                mode=mode_name,
                case=f"case={c}",
                prompt=keys[c],
                max_new_tokens=spec.max_new_tokens,
                rep=rep,
                temperature=t,
                top_p=spec.top_p if t > 0 else 1.0,
                json_schema=spec.json_schema,
                top_logprobs=top_logprobs,
                expected=spec.cases[c].expected,
                seed=call_seed(spec.name, mode_name, c, rep, t),
                grammar=grammar,
                needs=list(needs),
            )

        steps_of[mode.name] = step
        # Warm-up in the shapes the timed calls take: step-0 top-k logprobs and a sampled call; an engine
        # compiles a kernel on the first of each (vLLM 0.26 on an H200: +260 ms and +115 ms, once).
        warm = [step(0, 0.0, -1, top_logprobs=spec.top_logprobs)]
        sampled = [t for t in spec.temperatures if t > 0]
        if sampled:
            warm.append(step(1, sampled[0], -1))
        out.groups.append(Group(block=f"{spec.name}/{mode.name}", steps=warm, warmup=True))
    call = 0
    for t_index, t in enumerate(spec.temperatures):
        for i in range(spec.calls_per_temperature):
            first = t_index == 0 and i == 0  # one call per mode records the step-0 candidates
            for name in rotated([m.name for m in spec.modes], call + start):
                s = steps_of[name](i, t, i // len(spec.cases), top_logprobs=spec.top_logprobs if first else 0)
                out.groups.append(Group(block=f"{spec.name}/{name}", steps=[s]))
            call += 1


def score_output(step: Step, output: Any) -> dict[str, Any]:
    """Record fields of a finished JSON call: ``valid_json``, ``correct`` and whether a grammar constrained
    it."""
    valid, correct = score(output.text, step.json_schema or {}, step.expected)
    return {"valid_json": valid, "correct": correct, "grammar": step.grammar}


def parse_temperatures(text: str) -> list[float]:
    """``--json-temperatures``: distinct numbers >= 0 (ValueError, one line, otherwise)."""
    try:
        values = [float(t) for t in text.split(",") if t.strip()]
    except ValueError:
        values = []
    if not values or min(values) < 0 or len(set(values)) != len(values):
        raise ValueError(f"--json-temperatures {text!r}: expected distinct numbers >= 0, e.g. 0,1.0")
    return values


KIND = Kind(
    "json",
    JsonSpec,
    plan,
    score=score_output,
    overrides=(
        Override(
            "--json-calls", lambda n: {"calls_per_temperature": n}, repeats_field="calls_per_temperature"
        ),
        Override("--json-temperatures", lambda text: {"temperatures": parse_temperatures(text)}),
    ),
    order=30,
)
