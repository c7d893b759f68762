"""Replay a plan on one backend and write one record per request (runs inside the child process).

The runner replays the groups of its engine start in plan order (N and modes interleaved
within a repeat, see ``workloads.plan``), skips what ``--resume`` finds done, and runs a
block's warm-ups (a workload mode, a sweep length...) untimed before the block's first group
that still has to run. A step that needs a capability the backend lacks becomes a ``skipped``
record with the reason; an exception becomes an ``error`` record (the rest of a conversation
repeat is then abandoned, since its cache state is unknown) and the run goes on. The progress bar shows
the elapsed time, an ETA once cases finish and "warm-up" while warming up; where the console is no
terminal, a heartbeat line (``harness.heartbeat``) every few seconds while a group runs. What the libraries
log meanwhile is printed above the bar (``harness.library_logs``).
"""

from __future__ import annotations

import time
import traceback
from collections import defaultdict
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path

from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from llm_call_anatomy.backends.base import Backend, Result
from llm_call_anatomy.contract.plan import Group, Plan, Step
from llm_call_anatomy.contract.records import Record
from llm_call_anatomy.harness import load_runner, load_search, prompt_timing
from llm_call_anatomy.harness.heartbeat import Heartbeat
from llm_call_anatomy.harness.library_logs import above_the_bar
from llm_call_anatomy.harness.records import RecordWriter, done_keys, failed_keys
from llm_call_anatomy.harness.secrets import redact
from llm_call_anatomy.harness.steps import (
    STEP_LOGPROBS,
    console,
    missing_capability,
    output_fields,
    request_for,
    step_logprobs_for,
)
from llm_call_anatomy.workloads.kinds import kind

__all__ = ["STEP_LOGPROBS", "GroupRunner", "Runner", "console", "request_for", "step_logprobs_for", "summary"]


@dataclass(frozen=True)
class GroupRunner:
    """How the groups of a kind run (``Kind.runs_as`` names one): the function, and the capability it
    needs."""

    run: Callable[[Runner, Group, bool], list[Record]]  # (runner, group, record?) -> the records written
    needs: str  # the Capabilities flag a backend must have
    done: Callable[[Runner, Group], bool]  # --resume: the group's records are all there
    # after each group, done now or before (not for a block skipped): e.g. the capacity search's added levels
    after: Callable[[Runner, Group], object] = lambda runner, group: None


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
        self.prompt_timings = prompt_timing.read(run_dir)  # template / tokenizer ms per prompt (plan time)
        self.wall_s: dict[str, float] = defaultdict(float)  # per workload, warm-ups included
        self.errors_seen: set[str] = set()

    # -- records ---------------------------------------------------------------------------
    def record(self, step: Step, **kw) -> Record:
        """The record of ``step`` on this backend: the run's fields, the step's key and ``kw``."""
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

    def measured(self, step: Step, result: Result) -> Record:
        """The record of a finished request: its timings, output and the kind's own scores."""
        out = result.output
        return self.record(
            step,
            **output_fields(out, self.plan.prompts[step.prompt]),
            ttft_ms=result.ttft_ms,
            decode_ms_per_token=result.decode_ms_per_token,
            engine_ttft_ms=result.engine_ttft_ms,
            engine_decode_ms_per_token=result.engine_decode_ms_per_token,
            e2e_ms=result.e2e_ms,
            last_token_ms=result.last_token_ms,
            detokenize_ms=result.spans_ms.get("detokenize"),
            response_parse_ms=result.spans_ms.get("response parse"),
            **prompt_timing.fields_of(self.prompt_timings, step.prompt),
            output_text=out.text,
            timing_source=result.timing_source,
            cache_state=result.cache_state,
            top_candidates=[c.to_dict() for c in out.top_candidates] if out.top_candidates else None,
            step_logprobs=out.step_logprobs,
            attention_special_share=out.attention_special_share,
            **kind(step.kind).score(step, out),  # the kind's own fields (valid_json, clean...)
        )

    # -- running ---------------------------------------------------------------------------
    def run(self) -> None:
        """The groups of this engine start in plan order (the plan interleaves N and modes within a
        repeat); a block's warm-ups run once, untimed, before its first group that still has to run."""
        # a load variant's search pool is cut into the levels the capacity search adds, never run as it is
        groups = [
            g
            for g in self.plan.groups
            if g.steps and g.steps[0].engine_start == self.engine_start and not (g.load or {}).get("pool")
        ]
        todo_blocks = {g.block for g in groups if not g.warmup and self._todo(g)}
        total = sum(len(g.steps) for g in groups if not g.warmup)
        columns = (
            TextColumn(escape(self.label), style="bold"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            TextColumn("{task.description}"),
        )
        skipped: set[str] = set()
        # the bar's proxies of stdout and stderr are in place once it starts: library logs go through them
        with Progress(*columns, console=console, transient=False) as progress, above_the_bar():
            task = progress.add_task("", total=total)
            for i, group in enumerate(groups):
                started = time.perf_counter()
                if group.block not in todo_blocks or group.block in skipped:
                    progress.advance(task, 0 if group.warmup else len(group.steps))
                elif self._skip_block(group, progress):
                    skipped.add(group.block)
                    progress.advance(task, 0 if group.warmup else len(group.steps))
                elif group.warmup:
                    progress.update(task, description="warm-up")
                    with self.heartbeat(f"{self.label}: warm-up {group.block}", progress):
                        self.run_group(group, record=False)
                    progress.update(task, description="")
                elif self._todo(group):
                    with self.heartbeat(f"{self.label}: {group.block}", progress):
                        records = self.run_group(group, record=True)
                    progress.console.print(f"  {group.block} {summary(records)}")
                    progress.advance(task, len(group.steps))
                else:
                    progress.advance(task, len(group.steps))
                if group.block not in skipped:
                    group_runner(group).after(self, group)
                workload = group.steps[0].workload
                self.wall_s[workload] += time.perf_counter() - started
                if i + 1 == len(groups) or groups[i + 1].steps[0].workload != workload:
                    self.after_workload()
        self.writer.close()

    @property
    def label(self) -> str:
        return self.backend.name + (f" #{self.engine_start}" if self.engine_start else "")

    @staticmethod
    def heartbeat(what: str, progress: Progress) -> AbstractContextManager:
        """A line every few seconds while a group runs, where the console is no terminal (piped, a log file:
        the live bar, which ticks its elapsed time, is then not drawn); nothing on a terminal."""
        if progress.console.is_terminal:
            return nullcontext()
        return Heartbeat(what, say=lambda line: progress.console.print(line, soft_wrap=True))

    def _todo(self, group: Group) -> bool:
        return not group_runner(group).done(self, group)

    def _skip_block(self, group: Group, progress: Progress) -> bool:
        """True (and one ``skipped`` record for the block) when the backend lacks what the block needs."""
        missing = missing_capability(group.steps[0], self.backend.capabilities, group_runner(group).needs)
        if not missing:
            return False
        reason = f"{self.backend.name} does not support {missing.replace('_', ' ')}"
        why = self.backend.why_not(missing)  # what would give it: hf's grammar needs the hf extra
        reason += f" {why}" if why else ""
        self.writer.write(self.record(group.steps[0], skipped=reason, case=None, rep=None, turn=None))
        progress.console.print(f"  {group.block}: skipped ({reason})")
        return True

    def run_group(self, group: Group, record: bool) -> list[Record]:
        return group_runner(group).run(self, group, record)


def run_sequential(runner: Runner, group: Group, record: bool) -> list[Record]:
    """The group's steps one at a time; an exception ends the group (its later steps become error records)."""
    records: list[Record] = []
    if group.reset_cache:
        runner.backend.reset_cache()
    for i, step in enumerate(group.steps):
        try:
            result = runner.backend.generate(request_for(step, runner.plan))
        except Exception as exc:  # noqa: BLE001 - any engine failure becomes an error record
            detail = redact(f"{type(exc).__name__}: {exc}")
            console.print(f"  {step.workload} {step.mode} {step.case}: {detail}", style="red")
            if detail not in runner.errors_seen:  # the traceback once per distinct error
                runner.errors_seen.add(detail)
                console.print(redact(traceback.format_exc(limit=4)))
            if record:
                for later in group.steps[i:]:
                    rec = runner.record(later, error=detail)
                    runner.writer.write(rec)
                    records.append(rec)
            return records
        if record:
            rec = runner.measured(step, result)
            runner.writer.write(rec)
            records.append(rec)
    return records


def steps_done(runner: Runner, group: Group) -> bool:
    return all(s.key() in runner.done for s in group.steps)


# Kind.runs_as -> its group runner
GROUP_RUNNERS: dict[str, GroupRunner] = {
    "sequential": GroupRunner(run_sequential, needs="single_requests", done=steps_done),
    "concurrent": GroupRunner(
        load_runner.run_level_group, needs="load", done=load_runner.level_done, after=load_search.after_level
    ),
}


def group_runner(group: Group) -> GroupRunner:
    """The runner the group's kind names (``Kind.runs_as``); a warm-up runs as its timed groups do."""
    return GROUP_RUNNERS[kind(group.steps[0].kind).runs_as]


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
