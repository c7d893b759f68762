"""Replay a plan on one backend and write one record per request (runs inside the child process).

The runner replays the groups of its engine start in plan order (N and modes interleaved
within a repeat, see ``workloads.plan``), skips what ``--resume`` finds done, and runs a
block's warm-ups (a workload mode, a sweep length...) untimed before the block's first group
that still has to run. A step that needs a capability the backend lacks becomes a ``skipped``
record with the reason; an exception becomes an ``error`` record (the rest of a conversation
repeat is then abandoned, since its cache state is unknown) and the run goes on.
"""

from __future__ import annotations

import time
import traceback
from collections import defaultdict
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from backends.base import Backend, Capabilities, Request, Result
from harness.records import Record, RecordKey, RecordWriter, done_keys, failed_keys
from harness.secrets import redact
from workloads.kinds import kind
from workloads.plan import Group, Plan, Step

# markup off: workload names, cases and server error messages are user text and may hold "[/...]",
# which Rich would read as a (broken) tag and raise MarkupError mid-run. Colours go through style=.
console = Console(stderr=True, highlight=False, markup=False)
CAPABILITY_NAMES = {f.name for f in fields(Capabilities)}


# Greedy calls ask every backend for the top-2 log-probs at each step, so the report can tell a
# split between backends at a near-tie (bf16 rounding) from one at a clear margin. Not in the
# sweep and the load (``Kind.timing_only``): they exist to time prefill, decode and throughput, and
# asking for log-probs adds work to each step.
STEP_LOGPROBS = 2


def step_logprobs_for(step: Step) -> int:
    greedy = not step.temperature
    return STEP_LOGPROBS if greedy and not kind(step.kind).timing_only and not step.want_attentions else 0


def request_for(step: Step, plan: Plan) -> Request:
    return Request(
        prompt_ids=plan.prompts[step.prompt],
        max_new_tokens=step.max_new_tokens,
        temperature=step.temperature or 0.0,
        top_p=step.top_p,
        ignore_eos=step.ignore_eos,
        json_schema=step.json_schema if step.grammar else None,
        top_logprobs=step.top_logprobs,
        step_logprobs=step_logprobs_for(step),
        reuse_prefix=step.reuse_prefix,
        seed=step.seed,
        want_attentions=step.want_attentions,
    )


def missing_capability(step: Step, caps: Capabilities) -> str | None:
    if "load" not in step.needs and not caps.single_requests:
        return "single_requests"
    for need in step.needs:
        if need in CAPABILITY_NAMES and not getattr(caps, need):
            return need
    return None


class Runner:
    def __init__(
        self, backend: Backend, plan: Plan, run_dir: Path, base: dict, resume: bool, engine_start: int = 0
    ) -> None:
        self.backend = backend
        self.plan = plan
        self.engine_start = engine_start
        self.after_workload: Callable[[], None] = lambda: None  # e.g. sample device memory
        self.base = base  # run_id, backend, backend_version, model, random_weights
        self.done = done_keys(run_dir, backend.name) if resume else set()
        self.failed = failed_keys(run_dir, backend.name) if resume else set()
        self.writer = RecordWriter(run_dir)
        self.wall_s: dict[str, float] = defaultdict(float)  # per workload, warm-ups included
        self.errors_seen: set[str] = set()

    # -- records ---------------------------------------------------------------------------
    def _record(self, step: Step, **kw) -> Record:
        values = {
            "engine_start": step.engine_start,
            "workload": step.workload,
            "kind": step.kind,
            "mode": step.mode,
            "case": step.case,
            "rep": step.rep,
            "turn": step.turn,
            "temperature": step.temperature,
            "prompt_tokens": len(self.plan.prompts[step.prompt]),
            "shared_prefix_tokens": step.shared_prefix_tokens,
            "prefix_break": step.prefix_break,
        }
        return Record(**{**self.base, **values, **kw})

    def _measured(self, step: Step, result: Result) -> Record:
        out = result.output
        prompt = self.plan.prompts[step.prompt]
        cached = out.cached_tokens
        return self._record(
            step,
            cached_tokens=cached,
            computed_tokens=None if cached is None else len(prompt) - cached,
            ttft_ms=result.ttft_ms,
            decode_ms_per_token=result.decode_ms_per_token,
            engine_ttft_ms=result.engine_ttft_ms,
            engine_decode_ms_per_token=result.engine_decode_ms_per_token,
            e2e_ms=result.e2e_ms,
            output_tokens=out.output_tokens,
            first_token_id=out.token_ids[0] if out.token_ids else None,
            output_token_ids=out.token_ids,
            output_text=out.text,
            finish_reason=out.finish_reason,
            timing_source=result.timing_source,
            cache_state=result.cache_state,
            prompt_ids_match=None if out.prompt_ids_used is None else out.prompt_ids_used == prompt,
            top_candidates=[c.to_dict() for c in out.top_candidates] if out.top_candidates else None,
            step_logprobs=out.step_logprobs,
            attention_special_share=out.attention_special_share,
            extra=out.extra,
            **kind(step.kind).score(step, out),  # the kind's own fields (valid_json, clean...)
        )

    # -- running ---------------------------------------------------------------------------
    def run(self) -> None:
        """The groups of this engine start in plan order (the plan interleaves N and modes within a
        repeat); a block's warm-ups run once, untimed, before its first group that still has to run."""
        # a load variant's search pool is cut into the levels the capacity search adds, never run as it is
        groups = [g for g in self.plan.groups if g.steps and g.steps[0].engine_start == self.engine_start
                  and not (g.load or {}).get("pool")]
        todo_blocks = {g.block for g in groups if not g.warmup and self._todo(g)}
        total = sum(len(g.steps) for g in groups if not g.warmup)
        columns = (TextColumn(escape(self.label), style="bold"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
        skipped: set[str] = set()
        with Progress(*columns, console=console, transient=False) as progress:
            task = progress.add_task("requests", total=total)
            for i, group in enumerate(groups):
                started = time.perf_counter()
                if group.block not in todo_blocks or group.block in skipped:
                    progress.advance(task, 0 if group.warmup else len(group.steps))
                elif self._skip_block(group, progress):
                    skipped.add(group.block)
                    progress.advance(task, 0 if group.warmup else len(group.steps))
                elif group.warmup:
                    self._run_group(group, record=False)
                elif self._todo(group):
                    records = self._run_group(group, record=True)
                    progress.console.print(f"  {group.block} {summary(records)}")
                    progress.advance(task, len(group.steps))
                else:
                    progress.advance(task, len(group.steps))
                if (group.load or {}).get("search") and group.block not in skipped:
                    from harness.load_runner import run_search

                    run_search(self, group)  # after the variant's last planned level of its loop, done now or before
                workload = group.steps[0].workload
                self.wall_s[workload] += time.perf_counter() - started
                if i + 1 == len(groups) or groups[i + 1].steps[0].workload != workload:
                    self.after_workload()
        self.writer.close()

    @property
    def label(self) -> str:
        return self.backend.name + (f" #{self.engine_start}" if self.engine_start else "")

    def _todo(self, group: Group) -> bool:
        if group.load is not None and not group.warmup:
            # a level is done when its own record is and none of its requests failed: with ``seconds`` it stops
            # starting requests, so some of its steps never run, and --resume must not run the level again
            # beside the records it has; a level with a failed request is run again, whole (a new attempt)
            level_done = RecordKey.of(group.steps[0]).of_level().without_backend() in self.done
            return not level_done or any(s.key() in self.failed for s in group.steps)
        return not all(s.key() in self.done for s in group.steps)

    def _skip_block(self, group: Group, progress: Progress) -> bool:
        """True (and one ``skipped`` record for the block) when the backend lacks what the block needs."""
        missing = missing_capability(group.steps[0], self.backend.capabilities)
        if not missing:
            return False
        reason = f"{self.backend.name} does not support {missing.replace('_', ' ')}"
        self.writer.write(self._record(group.steps[0], skipped=reason, case=None, rep=None, turn=None))
        progress.console.print(f"  {group.block}: skipped ({reason})")
        return True

    def _run_group(self, group: Group, record: bool) -> list[Record]:
        if group.load is not None:  # a load level: its steps run concurrently
            from harness.load_runner import run_load_group

            return run_load_group(self, group, record)
        records = []
        if group.reset_cache:
            self.backend.reset_cache()
        for i, step in enumerate(group.steps):
            try:
                result = self.backend.generate(request_for(step, self.plan))
            except Exception as exc:  # noqa: BLE001 - any engine failure becomes an error record
                detail = redact(f"{type(exc).__name__}: {exc}")
                console.print(f"  {step.workload} {step.mode} {step.case}: {detail}", style="red")
                if detail not in self.errors_seen:  # the traceback once per distinct error
                    self.errors_seen.add(detail)
                    console.print(redact(traceback.format_exc(limit=4)))
                if record:
                    for later in group.steps[i:]:
                        rec = self._record(later, error=detail)
                        self.writer.write(rec)
                        records.append(rec)
                return records
            if record:
                rec = self._measured(step, result)
                self.writer.write(rec)
                records.append(rec)
        return records


def summary(records: list[Record]) -> str:
    """One line for a finished case: what it was and its headline figures."""
    if not records:
        return ""
    r = records[0]
    head = f"{r.mode} {r.case if len(records) == 1 else f'{len(records)} steps'} rep={r.rep}"
    if r.temperature:
        head += f" T={r.temperature}"
    errors = [x.error for x in records if x.error]
    if errors:
        return f"{head}: error {errors[0]}"
    ttfts = [x.ttft_ms for x in records if x.ttft_ms is not None]
    parts = [head]
    if ttfts:
        parts.append(f"ttft {sum(ttfts) / len(ttfts):.1f} ms" + (" (mean)" if len(ttfts) > 1 else ""))
    decodes = [x.decode_ms_per_token for x in records if x.decode_ms_per_token is not None]
    if decodes:
        parts.append(f"decode {sum(decodes) / len(decodes):.2f} ms/tok")
    cached = [x.cached_tokens for x in records if x.cached_tokens]
    if cached:
        parts.append(f"cached {sum(cached)} tok")
    if r.valid_json is not None:
        parts.append("valid" if r.valid_json else "invalid")
    if r.clean is not None:
        parts.append("clean" if r.clean else "not clean")
    return ", ".join(parts)
