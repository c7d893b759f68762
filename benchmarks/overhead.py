"""Benchmark 1: harness overhead — the adapter against the raw engine call, same process, same prompts.

For each prompt (the sweep's N=256 and N=1024 prompts, 64 greedy tokens, EOS ignored, cache
reset before each call) it alternates ``backend.generate(Request)`` with the engine called
directly and timed the same way (each adapter's ``raw_generate_timed``, ``backends.base.Backend``):

- hf: a hand-written prefill + decode loop of ``model(...)`` forward passes (argmax), the device
  synchronized at every token, as the adapter's streamer does;
- vllm: the engine's own loop, ``LLMEngine.add_request`` + ``step()`` (what ``LLM.generate`` runs),
  with cumulative outputs, stamped at the caller as tokens arrive, as the adapter does;
- sglang: ``Engine.generate(..., stream=True)`` on the same ``input_ids``, stamped per chunk.

All three are timed at the caller, as the study's ``ttft_ms`` is (``backends.base.TTFT_DEFINITION``).

It runs inside a study's child process, after the study (no second engine start), as the child's
post-study hook (``harness.child.run_child_hook``): ``LCA_CHILD_HOOK=benchmarks.overhead:child_hook``
with ``LCA_OVERHEAD_DIR`` naming where it writes ``overhead-<backend>.json``; and it prints a table
from such files:

    LCA_CHILD_HOOK=benchmarks.overhead:child_hook LCA_OVERHEAD_DIR=/tmp/oh \
        python compare.py --backend hf,vllm --workloads sweep ...
    python -m benchmarks.overhead /tmp/oh/overhead-*.json
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from llm_call_anatomy.backends.base import Backend
from llm_call_anatomy.contract.adapter import Request
from llm_call_anatomy.contract.plan import Plan

OUT_ENV = "LCA_OVERHEAD_DIR"  # where child_hook writes; the hook itself is named by LCA_CHILD_HOOK

NEW_TOKENS = 64
LENGTHS = (256, 1024)


# --- measuring ----------------------------------------------------------------------------------
def measure(backend: Backend, prompts: dict[int, list[int]], reps: int = 5) -> list[dict[str, Any]]:
    if backend.raw_call is None:  # the adapter's raw_generate_timed(): the engine called without the adapter
        return [{"backend": backend.name, "skipped": "no raw engine call defined for this backend"}]
    rows = []
    for n, ids in prompts.items():
        request = Request(prompt_ids=ids, max_new_tokens=NEW_TOKENS, ignore_eos=True)
        backend.generate(request)  # warm-up of this shape for both paths
        adapter, direct = [], []
        for _ in range(reps):
            r = backend.generate(request)
            adapter.append((r.ttft_ms, r.decode_ms_per_token, r.e2e_ms))
            backend.reset_cache()
            direct.append(backend.raw_generate_timed(ids, NEW_TOKENS))
        rows.append({"backend": backend.name, "N": n, "reps": reps, "adapter": adapter, "raw": direct})
    return rows


def child_hook(backend: Backend, plan: Plan) -> None:
    """The study child's post-study hook: the sweep's prompts of this plan, measured on the study's
    engine, written to ``$LCA_OVERHEAD_DIR/overhead-<backend>.json`` (unset: the run directory)."""
    out_dir = Path(os.environ.get(OUT_ENV) or backend.settings.run_dir or ".")
    prompts = {s.case: plan.prompts[s.prompt] for g in plan.groups for s in g.steps if s.kind == "sweep"}
    out_dir.mkdir(parents=True, exist_ok=True)
    measure_into(backend, prompts, out_dir / f"overhead-{backend.name}.json")
    print(f"{backend.name}: overhead benchmark written to {out_dir}", flush=True)


def measure_into(backend: Backend, prompts_by_case: dict[str, list[int]], path: Path) -> None:
    prompts = {int(c.split("=")[1]): ids for c, ids in prompts_by_case.items() if c.split("=")[1].isdigit()}
    prompts = {n: prompts[n] for n in LENGTHS if n in prompts}
    path.write_text(json.dumps(measure(backend, prompts), indent=1))


# --- the table ------------------------------------------------------------------------------------
def summarise(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Median of the adapter's and the raw calls' figures, and the raw calls' IQR (``reports.stats``:
    the report's one way of summarising repeats)."""
    from llm_call_anatomy.reports.stats import (
        spread,  # here, not at the top: the GPU child that measures needs no pandas
    )

    out = []
    for row in rows:
        if "skipped" in row:
            out.append(row)
            continue
        entry = {"backend": row["backend"], "N": row["N"], "reps": row["reps"]}
        for i, name in enumerate(("ttft_ms", "decode_ms_per_token", "e2e_ms")):
            adapter, raw = spread(x[i] for x in row["adapter"]), spread(x[i] for x in row["raw"])
            entry[name] = (adapter.median, raw.median)
            entry[name + "_raw_iqr"] = raw.q3 - raw.q1
        out.append(entry)
    return out


def within_target(adapter: float, raw: float) -> bool:
    """Target: at most 2 % or 0.2 ms above the raw call, whichever is larger."""
    return adapter - raw <= max(0.02 * raw, 0.2)


def verdict(entry: dict[str, Any]) -> str:
    """yes: TTFT and decode within target. no: one is above it by more than the raw call's own
    call-to-call spread (IQR). Otherwise the gap is inside that noise: not resolved at this many reps."""
    keys = ("ttft_ms", "decode_ms_per_token")
    if all(within_target(*entry[k]) for k in keys):
        return "yes"
    if any(not within_target(*entry[k]) and entry[k][0] - entry[k][1] > entry[k + "_raw_iqr"] for k in keys):
        return "no"
    return "within noise"


def table(rows: list[dict[str, Any]]) -> str:
    """A Markdown line per backend and prompt length: the adapter's median TTFT and decode against the raw
    call's (raw IQR in brackets), e2e likewise, and the ``verdict`` on the target."""
    lines = [
        "| backend | N | TTFT adapter / raw ms (raw IQR) | decode adapter / raw ms/tok (raw IQR) | "
        "e2e adapter / raw ms | within target |",
        "|---|---|---|---|---|---|",
    ]
    for s in summarise(rows):
        if "skipped" in s:
            lines.append(f"| {s['backend']} | - | skipped: {s['skipped']} | | | |")
            continue
        cells = [
            f"{s[k][0]:.2f} / {s[k][1]:.2f} ({s[k + '_raw_iqr']:.2f})"
            for k in ("ttft_ms", "decode_ms_per_token")
        ]
        cells.append(f"{s['e2e_ms'][0]:.2f} / {s['e2e_ms'][1]:.2f}")
        lines.append(f"| {s['backend']} | {s['N']} | " + " | ".join(cells) + f" | {verdict(s)} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("files", nargs="+", type=Path, help="JSON files written through LCA_OVERHEAD_DIR")
    rows = [row for f in parser.parse_args().files for row in json.loads(f.read_text())]
    print(table(rows))


if __name__ == "__main__":
    main()
