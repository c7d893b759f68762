"""JSON extraction: log line in, a JSON object out; prompt modes x temperatures, scored strictly.

``valid_json``: the reply parses with ``json.loads`` as it is (no fence stripping) and validates
against the workload's JSON Schema (exact keys, right types, enum). ``correct``: it is valid and
equals the case's expected values, where given (form vs truth). A mode with ``grammar: true``
asks the backend to constrain decoding to the schema.
"""

from __future__ import annotations

import json
from typing import Any

from harness.chat import Renderer
from workloads.plan import Group, Plan, Step, call_seed
from workloads.spec import JsonSpec


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


def plan(spec: JsonSpec, renderer: Renderer, out: Plan, repeats: int) -> None:  # noqa: ARG001 - calls are fixed
    for mode in spec.modes:
        keys = [
            out.add_prompt(renderer.chat_ids([{"role": "user", "content": mode.prompt.replace("{input}", c.input)}]))
            for c in spec.cases
        ]
        block = f"{spec.name}/{mode.name}"
        needs = ["grammar"] if mode.grammar else []

        def step(
            i: int, t: float, rep: int, *, top_logprobs: int = 0, mode_name: str = mode.name, keys: list[str] = keys, **kw: Any
        ) -> Step:
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
                **kw,
            )

        grammar = {"grammar": mode.grammar, "needs": needs}
        # Warm-up in the shapes the timed calls take: step-0 top-k logprobs and a sampled call; an engine
        # compiles a kernel on the first of each (vLLM 0.26 on an H200: +260 ms and +115 ms, once).
        warm = [step(0, 0.0, -1, top_logprobs=spec.top_logprobs, **grammar)]
        sampled = [t for t in spec.temperatures if t > 0]
        if sampled:
            warm.append(step(1, sampled[0], -1, **grammar))
        out.groups.append(Group(block=block, steps=warm, warmup=True))
        for t_index, t in enumerate(spec.temperatures):
            for i in range(spec.calls_per_temperature):
                first = t_index == 0 and i == 0  # one call per mode records the step-0 candidates
                s = step(i, t, i // len(spec.cases), top_logprobs=spec.top_logprobs if first else 0, **grammar)
                out.groups.append(Group(block=block, steps=[s]))
