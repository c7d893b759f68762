"""Prompt rendering shared by every backend: chat template -> token ids, and prefix helpers.

The harness renders every prompt once, here, with the model's own tokenizer and chat template
(thinking off, as in the seed), and hands token ids to the backends, so HF, vLLM and SGLang
see identical tokens. It also keeps, per prompt rendered from messages, the messages themselves
(``chats``): what ``--endpoint chat`` sends instead of the ids, for the server's own chat template.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

CHAT_PROMPTS = "chat_prompts.json"  # RUN_DIR/: prompt key -> {messages, tools}, written with --endpoint chat


def prompt_key(ids: list[int]) -> str:
    """The plan's key of a prompt (``Plan.prompts``, ``chat_prompts.json``): a hash of its token ids."""
    text = "[" + ", ".join(map(str, ids)) + "]"  # json.dumps(ids), the key's text from the start, faster
    return hashlib.sha1(text.encode()).hexdigest()[:16]


def common_prefix_len(a: list[int], b: list[int]) -> int:
    """Number of leading tokens ``a`` and ``b`` share, compared token by token."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


class NoChatTemplate(ValueError):
    """The tokenizer has no chat template, and a workload renders its prompts with one."""


@dataclass
class Renderer:
    tokenizer: Any  # a transformers tokenizer
    # prompt_key(ids) -> {"messages", "tools"} of every prompt rendered from messages (--endpoint chat)
    chats: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False)

    def chat_ids(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
    ) -> list[int]:
        text = self.chat_text(messages, tools)
        ids = self.text_ids(text)
        self.chats[prompt_key(ids)] = {"messages": messages, "tools": tools}
        return ids

    def chats_ids(
        self, conversations: list[list[dict[str, Any]]], tools: list[dict[str, Any]] | None = None
    ) -> list[list[int]]:
        """:meth:`chat_ids` of several message lists, tokenized in one batch (the fast tokenizer spreads a
        batch over the machine's cores: a load plan renders tens of thousands of histories)."""
        texts = [self.chat_text(messages, tools) for messages in conversations]
        batch = self.texts_ids(texts)
        for messages, ids in zip(conversations, batch, strict=True):
            self.chats[prompt_key(ids)] = {"messages": messages, "tools": tools}
        return batch

    def chat_text(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        *,
        generation_prompt: bool = True,
    ) -> str:
        """The messages (and tools) rendered to text by the tokenizer's chat template, thinking off and the
        assistant's generation prompt appended unless ``generation_prompt`` is False. A tokenizer without a
        template (a base model) raises :class:`NoChatTemplate`, saying what to use instead."""
        if not getattr(self.tokenizer, "chat_template", None):
            raise NoChatTemplate(
                "its tokenizer has no chat template, and the conversation, json and template "
                "workloads render their prompts with one (a base model? use its instruction-tuned "
                "version, or add a chat_template to its tokenizer_config.json)"
            )
        return self.tokenizer.apply_chat_template(
            messages,
            tools=tools,
            tokenize=False,
            add_generation_prompt=generation_prompt,
            enable_thinking=False,
        )

    def text_ids(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def texts_ids(self, texts: list[str]) -> list[list[int]]:
        """:meth:`text_ids` of each text, in one tokenizer call (no padding: each its own length)."""
        if not texts:
            return []
        return [list(ids) for ids in self.tokenizer(texts, add_special_tokens=False)["input_ids"]]

    def token_texts(self, ids: list[int]) -> list[str]:
        return [self.tokenizer.decode([i]) for i in ids]

    def prefix_break(
        self, previous: list[int], current: list[int], context: int = 4
    ) -> dict[str, Any] | None:
        """Where ``current`` stops extending ``previous``: position and the tokens around it."""
        shared = common_prefix_len(previous, current)
        if shared == len(previous):
            return None
        lo = max(0, shared - context)
        return {
            "position": shared,
            "previous_prompt_tokens": len(previous),
            "tokens_lost": len(previous) - shared,
            "previous": self.token_texts(previous[lo : shared + context]),
            "current": self.token_texts(current[lo : shared + context]),
            "context_start": lo,
        }
