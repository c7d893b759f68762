"""The body of one streamed ``completions`` request, in each form a server may take (:data:`FORMS`).

Best first: ``token-ids+extensions`` (vLLM and SGLang: the plan's ids as the prompt, plus
``return_token_ids``, ``ignore_eos`` and, for vLLM's log-probs, ``return_tokens_as_token_ids``),
``token-ids`` (the standard fields, the prompt as ids), ``text`` (the ids decoded: a generic server
that rejects id prompts). The chat/completions body (``--endpoint chat``) is ``chat.py``'s.

How a request's ``ignore_eos`` goes out (:func:`ignore_eos_fields`, the backend's ``ignore_eos_via``, in
env.json): vLLM's and SGLang's ``ignore_eos`` extension, or ``transformers serve``'s ``generation_config``
field (5.17 and 5.19 alike: a JSON string its handler builds a fresh ``GenerationConfig`` from, whose
``eos_token_id`` goes with the request to the continuous-batching manager's ``add_request``; -1 there is no
EOS at all, as ``RequestState`` keeps only ids >= 0). A generic server is sent neither (it rejects unknown
fields) and may end an answer at EOS: the answer check counts that as a contradiction.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from llm_call_anatomy.contract.adapter import Request

# How prompts are sent, best first; a generic server is moved down on its first rejection.
FORMS = ("token-ids+extensions", "token-ids", "text")

# The field a server is told to ignore EOS by; None: it has none (a generic server).
IgnoreEosVia = Literal["ignore_eos", "generation_config"]


def ignore_eos_fields(request: Request, via: IgnoreEosVia | None) -> dict[str, Any]:
    """The ``extra_body`` fields that make the server generate past EOS under ``request.ignore_eos``.
    ``generation_config``: no EOS (-1), and sampling as the request says (``do_sample``: the server's own
    config, replaced by this one, is not read; temperature and top_p come from the body as always)."""
    if not request.ignore_eos or via is None:
        return {}
    if via == "ignore_eos":
        return {"ignore_eos": True}
    return {"generation_config": json.dumps({"eos_token_id": -1, "do_sample": request.temperature > 0})}


def sampling_fields(request: Request) -> dict[str, Any]:
    """The streamed-request fields every body shares (completions, chat, the lean load client's): the token
    budget, sampling (``top_p`` only when sampling), the seed, and usage in the last chunk."""
    fields: dict[str, Any] = {
        "max_tokens": request.max_new_tokens,
        "temperature": request.temperature,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if request.temperature > 0:
        fields["top_p"] = request.top_p
    if request.seed is not None:
        fields["seed"] = request.seed
    return fields


def response_format(schema: dict[str, Any]) -> dict[str, Any]:
    """The OpenAI ``response_format`` asking for JSON that follows ``schema`` (strict)."""
    return {"type": "json_schema", "json_schema": {"name": "output", "schema": schema, "strict": True}}


def completions_body(
    request: Request,
    form: str,
    served_model: str | None,
    flavor: str | None,
    tokenizer: Any,
    ignore_eos_via: IgnoreEosVia | None = None,
) -> dict[str, Any]:
    """The ``completions.create`` keyword arguments of ``request`` in ``form`` (``extra_body``: the fields the
    ``openai`` client does not know, sent as they are); ``ignore_eos_via``: see :func:`ignore_eos_fields`."""
    ids = request.prompt_ids
    prompt = tokenizer.decode(ids, skip_special_tokens=False) if form == "text" else ids
    body: dict[str, Any] = {"model": served_model, "prompt": prompt, **sampling_fields(request)}
    if request.top_logprobs or request.step_logprobs:
        body["logprobs"] = max(request.top_logprobs, request.step_logprobs)
    extra: dict[str, Any] = {}
    if request.json_schema is not None:
        extra["response_format"] = response_format(request.json_schema)
    if form == FORMS[0]:
        extra["return_token_ids"] = True
        if (request.top_logprobs or request.step_logprobs) and flavor == "vllm":
            extra["return_tokens_as_token_ids"] = True  # top_logprobs keyed "token_id:N"
    extra.update(ignore_eos_fields(request, ignore_eos_via))
    if extra:
        body["extra_body"] = extra
    return body
