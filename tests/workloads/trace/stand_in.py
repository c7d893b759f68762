"""What the trace room's end-to-end tests share: a stand-in engine (``StandIn``: its first token after
``delay_s``, then a token every 2 ms) and one trace workload file run through the real planner and Runner
(``run_trace``), so each test names only its trace and how its engine answers."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from llm_call_anatomy.backends.base import Backend, TokenClock
from llm_call_anatomy.contract.adapter import BackendSettings, Capabilities, RawOutput, Request
from llm_call_anatomy.harness.runner import Runner
from llm_call_anatomy.workloads.catalog import build_plan
from llm_call_anatomy.workloads.reader import read_workload_file


class StandIn(Backend):
    """A load-capable engine with no model: ``in_flight`` counts the requests it is answering."""

    name = "stand-in"
    capabilities = Capabilities(load=True, batches_requests=True)

    def __init__(self) -> None:
        super().__init__(BackendSettings(model_path="-", model_label="-"))
        self.in_flight = 0

    def delay_s(self, request: Request) -> float:
        """The wait before the first token (``in_flight`` counts this request already)."""
        return 0.005

    def _generate(self, request: Request, clock: TokenClock) -> RawOutput:  # pragma: no cover - load only
        raise NotImplementedError

    async def stream(self, request: Request, clock: TokenClock) -> RawOutput:
        self.in_flight += 1
        try:
            await asyncio.sleep(self.delay_s(request))
            for _ in range(request.max_new_tokens):
                clock.tick(1)
                await asyncio.sleep(0.002)
        finally:
            self.in_flight -= 1
        return RawOutput(token_ids=[7] * request.max_new_tokens, text="")


def run_trace(
    spec: str, folder: Path, model_dir: Path, backend: Backend, env: dict[str, Any] | None = None
) -> Path:
    """``spec`` (a workload file's text) planned with the model's tokenizer and run on ``backend`` into
    ``folder/run``, its env.json ``{"run_id": "run", **env}``; the run directory."""
    from transformers import AutoTokenizer

    from llm_call_anatomy.contract.chat import Renderer

    path = folder / "trace.yaml"
    path.write_text(spec)
    plan = build_plan(read_workload_file(path), Renderer(AutoTokenizer.from_pretrained(model_dir)), 1)
    run = folder / "run"
    Runner(backend, plan, run, {"run_id": "run", "backend": backend.name}, resume=False).run()
    (run / "env.json").write_text(json.dumps({"run_id": "run", **(env or {})}))
    return run
