"""Hand-made records with known answers, and a writer for run directories, for the report tests.

``record(**fields)`` makes one record dict (the contract fields of contract.records.Record);
``sweep_record`` makes one sweep request; ``load_request`` and ``load_level`` make a load level's request
records and its own record;
``write_run(dir, records, env)`` writes a run directory the report can read.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from llm_call_anatomy.contract.records import Record

FIXTURES = Path(__file__).parent / "fixtures"
RUNS = ("tiny-eager", "tiny-sdpa")  # recorded on the CPU with the tiny model (see fixtures/README.md)


def record(**fields: Any) -> dict[str, Any]:
    base = {"run_id": "hand", "backend": "hf", "kind": None, "temperature": 0.0, "rep": 0}
    return asdict(Record(**{**base, **fields}))


def load_request(
    backend: str, c: int, rep: int, submit_s: float, token_times_s: list[float], **fields: Any
) -> dict[str, Any]:
    """One request of the closed-loop load level ``C={c}``: submitted at ``submit_s``, its tokens out at
    ``token_times_s`` (the first token and the finish are the first and the last of them)."""
    return _load_record(
        backend,
        c,
        fields,
        rep=rep,
        submit_s=submit_s,
        first_token_s=token_times_s[0],
        finish_s=token_times_s[-1],
        token_times_s=token_times_s,
        output_tokens=len(token_times_s),
    )


def load_level(backend: str, c: int, facts: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """The load level ``C={c}``'s own record (no request: ``rep`` None), the engine's level facts in
    ``extra["level"]``."""
    return _load_record(backend, c, fields, rep=None, temperature=None, extra={"level": facts})


def _load_record(backend: str, c: int, fields: dict[str, Any], **own: Any) -> dict[str, Any]:
    """A record of the load level ``C={c}``: workload ``lf`` and mode ``S=0`` unless ``fields`` say."""
    base = {"workload": "lf", "mode": "S=0"}
    return record(
        **{**base, **fields}, backend=backend, kind="load", case=f"C={c}", load_concurrency=c, **own
    )


def write_run(run_dir: Path, records: list[dict[str, Any]], env: dict[str, Any] | None = None) -> Path:
    run_dir.mkdir(parents=True, exist_ok=True)
    with (run_dir / "records.jsonl").open("w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")
    (run_dir / "env.json").write_text(json.dumps({"run_id": run_dir.name, **(env or {})}))
    return run_dir


PROMPTS = [100, 230, 400]  # conversation prompt lengths per turn
SHARED = [None, 90, 220]  # shared with the previous prompt (each breaks 10 tokens early)
BREAK = {
    "previous": ["\n", "<|im_start|>", "assistant", "\n", "<think>", "\n", "\n", "</think>"],
    "current": ["\n", "<|im_start|>", "assistant", "\n", "edge", "-", "1", " nginx"],
    "context_start": 0,
}


def conversation_records() -> list[dict[str, Any]]:
    """hf (reuses to the token) and vllm (blocks of 16), 3 turns x 3 repeats x full/cached."""
    out = []
    for backend in ("hf", "vllm"):
        for mode in ("full", "cached"):
            for rep in range(3):
                for i, (prompt, shared) in enumerate(zip(PROMPTS, SHARED, strict=True)):
                    if mode == "full":
                        cached = 0
                        ttft = [10, 20, 40][i] + rep
                    else:
                        cached = 0 if shared is None else (shared if backend == "hf" else shared // 16 * 16)
                        ttft = [10, 11, 12][i] + rep + (10 if backend == "vllm" and i == 2 else 0)
                    first = 7 if not (backend == "vllm" and mode == "cached" and i == 2 and rep == 0) else 8
                    brk = (
                        None
                        if shared is None
                        else {
                            **BREAK,
                            "position": shared,
                            "previous_prompt_tokens": PROMPTS[i - 1],
                            "tokens_lost": PROMPTS[i - 1] - shared,
                            "context_start": shared - 4,
                        }
                    )
                    out.append(
                        record(
                            backend=backend,
                            workload="conversation",
                            kind="conversation",
                            mode=mode,
                            case=f"turn={i + 1}",
                            rep=rep,
                            turn=i + 1,
                            prompt_tokens=prompt,
                            shared_prefix_tokens=shared,
                            cached_tokens=cached,
                            computed_tokens=prompt - cached,
                            ttft_ms=float(ttft),
                            decode_ms_per_token=5.0,
                            first_token_id=first,
                            output_token_ids=[first, 1, 2, 3],
                            prefix_break=brk,
                            cache_state="reuse-allowed" if mode == "cached" else "reset-before-request",
                        )
                    )
    return out


def sweep_records(
    backend: str, a: float, b: float, decode: float, lengths=(64, 256, 1024)
) -> list[dict[str, Any]]:
    """TTFT exactly a + b*N (repeats spread by ±1 ms around it), decode fixed."""
    return [
        sweep_record(backend, n, rep, a + b * n + jitter, decode + jitter / 10)
        for n in lengths
        for rep, jitter in enumerate((-1.0, 0.0, 1.0))
    ]


def sweep_record(
    backend: str, n: int, rep: int, ttft_ms: float, decode_ms_per_token: float, **fields: Any
) -> dict[str, Any]:
    """One greedy sweep request of an N-token prompt, 64 tokens out, from an emptied cache."""
    return record(
        backend=backend,
        workload="sweep",
        kind="sweep",
        mode="greedy",
        case=f"N={n}",
        rep=rep,
        prompt_tokens=n,
        ttft_ms=ttft_ms,
        decode_ms_per_token=decode_ms_per_token,
        output_tokens=64,
        output_token_ids=list(range(64)),
        cache_state="reset-before-request",
        **fields,
    )
