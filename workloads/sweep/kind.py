"""Length sweep: prompts of exactly N tokens (cut from a filler text or file), prefill then greedy decode.

EOS is ignored so every call decodes the same number of tokens. Every request starts from an
empty prefix cache: sweep prompts share prefixes with each other and with their own warm-up.
The warm-ups of every N come first; then each repeat runs every N once, in a rotated order.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from llm_call_anatomy.contract.chat import Renderer
from llm_call_anatomy.contract.plan import Group, Plan, Step
from llm_call_anatomy.workloads.kinds import FileRef, Kind
from llm_call_anatomy.workloads.plan import filler_ids, rotated
from llm_call_anatomy.workloads.spec import _Strict, mistake, no_repeats


# --- the file format -----------------------------------------------------------------
class SweepSpec(_Strict):
    name: str = Field(min_length=1)
    kind: Literal["sweep"]
    lengths: list[Annotated[int, Field(ge=1)]] = Field(min_length=1)
    decode_tokens: int = Field(64, ge=2)
    warmup: int = Field(1, ge=0)
    filler: str | None = Field(None, min_length=1)
    filler_file: str | None = Field(
        None, min_length=1, description="text file, relative to the workload file"
    )

    @model_validator(mode="after")
    def _one_filler(self) -> SweepSpec:
        if (self.filler is None) == (self.filler_file is None):
            raise mistake("a sweep needs exactly one of filler, filler_file")
        no_repeats(self.lengths, "lengths")
        return self


def plan(spec: SweepSpec, renderer: Renderer, out: Plan, repeats: int, start: int = 0) -> None:
    """One prompt per length, each a prefix of the filler's tokens: the warm-up groups, then every repeat's
    groups of one request each, the lengths rotated by repeat and engine start so no length always runs
    first."""
    if spec.filler is None:
        raise ValueError(
            f"sweep {spec.name!r}: filler_file not loaded (read the file with workloads.read_workload_file)"
        )
    ids = filler_ids(spec.filler, renderer, max(spec.lengths))
    keys = {n: out.add_prompt(ids[:n]) for n in spec.lengths}

    def step(n: int, rep: int) -> Step:
        return Step(
            workload=spec.name,
            kind="sweep",
            mode="greedy",
            case=f"N={n}",
            prompt=keys[n],
            max_new_tokens=spec.decode_tokens,
            rep=rep,
            temperature=0.0,
            ignore_eos=True,
        )

    if spec.warmup:
        for n in spec.lengths:
            out.groups.append(
                Group(
                    block=f"{spec.name}/N={n}", steps=[step(n, -1) for _ in range(spec.warmup)], warmup=True
                )
            )
    for rep in range(repeats):
        out.groups.extend(
            Group(block=f"{spec.name}/N={n}", steps=[step(n, rep)])
            for n in rotated(spec.lengths, rep + start)
        )


def with_files(spec: SweepSpec, loaded: str | None, ctx: object) -> list[SweepSpec]:
    """The filler file's text as the sweep's ``filler``."""
    return [
        spec.model_copy(update={"filler": loaded})
        if spec.filler_file is not None and loaded is not None
        else spec
    ]


KIND = Kind(
    "sweep",
    SweepSpec,
    plan,
    repeated=True,
    timing_only=True,
    files=(FileRef(("filler_file",)),),
    with_files=with_files,
    order=20,
)
