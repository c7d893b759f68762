"""Conversation workload: a multi-turn chat replayed with a full re-prefill and with prefix reuse.

Each turn's prompt is the whole history (fixed assistant replies) rendered by the chat
template. The plan records, per turn, how many tokens it shares with the previous turn's prompt
(token by token) and where the prefix breaks: with a Qwen3-style template the previous prompt
ends in ``<think>\\n\\n</think>\\n\\n`` and the history rewrites that turn without it.
"""

from __future__ import annotations

from harness.chat import Renderer, common_prefix_len
from workloads.plan import Group, Plan, Step
from workloads.spec import ConversationSpec

MODES = ("full", "cached")


def render_turns(spec: ConversationSpec, renderer: Renderer) -> list[list[int]]:
    """The prompt of every turn as token ids."""
    history = [{"role": "system", "content": spec.system}] if spec.system else []
    prompts = []
    for turn in spec.turns:
        history = [*history, {"role": "user", "content": turn.user}]
        prompts.append(renderer.chat_ids(history, spec.tools))
        history = [*history, {"role": "assistant", "content": turn.assistant}]
    return prompts


def plan(spec: ConversationSpec, renderer: Renderer, out: Plan, repeats: int) -> None:
    prompts = render_turns(spec, renderer)
    keys = [out.add_prompt(p) for p in prompts]
    shared = [None] + [common_prefix_len(a, b) for a, b in zip(prompts, prompts[1:], strict=False)]
    breaks = [None] + [renderer.prefix_break(a, b) for a, b in zip(prompts, prompts[1:], strict=False)]

    def turn_steps(mode: str, rep: int) -> list[Step]:
        return [
            Step(
                workload=spec.name,
                kind="conversation",
                mode=mode,
                case=f"turn={i + 1}",
                prompt=keys[i],
                max_new_tokens=spec.max_new_tokens,
                rep=rep,
                turn=i + 1,
                temperature=0.0,
                reuse_prefix=mode == "cached",
                shared_prefix_tokens=shared[i],
                prefix_break=breaks[i],
                needs=["prefix_cache"] if mode == "cached" else [],
            )
            for i in range(len(prompts))
        ]

    for mode in MODES:
        block = f"{spec.name}/{mode}"
        out.groups.append(Group(block=block, steps=turn_steps(mode, rep=-1), warmup=True, reset_cache=True))
        out.groups.extend(Group(block=block, steps=turn_steps(mode, rep), reset_cache=True) for rep in range(repeats))
