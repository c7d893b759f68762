"""The body of one streamed ``chat/completions`` request (``--endpoint chat``): the prompt's messages
and tools as the workload wrote them, sampled as the completions body is (bodies.py).

The server renders the messages with its own chat template; vLLM and SGLang are asked to render with
thinking off (``chat_template_kwargs``), as the harness does (harness/chat.py), and vLLM to return the
generated ids (``return_token_ids``). A generic server gets the standard fields only.
"""

from __future__ import annotations

from typing import Any

from llm_call_anatomy.backends.openai.bodies import (
    IgnoreEosVia,
    ignore_eos_fields,
    response_format,
    sampling_fields,
)
from llm_call_anatomy.backends.openai.metrics import FLAVORS
from llm_call_anatomy.contract.adapter import Request


def chat_body(
    request: Request,
    chat: dict[str, Any],
    served_model: str | None,
    flavor: str | None,
    ignore_eos_via: IgnoreEosVia | None = None,
) -> dict[str, Any]:
    """The ``chat.completions.create`` keyword arguments of ``request``, with ``chat`` (the prompt's messages
    and tools) in place of its token ids; ``ignore_eos_via`` as in ``bodies.ignore_eos_fields``."""
    body: dict[str, Any] = {"model": served_model, "messages": chat["messages"], **sampling_fields(request)}
    if chat.get("tools"):
        body["tools"] = chat["tools"]
    if request.json_schema is not None:
        body["response_format"] = response_format(request.json_schema)
    extra: dict[str, Any] = {}
    if flavor in FLAVORS:
        extra["chat_template_kwargs"] = {"enable_thinking": False}
    extra.update(ignore_eos_fields(request, ignore_eos_via))
    if flavor == "vllm":
        extra["return_token_ids"] = True
    if extra:
        body["extra_body"] = extra
    return body
