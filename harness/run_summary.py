"""What a run found, said in the terminal at its end: one line a load level, and a run that measured nothing.

``harness/backend_runs.py`` prints both after the last backend, from the records alone: the report's
analysis needs the report extra (pandas) and is the page's; these few figures need only the contract.

- **Load levels** (:func:`load_table`): one line a level, as ``vllm bench serve`` ends: the backend, the
  variant (``workload/mode``) and the level's kind (``closed C=8``, ``U=8 users, think 30 s (exponential)``,
  ``open 4 req/s (poisson, 60 s)``: ``contract.level_flags.level_kind``), output tok/s, TTFT p50 and p90,
  TPOT p50 (a request's decode ms/token), in ms, and the failed requests. Over the whole level (the title
  says so: ``output tok/s (whole level)``, the page's name, ``workloads.load.report.labels``), as the page's
  per-level table counts it: output tokens of the served requests ÷ the level's window (first submit to
  last finish, failed requests included; with ``--starts K`` the starts' windows summed), percentiles over
  the served requests, the cold first wave included. The page's capacity figures are the steady state
  (``contract.level_stats``: the first wave apart), so on a short level they differ. The table fits the
  terminal's width (80 columns when the output is not a terminal): the variant, then the level's kind, is
  cut (``…``) where it would not.
- **Nothing measured** (:func:`nothing_measured`): every requested backend was skipped (not installed, could
  not start, or lacks what each workload needs) or every request failed. The run then exits 1 and its last
  line says so, with each backend's reason or first error.
"""

from __future__ import annotations

import shutil
from collections import defaultdict

from llm_call_anatomy.contract.level_facts import LevelFacts
from llm_call_anatomy.contract.level_flags import level_kind
from llm_call_anatomy.contract.records import record_place
from llm_call_anatomy.contract.slo import percentile

LEVEL_TPS = "output tok/s (whole level)"  # the page's name (workloads.load.report.labels: no pandas here)
HEADER = ("backend", "variant", "level", "out tok/s", "TTFT p50", "TTFT p90", "TPOT p50", "errors")
NUMERIC = 3  # the columns from here on are figures, right-aligned
MIN_TEXT = 4  # a text column is not cut below this (below ~60 columns the line's end is cut)
SHORT = 160  # characters of an error kept in the last line


def _failed(row: dict) -> bool:
    return bool(row.get("error"))


def _first_line(text: str, short: int | None = None) -> str:
    lines = [x.strip() for x in str(text).splitlines() if x.strip()]
    first = lines[0] if lines else ""
    return first if short is None or len(first) <= short else first[: short - 1] + "…"


# --- load levels ----------------------------------------------------------------------------------------
def load_levels(rows: list[dict], backends: list[str] | None = None) -> list[dict]:
    """One dict a load level (backend, workload, mode, case) of ``backends`` (all: None), in record order:
    its label cells and figures (see the module docstring)."""
    requests: dict[tuple, list[dict]] = defaultdict(list)
    facts: dict[tuple, LevelFacts] = {}
    for r in rows:
        if r.get("skipped") or (r.get("load_concurrency") is None and r.get("load_rate_rps") is None):
            continue
        if backends is not None and r.get("backend") not in backends:
            continue
        key = (r.get("backend"), r.get("workload"), r.get("mode"), r.get("case"))
        if r.get("submit_s") is None:  # the level's own record: its facts (think time, arrivals...)
            level = (r.get("extra") or {}).get("level")
            facts.setdefault(
                key, LevelFacts.from_dict(level if isinstance(level, dict) else None, record_place(r))
            )
            requests.setdefault(key, [])
        else:
            requests[key].append(r)
    return [_level(key, rs, facts.get(key)) for key, rs in requests.items() if rs]


def _level(key: tuple, rows: list[dict], facts: LevelFacts | None) -> dict:
    backend, workload, mode, _ = key
    served = [r for r in rows if not _failed(r)]
    window = 0.0
    for start in {r.get("engine_start") or 0 for r in rows}:  # each start ran the level on its own clock
        mine = [r for r in rows if (r.get("engine_start") or 0) == start]
        submits = [r["submit_s"] for r in mine if r.get("submit_s") is not None]
        finishes = [r["finish_s"] for r in mine if r.get("finish_s") is not None]
        if submits and finishes:
            window += max(0.0, max(finishes) - min(submits))
    tokens = sum(r.get("output_tokens") or 0 for r in served)
    ttft = [r["ttft_ms"] for r in served if r.get("ttft_ms") is not None]
    tpot = [r["decode_ms_per_token"] for r in served if r.get("decode_ms_per_token") is not None]
    unit = "sessions/s" if any(r.get("user") is not None for r in rows) else "req/s"
    return {
        "backend": backend,
        # load-sessions/sessions reads load-sessions; load-fixed/S=160 stays
        "variant": f"{workload}/{mode}" if mode and not str(workload).endswith(str(mode)) else str(workload),
        "level": level_kind(rows[0].get("load_concurrency"), rows[0].get("load_rate_rps"), facts, unit),
        "output_tps": tokens / window if window > 0 and served else None,
        "ttft_p50": percentile(ttft, 50),
        "ttft_p90": percentile(ttft, 90),
        "tpot_p50": percentile(tpot, 50),
        "errors": len(rows) - len(served),
        "requests": len(rows),
    }


def _tps(x: float | None) -> str:
    return "-" if x is None else f"{x:,.0f}" if x >= 100 else f"{x:.1f}"


def _ms(x: float | None) -> str:
    return "-" if x is None else f"{x:,.0f}" if x >= 1000 else f"{x:.1f}" if x >= 10 else f"{x:.2f}"


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(0, width - 1)] + "…"


def load_table(rows: list[dict], backends: list[str] | None = None, width: int | None = None) -> list[str]:
    """The load levels' lines, a title and a header first, each at most ``width`` characters (the terminal's;
    80 where there is none); no lines when the run has no load level."""
    levels = load_levels(rows, backends)
    if not levels:
        return []
    width = width or shutil.get_terminal_size((80, 24)).columns
    cells = [
        [
            str(v["backend"]),
            v["variant"],
            v["level"],
            _tps(v["output_tps"]),
            _ms(v["ttft_p50"]),
            _ms(v["ttft_p90"]),
            _ms(v["tpot_p50"]),
            f"{v['errors']}/{v['requests']}" if v["errors"] else "0",
        ]
        for v in levels
    ]
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(HEADER)]
    over = sum(widths) + len(widths) - 1 - width
    for i in (1, 2, 0):  # cut the variant, then the level's kind, then the backend, to fit
        if over <= 0:
            break
        cut = min(over, max(0, widths[i] - MIN_TEXT))
        widths[i] -= cut
        over -= cut

    def line(values: list[str] | tuple[str, ...]) -> str:
        parts = [
            _cut(v, w).rjust(w) if i >= NUMERIC else _cut(v, w).ljust(w)
            for i, (v, w) in enumerate(zip(values, widths, strict=True))
        ]
        return _cut(" ".join(parts).rstrip(), width)

    title = f"load levels (ms; out tok/s = {LEVEL_TPS}, as the page names it)"
    return [_cut(title, width), line(HEADER), *(line(c) for c in cells)]


# --- a run that measured nothing ------------------------------------------------------------------------
def measured(row: dict) -> bool:
    """A request that was served: not skipped, not failed, not a load level's own record."""
    return not row.get("skipped") and not _failed(row) and "level" not in (row.get("extra") or {})


def nothing_measured(rows: list[dict], backends: list[str]) -> str | None:
    """One line when no requested backend measured anything, None when something was measured: one backend
    skipped gives its reason whole (it ends with its fix: ``pip install ...``); several name the backends
    (each reason was printed as it was skipped, and is in env.json); a backend whose every request failed,
    its first error."""
    mine = [r for r in rows if r.get("backend") in backends]
    if any(measured(r) for r in mine):
        return None
    said: dict[str, str] = {}
    reasons: dict[str, str] = {}
    for name in backends:
        skipped = next((r["skipped"] for r in mine if r.get("backend") == name and r.get("skipped")), None)
        errors = [r["error"] for r in mine if r.get("backend") == name and _failed(r)]
        if errors:
            said[name] = f"{name}: every request failed (first: {_first_line(errors[0], SHORT)})"
        elif skipped:
            said[name], reasons[name] = f"{name} was skipped", _first_line(skipped)
        else:
            said[name] = f"{name} recorded nothing"
    if len(reasons) == len(backends) == 1:
        return f"nothing was measured: {backends[0]} was skipped: {reasons[backends[0]]}"
    if len(reasons) == len(backends):
        return (
            f"nothing was measured: every backend was skipped ({', '.join(backends)}: each reason is above)"
        )
    return "nothing was measured: " + "; ".join(said.values())
