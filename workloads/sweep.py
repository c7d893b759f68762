"""Length sweep: prompts of exactly N tokens (cut from a filler text or file), prefill then greedy decode.

EOS is ignored so every call decodes the same number of tokens. Every request starts from an
empty prefix cache: sweep prompts share prefixes with each other and with their own warm-up.
"""

from __future__ import annotations

from harness.chat import Renderer
from workloads.plan import Group, Plan, Step
from workloads.spec import SweepSpec


def filler_ids(text: str, renderer: Renderer, length: int) -> list[int]:
    """At least ``length`` token ids of ``text`` repeated."""
    ids = renderer.text_ids(text)
    chunk = renderer.text_ids("\n" + text)
    while len(ids) < length:
        ids += chunk
    return ids


def plan(spec: SweepSpec, renderer: Renderer, out: Plan, repeats: int) -> None:
    if spec.filler is None:
        raise ValueError(f"sweep {spec.name!r}: filler_file not loaded (read the file with workloads.load_file)")
    ids = filler_ids(spec.filler, renderer, max(spec.lengths))
    for n in spec.lengths:
        key = out.add_prompt(ids[:n])
        block = f"{spec.name}/N={n}"

        def step(rep: int, n: int = n, key: str = key) -> Step:
            return Step(
                workload=spec.name,
                kind="sweep",
                mode="greedy",
                case=f"N={n}",
                prompt=key,
                max_new_tokens=spec.decode_tokens,
                rep=rep,
                temperature=0.0,
                ignore_eos=True,
            )

        if spec.warmup:
            out.groups.append(Group(block=block, steps=[step(-1) for _ in range(spec.warmup)], warmup=True))
        out.groups.extend(Group(block=block, steps=[step(rep)]) for rep in range(repeats))
