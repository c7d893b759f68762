"""The body of one streamed ``completions`` request, in each form a server may take (:data:`FORMS`).

Best first: ``token-ids+extensions`` (vLLM and SGLang: the plan's ids as the prompt, plus
``return_token_ids``, ``ignore_eos`` and, for vLLM's log-probs, ``return_tokens_as_token_ids``),
``token-ids`` (the standard fields, the prompt as ids), ``text`` (the ids decoded: a generic server
that rejects id prompts). The chat/completions body (``--endpoint chat``) is ``chat.py``'s.
"""

from __future__ import annotations

from typing import Any

from backends.base import Request

# How prompts are sent, best first; a generic server is moved down on its first rejection.
FORMS = ("token-ids+extensions", "token-ids", "text")


def completions_body(
    request: Request, form: str, served_model: str | None, flavor: str | None, tokenizer: Any
) -> dict[str, Any]:
    """The ``completions.create`` keyword arguments of ``request`` in ``form`` (``extra_body``: the fields the
    ``openai`` client does not know, sent as they are)."""
    ids = request.prompt_ids
    prompt = tokenizer.decode(ids, skip_special_tokens=False) if form == "text" else ids
    body: dict[str, Any] = {
        "model": served_model,
        "prompt": prompt,
        "max_tokens": request.max_new_tokens,
        "temperature": request.temperature,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if request.temperature > 0:
        body["top_p"] = request.top_p
    if request.seed is not None:
        body["seed"] = request.seed
    if request.top_logprobs or request.step_logprobs:
        body["logprobs"] = max(request.top_logprobs, request.step_logprobs)
    extra: dict[str, Any] = {}
    if request.json_schema is not None:
        extra["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "output", "schema": request.json_schema, "strict": True},
        }
    if form == FORMS[0]:
        extra["return_token_ids"] = True
        if request.ignore_eos:
            extra["ignore_eos"] = True
        if (request.top_logprobs or request.step_logprobs) and flavor == "vllm":
            extra["return_tokens_as_token_ids"] = True  # top_logprobs keyed "token_id:N"
    if extra:
        body["extra_body"] = extra
    return body
