"""The flags that point the study at a server and pass arguments to an engine, and their checks.

    --tokenizer PATH_OR_ID        the prompts' tokenizer and chat template (a server's model name is no path)
    --served-model-name NAME      the model to ask the server for (refused in one line when it does not
                                  list it)
    --endpoint completions|chat   completions: the plan's token ids; chat: the messages, the server's template
    --engine-arg BACKEND:KEY=VALUE  passed to that backend's engine (LLM(**kw), Engine(**kw)) or server
                                  (--key value: backends/openai/servers.py engine_arg_flags); a key the
                                  harness sets itself (HARNESS_OWNED: model, port, enable_prefix_caching...)
                                  is refused naming the flag to use, and so is a NaN or infinite value

Each check raises ``UsageError`` (one line, exit 2) before anything runs. See docs/guides/servers.md.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from llm_call_anatomy.contract.columns import base_of
from llm_call_anatomy.contract.models import SHAPE, SMOLLM2, TINY
from llm_call_anatomy.harness.cli_checks import UsageError

ENDPOINTS = ("completions", "chat")
# The backends whose engine or server takes keyword arguments (the in-process engines and their servers).
# hf-cb: fields of transformers' ContinuousBatchingConfig (and attn), over LCA_HF_CB; hf-server: flags of
# `transformers serve` (cb_num_blocks, cb_max_batch_tokens, attn_implementation...). hf, hf-graphs: none.
ENGINE_ARG_BACKENDS = ("vllm", "sglang", "vllm-server", "sglang-server", "hf-cb", "hf-server")
SERVED_BACKENDS = ("openai",)  # a server the harness does not launch: its listing is checked before the run
SERVER_BACKENDS = (
    "openai",
    "vllm-server",
    "sglang-server",
    "hf-server",
)  # measured through HTTP: --endpoint chat


def add_server_args(p: argparse.ArgumentParser) -> None:
    """Add the flags that point the study at a server (``--tokenizer``, ``--served-model-name``,
    ``--endpoint``, ``--engine-arg``) to the study's parser; :func:`check_server_flags`,
    :func:`parse_engine_args` and :func:`choose_served_model` check them before anything runs."""
    p.add_argument(
        "--tokenizer",
        default=None,
        metavar="PATH_OR_ID",
        help="the prompts' tokenizer and chat template, when --model is a server's model name rather than a "
        "path or hub id (--backend openai); default: --model's",
    )
    p.add_argument(
        "--served-model-name",
        default=None,
        metavar="NAME",
        help="the model to ask the server for (--backend openai: refused when the server does not list it; "
        "default: --model when listed, else the server's only model); a launched server serves under it",
    )
    p.add_argument(
        "--endpoint",
        choices=ENDPOINTS,
        default="completions",
        help="completions (default): the plan's token ids, every backend sees the same tokens; chat: "
        "/chat/completions with the messages, the server applies its own chat template (--backend "
        "openai; workloads rendered from messages only)",
    )
    p.add_argument(
        "--engine-arg",
        action="append",
        default=[],
        metavar="BACKEND:KEY=VALUE",
        help="an engine argument for one backend, e.g. vllm:max_num_batched_tokens=16384 or "
        "vllm-server:max_num_batched_tokens=16384 (the same key for the engine and its server; VALUE "
        "as JSON where it parses, else a string); repeatable; recorded in env.json",
    )


# --- --engine-arg ----------------------------------------------------------------------------------
# Keys the harness sets itself, records and relies on: an --engine-arg naming one would override it silently
# (merged last), so it is refused, naming the flag to use (None: the harness's own, no flag sets it).
_SERVER = "the harness's own (a launched server listens on 127.0.0.1 at a port the harness picks)"
_FIGURES = "the harness's own (the figures are read from it)"
HARNESS_OWNED: dict[str, str] = {
    **dict.fromkeys(("model", "model_path", "tokenizer", "tokenizer_path"), "--model (and --tokenizer)"),
    "dtype": "--dtype",
    **dict.fromkeys(("max_model_len", "context_length"), "--max-model-len"),
    **dict.fromkeys(("tensor_parallel_size", "tp_size", "tp"), "--tp"),
    **dict.fromkeys(("data_parallel_size", "dp_size", "dp"), "--dp"),
    **dict.fromkeys(
        ("enable_prefix_caching", "no_enable_prefix_caching", "disable_radix_cache"), "--no-prefix-caching"
    ),
    "served_model_name": "--served-model-name",
    "load_format": "--random-weights",
    "device": "--device",
    **dict.fromkeys(("host", "port"), _SERVER),
    **dict.fromkeys(
        ("enable_metrics", "enable_cache_report", "enable_prompt_tokens_details", "disable_log_stats"),
        _FIGURES,
    ),
}


def finite(value: Any) -> bool:
    """No NaN or infinity anywhere in a parsed value (JSON's parser takes NaN and Infinity)."""
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(finite(v) for v in value.values())
    if isinstance(value, list):
        return all(finite(v) for v in value)
    return True


def parse_engine_args(items: list[str], names: list[str]) -> dict[str, dict[str, Any]]:
    """``BACKEND:KEY=VALUE`` items -> {backend: {key: value}}; the backend must be one of ``names`` (a column
    of --backend, or the base backend of one: ``vllm-server`` reaches every ``vllm-server@...`` column)."""
    out: dict[str, dict[str, Any]] = {}
    for item in items:
        backend, sep, assignment = item.partition(":")
        key, eq, text = assignment.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or not eq or not key or not key.isidentifier():
            raise UsageError(
                f"--engine-arg {item!r}: expected BACKEND:KEY=VALUE, e.g. vllm:max_num_batched_tokens=16384"
            )
        if base_of(backend) not in ENGINE_ARG_BACKENDS:
            check_engine_setting(f"--engine-arg {item!r}", backend, key, None)  # says which take them
        if backend not in names and backend not in {base_of(n) for n in names}:
            raise UsageError(f"--engine-arg {item!r}: {backend} is not in --backend ({', '.join(names)})")
        value = parse_value(text)
        check_engine_setting(f"--engine-arg {item!r}", backend, key, value, text)
        out.setdefault(backend, {})[key] = value
    return out


def check_engine_setting(what: str, backend: str, key: str, value: Any, text: str | None = None) -> None:
    """The one rule for an engine setting, whoever gives it (``--engine-arg``, a variant of issue 41): the
    backend (a column's base) takes engine arguments, the key is not one the harness sets itself
    (``HARNESS_OWNED``: refused naming the flag to use), and the value is finite; ``UsageError`` (one line)
    beginning with ``what`` otherwise."""
    if base_of(backend) not in ENGINE_ARG_BACKENDS:
        raise UsageError(
            f"{what}: {backend!r} takes no engine arguments (those that do: {', '.join(ENGINE_ARG_BACKENDS)})"
        )
    if key in HARNESS_OWNED:
        owner = HARNESS_OWNED[key]
        use = f"use {owner}" if owner.startswith("--") else f"it is {owner}"
        raise UsageError(f"{what}: {key} is a setting the harness records and relies on: {use}")
    if not finite(value):
        raise UsageError(f"{what}: {text if text is not None else value} is not a finite number")


def parse_value(text: str) -> Any:
    """JSON where it parses (16384, 0.8, true, null, {"a": 1}), else the text itself (fp8, xgrammar)."""
    try:
        return json.loads(text)
    except ValueError:
        return text


# --- --tokenizer, --served-model-name, --endpoint ------------------------------------------------------
def check_server_flags(args: argparse.Namespace, names: list[str]) -> None:
    """What can be said from the flags alone (of each column's base backend)."""
    names = [base_of(n) for n in names]
    if args.endpoint == "chat" and not set(names) <= set(SERVER_BACKENDS):
        raise UsageError(
            f"--endpoint chat is for servers only ({', '.join(SERVER_BACKENDS)}): "
            f"{', '.join(n for n in names if n not in SERVER_BACKENDS)} take(s) the plan's token ids"
        )
    if args.tokenizer and not set(names) <= set(SERVED_BACKENDS):
        raise UsageError(
            "--tokenizer is for --backend openai alone (the other backends load --model's tokenizer)"
        )


def tokenizer_source(tokenizer: str) -> str:
    """A local directory as an absolute path (the children run elsewhere), else the hub id as given."""
    path = Path(tokenizer).expanduser()
    return os.path.abspath(path) if path.exists() else tokenizer


def check_chat_prompts(plan, renderer) -> dict[str, dict[str, Any]]:
    """``--endpoint chat``: every prompt of the plan rendered from messages, or one line naming the workloads
    that send exact token ids or raw text (the sweep's exact-length prompts, the template formats); the
    plan's messages by prompt key (written as ``chat_prompts.json``)."""
    raw = sorted({s.workload for g in plan.groups for s in g.steps if s.prompt not in renderer.chats})
    if raw:
        chat = sorted({s.workload for g in plan.groups for s in g.steps} - set(raw))
        raise UsageError(
            f"--endpoint chat sends messages, and {', '.join(raw)} need(s) exact token ids or raw-text "
            "prompts (a sweep, the template formats, a fixed-shape load): leave them out "
            f"({'these can run: ' + ', '.join(chat) if chat else 'e.g. --workloads conversation,json'})"
        )
    return {key: renderer.chats[key] for key in plan.prompts}


def served_models(base_url: str, api_key_env: str | None, timeout_s: float = 10.0) -> list[str] | None:
    """The model ids the server lists at ``/models``; None when it cannot be asked (the run says why)."""
    return listing(base_url, api_key_env, timeout_s)[0]


def listing(base_url: str, api_key_env: str | None, timeout_s: float = 10.0) -> tuple[list[str] | None, str]:
    """(the model ids the server lists at ``/models``, ""), or (None, why it could not be asked)."""
    headers = (
        {"Authorization": f"Bearer {os.environ[api_key_env]}"}
        if api_key_env and os.environ.get(api_key_env)
        else {}
    )
    req = urllib.request.Request(base_url.rstrip("/") + "/models", headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as resp:
            return [str(m["id"]) for m in json.loads(resp.read())["data"]], ""
    except urllib.error.HTTPError as exc:
        return None, f"HTTP {exc.code}"
    except urllib.error.URLError as exc:
        return None, str(exc.reason)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return None, f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def check_served_name(args: argparse.Namespace, listed: list[str], url: str) -> str:
    """Refuse a ``--served-model-name`` that the listing at ``url`` lacks; return what a refusal shows of the
    listing (its first ten ids)."""
    shown = ", ".join(listed[:10]) + (" ..." if len(listed) > 10 else "")
    if args.served_model_name and args.served_model_name not in listed:
        raise UsageError(
            f"--served-model-name {args.served_model_name}: {url} does not list it "
            f"(it lists: {shown or 'nothing'})"
        )
    return shown


def not_listed(args: argparse.Namespace, url: str, shown: str) -> UsageError:
    """The refusal of a ``--model`` the listing at ``url`` does not name, among several."""
    return UsageError(
        f"--model {args.model} is not among the models {url} lists ({shown or 'none'}): "
        "pass --served-model-name NAME"
    )


def ask_server(args: argparse.Namespace, names: list[str]) -> None:
    """``--backend openai --base-url URL``: the server's ``/models`` asked first, before the tokenizer loads
    and the plan renders (seconds, not the minute a plan can take): a server that does not answer, a
    ``--served-model-name`` it does not list, or a ``--model`` it does not list among several (and that names
    no local folder, whose path may be the served name) is refused in one line. What needs the model's
    resolved path is checked again by :func:`choose_served_model` once it is known."""
    if not set(names) & set(SERVED_BACKENDS) or not args.base_url:
        return
    listed, why = listing(args.base_url, args.api_key_env)
    url = args.base_url.rstrip("/") + "/models"
    if listed is None:
        raise UsageError(
            f"--base-url {args.base_url}: the server did not answer at {url} ({why}): start it, or check "
            "the URL"
        )
    shown = check_served_name(args, listed, url)
    if args.served_model_name:
        return
    local = Path(args.model).expanduser()
    if args.model in listed or len(listed) == 1 or args.model in (TINY, SMOLLM2, SHAPE) or local.exists():
        return
    raise not_listed(args, url, shown)


def choose_served_model(args: argparse.Namespace, names: list[str], model_path: str) -> str | None:
    """``--backend openai``: the served name to ask for, checked against the server's listing before the run.
    --served-model-name must be listed; else --model (or its path) when listed, else the only model listed;
    several and none of them named: one line asking for --served-model-name."""
    if not {base_of(n) for n in names} & set(SERVED_BACKENDS) or not args.base_url:
        return args.served_model_name
    listed = served_models(args.base_url, args.api_key_env)
    if listed is None:
        return args.served_model_name  # unreachable now: the openai column records why
    shown = check_served_name(args, listed, f"{args.base_url}/models")
    if args.served_model_name:
        return args.served_model_name
    for candidate in (args.model, model_path):
        if candidate in listed:
            return candidate
    if len(listed) == 1:
        return listed[0]
    raise not_listed(args, f"{args.base_url}/models", shown)
