"""Record SGLang's raw answers on a GPU: the fixture the CI tests of the SGLang adapter read.

    PYTHONPATH=/tmp/site-sgl python benchmarks/record_sglang_fixtures.py MODEL_DIR OUT_JSON [KEY=VALUE...]

MODEL_DIR: a model directory (config + tokenizer; weights are not read: ``load_format="dummy"``)
or ``qwen3-8b-shape``. Starts the adapter's engine once (minutes) and runs, through the adapter:
a greedy request, one with the step-0 top-10 logprobs, a JSON-schema request twice (compile, then
after a flush), a two-turn chat with a shared prefix (reuse) and its second turn again after a
flush; then a public ``Engine.generate`` call, a streamed one and a raw ``flush_cache()``. Every
step's raw return value goes to OUT_JSON (rewritten after each step, so a crash keeps what ran),
with what the adapter made of it. Commit the file as ``tests/fixtures/sglang/meta_info.json``.
KEY=VALUE pairs become the adapter's ``SGLangOptions`` (``settings.options``; e.g.
``attention_backend=triton`` where FlashAttention-3 is not installed; values are JSON when they parse as
JSON; an unknown key: exit 2).
"""

from __future__ import annotations

import json
import sys
import time
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from llm_call_anatomy.contract.adapter import BackendSettings, Request  # noqa: E402
from llm_call_anatomy.contract.chat import Renderer, common_prefix_len  # noqa: E402

SCHEMA = {  # the built-in json workload's schema (workloads/json/builtin.yaml)
    "type": "object",
    "properties": {
        "service": {
            "type": "string",
            "enum": ["nginx", "postgres", "redis", "kafka", "elasticsearch", "rabbitmq", "grafana", "etcd"],
        },
        "port": {"type": "integer", "minimum": 1, "maximum": 65535},
        "healthy": {"type": "boolean"},
    },
    "required": ["service", "port", "healthy"],
    "additionalProperties": False,
}
SYSTEM = "You are an on-call SRE assistant. Reply with a single line."
LOG = "2026-11-29T03:12:40Z cache-2 redis[1]: Ready to accept connections tcp on port 6379"


def say(msg: str) -> None:
    print(f"[record] {msg}", flush=True)


def option(text: str) -> tuple[str, Any]:
    key, _, value = text.partition("=")
    try:
        return key, json.loads(value)
    except ValueError:
        return key, value


def result_summary(result: Any) -> dict[str, Any]:
    """What the adapter made of one answer, stored beside the raw response: its timings (caller's and
    engine's, and which the result uses), cache state and cached tokens, finish reason, output length and
    text, top candidates and extras."""
    out = result.output
    return {
        "ttft_ms": result.ttft_ms,
        "decode_ms_per_token": result.decode_ms_per_token,
        "e2e_ms": result.e2e_ms,
        "timing_source": result.timing_source,
        "engine_ttft_ms": result.engine_ttft_ms,
        "engine_decode_ms_per_token": result.engine_decode_ms_per_token,
        "cache_state": result.cache_state,
        "cached_tokens": out.cached_tokens,
        "finish_reason": out.finish_reason,
        "output_tokens": len(out.token_ids),
        "text": out.text,
        "prompt_ids_echoed": out.prompt_ids_used is not None,
        "top_candidates": [c.to_dict() for c in out.top_candidates] if out.top_candidates else None,
        "extra": out.extra,
    }


def main(argv: list[str]) -> int:
    """Runs the steps the module docstring lists and records them in OUT_JSON. Exit 0: every step ran; 1:
    some step failed (its traceback in ``errors``); 2: bad arguments (usage printed) or an unknown option.
    An engine that fails to start is recorded, then re-raised."""
    if len(argv) < 2 or not all("=" in a for a in argv[2:]):
        print(__doc__)
        return 2
    model_dir, out_path = argv[0], Path(argv[1])
    options = dict(option(a) for a in argv[2:])
    from llm_call_anatomy.backends.sglang.config import SGLangOptions

    unknown = sorted(set(options) - set(SGLangOptions().to_dict()))
    if unknown:
        known = ", ".join(SGLangOptions().to_dict())
        print(f"unknown option {', '.join(unknown)} (SGLangOptions has {known})")
        return 2
    if not Path(model_dir).is_dir():
        from llm_call_anatomy.harness import models

        model_dir = models.resolve(model_dir, True).path
    from transformers import AutoTokenizer

    from llm_call_anatomy.backends.sglang import SGLangBackend

    doc: dict[str, Any] = {"model_dir": model_dir, "cases": {}, "errors": {}}
    out_path.parent.mkdir(parents=True, exist_ok=True)

    def save() -> None:
        out_path.write_text(json.dumps(doc, indent=1, default=repr, ensure_ascii=False))

    renderer = Renderer(AutoTokenizer.from_pretrained(model_dir))
    plain = renderer.chat_ids(
        [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "Summarise: " + LOG}]
    )
    ask_json = renderer.chat_ids(
        [{"role": "user", "content": "Extract service, port, healthy as JSON:\n" + LOG}]
    )
    history = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "First log: " + LOG}]
    turn1 = renderer.chat_ids(history)
    history += [
        {"role": "assistant", "content": "cache-2 redis is up on 6379."},
        {"role": "user", "content": "And now?"},
    ]
    turn2 = renderer.chat_ids(history)
    shared = common_prefix_len(turn1, turn2)
    doc["turns"] = {"turn1_tokens": len(turn1), "turn2_tokens": len(turn2), "shared_prefix_tokens": shared}

    settings = BackendSettings(
        model_path=model_dir,
        model_label=model_dir,
        random_weights=True,
        max_model_len=4096,
        options=SGLangOptions(**options),
    )
    backend = SGLangBackend(settings)
    say(f"starting sglang.Engine on {model_dir} (minutes) ...")
    started = time.perf_counter()
    try:
        backend.start()
    except Exception:
        doc["errors"]["start"] = traceback.format_exc()
        save()
        raise
    doc["startup_s"] = time.perf_counter() - started
    doc["environment"] = backend.environment()
    say(
        f"started in {doc['startup_s']:.0f} s; timing=in-process-stream, engine figures "
        f"{'on (enable_metrics)' if backend.use_metrics else 'off'}"
    )
    save()

    cases: list[tuple[str, Request, int | None]] = [
        ("plain", Request(plain, max_new_tokens=16, ignore_eos=True), 0),
        ("logprobs", Request(plain, max_new_tokens=4, top_logprobs=10), 0),
        ("json_schema", Request(ask_json, max_new_tokens=64, json_schema=SCHEMA), 0),
        ("json_schema_after_flush", Request(ask_json, max_new_tokens=64, json_schema=SCHEMA), 0),
        ("turn1", Request(turn1, max_new_tokens=4, reuse_prefix=True), 0),
        ("turn2", Request(turn2, max_new_tokens=4, reuse_prefix=True), min(shared, len(turn2) - 1)),
        ("turn2_full", Request(turn2, max_new_tokens=4), 0),
    ]
    try:
        for name, request, expected_cached in cases:
            try:
                if name == "turn1":
                    backend.reset_cache()  # what the runner does once per conversation repeat
                result = backend.generate(request)
                doc["cases"][name] = {
                    "request": {k: v for k, v in request.__dict__.items()},
                    "expected_cached_tokens": expected_cached,
                    "response": backend.last_response,
                    "result": result_summary(result),
                }
                r = doc["cases"][name]["result"]
                say(
                    f"{name}: ttft={r['ttft_ms']} decode={r['decode_ms_per_token']} ({r['timing_source']}) "
                    f"cached={r['cached_tokens']} (expected {expected_cached}) finish={r['finish_reason']} "
                    f"text={r['text'][:60]!r}"
                )
            except Exception:  # noqa: BLE001 - record and go on: this runs once, blind
                doc["errors"][name] = traceback.format_exc()
                say(f"{name}: FAILED\n{doc['errors'][name]}")
            save()
        raw_steps(backend, plain, doc)
        doc["environment"] = backend.environment()
    finally:
        save()
        backend.close()
    say(f"wrote {out_path} ({len(doc['cases'])} cases, {len(doc['errors'])} errors)")
    return 0 if not doc["errors"] else 1


def raw_steps(backend: Any, prompt: list[int], doc: dict[str, Any]) -> None:
    """The public API, untouched by the adapter: generate, a stream, flush_cache, server info."""
    engine = backend.engine
    steps = {
        "public_generate": lambda: engine.generate(
            input_ids=prompt, sampling_params={"max_new_tokens": 8, "temperature": 0}
        ),
        "flush_cache": lambda: repr(engine.flush_cache()),
        "stream": lambda: stream(engine, prompt),
        "server_info": engine.get_server_info,
    }
    for name, step in steps.items():
        try:
            value = step()
            if name == "server_info":
                doc["server_info"] = value
            else:
                doc["cases"][name] = {"raw": value}
            say(f"{name}: ok")
        except Exception:  # noqa: BLE001
            doc["errors"][name] = traceback.format_exc()
            say(f"{name}: FAILED\n{doc['errors'][name]}")


def stream(engine: Any, prompt: list[int]) -> dict[str, Any]:
    """A streamed request: chunk arrival times (ms) beside the final meta_info's stamps."""
    engine.flush_cache()
    t0 = time.perf_counter()
    arrivals, last = [], None
    for chunk in engine.generate(
        input_ids=prompt,
        sampling_params={"max_new_tokens": 16, "temperature": 0, "ignore_eos": True},
        stream=True,
    ):
        arrivals.append([(time.perf_counter() - t0) * 1e3, len(chunk.get("output_ids") or [])])
        last = chunk
    return {"arrivals_ms_and_ids": arrivals, "last": last}


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
