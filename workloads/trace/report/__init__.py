"""The trace kind's report half (a production trace replayed): its analysis (``analysis``) and the
:class:`ReportKind` the registry finds here (``reports.kinds``).

The section shows the trace window's own shape, how much of its traffic each backend holds per target
(the fastest time scale that passed, and the first that did not), and per backend and time scale the
level's latency, throughput, submit lag, prefix reuse (the trace's beside the engine's) and verdicts.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from llm_call_anatomy.contract.traffic_classes import ALL, targets_of_classes
from llm_call_anatomy.reports.kinds import ReportKind
from llm_call_anatomy.reports.views import Table, h3, note, p, table
from llm_call_anatomy.workloads.trace.report.analysis import analyse, targets_of


def _analyse(rows: pd.DataFrame, ctx: Any, name: str) -> dict[str, Any]:  # one workload's rows
    return analyse(rows, targets_of(ctx.ds.envs))


def _f(x: Any, digits: int = 0, unit: str = "") -> str:
    if x is None or (isinstance(x, float) and x != x):
        return "–"
    return f"{x:,.{digits}f}{unit}"


def _pc(x: Any) -> str:
    return "–" if x is None or (isinstance(x, float) and x != x) else f"{100 * x:.1f} %"


def _word(x: Any) -> str:
    return x if isinstance(x, str) else "–"


def _scale(k: Any) -> str:
    return "–" if k is None or (isinstance(k, float) and k != k) else f"{k:.3g}×"


def _form(s: dict[str, Any]) -> str:
    """How the trace gives its prompts: blocks of hash ids, lengths alone, or a transcript's messages."""
    if s.get("form") == "transcript":
        return f"transcript, {s.get('sessions')} sessions, rendered by the chat template"
    if s.get("form") == "lengths":
        return "lengths only, nothing shared"
    return f"blocks of {s.get('block_size')}"


def _unit(s: dict[str, Any]) -> str:
    return " of tokens" if s.get("form") == "transcript" else " of blocks" if s.get("blocks") else ""


def shape_table(shape: dict[str, dict[str, Any]]) -> Table:
    """The trace window of each workload: what was sent, what dropped, its lengths, arrivals and reuse."""
    t = Table(
        [
            "workload",
            "trace",
            "window",
            "requests sent",
            "dropped",
            "input p50 / p99",
            "output p50 / p99",
            "arrivals/min",
            "prefix seen before",
        ],
        numeric={3, 4, 7, 8},
    )
    for w, s in shape.items():
        t.add(
            [
                w,
                f"{s.get('source')} ({_form(s)})",
                f"{_f(s.get('window_s'), 0)} s from {_f(s.get('start_s'), 0)} s, every {s.get('every_nth')}",
                f"{s.get('sent')} of {s.get('in_window')}",
                f"{s.get('dropped')} ({s.get('drop_rule')})",
                f"{_f(s.get('input_p50'))} / {_f(s.get('input_p99'))}",
                f"{_f(s.get('output_p50'))} / {_f(s.get('output_p99'))}"
                + (f" (cap {s['output_cap']})" if s.get("output_cap") else ""),
                _f(s.get("arrivals_per_min"), 1),
                _pc(s.get("seen_before_share")) + _unit(s),
            ]
        )
    return t


def holds_text(r: dict[str, Any]) -> str:
    """The bracket of time scales a backend holds, in words: ``2.83× – 3.54×`` (passes at the first, misses at
    the second), ``at least 8×`` (every scale passed up to the search's ceiling), ``less than 0.5×``."""
    lo, hi, bound = r["holds"], r["next_up"], r["bound"]
    undecided = ", ".join(_scale(x) for x in r.get("undecided") or ())
    if lo is None:
        return f"less than {_scale(hi)}" if hi is not None else "none measured"
    if hi is None:
        tail = "" if bound == "floor" else " (no miss found before the search stopped)"
        return f"at least {_scale(lo)}{tail}" + (f", undecided at {undecided}" if undecided else "")
    return f"{_scale(lo)} – {_scale(hi)}" + (f", undecided at {undecided}" if undecided else "")


def gpus_text(low: Any, high: Any) -> str:
    """The GPUs for the trace at 1x, from the bracket (``analysis.gpus_at_1x``)."""
    low = None if low is None or low != low else int(low)
    high = None if high is None or high != high else int(high)
    if low is None and high is None:
        return "–"
    if high is None:
        return f"at least {low}"
    if low is None or low == high:
        return f"{high}" if low == high else f"at most {high}"
    return f"{low} – {high}"


def capacity_table(caps: pd.DataFrame) -> Table:
    """Per backend, workload and target (and traffic class): the bracket the traffic holds, its rate at the
    last pass, the first scale not passed and why, and the GPUs for the trace at 1x."""
    t = Table(
        [
            "backend",
            "workload",
            "target",
            "holds (× the trace's traffic)",
            "at the last pass: req/s, input tok/s",
            "first not passed",
            "GPUs for the trace at 1×",
        ]
    )
    for r in caps.to_dict("records"):
        r = {k: None if isinstance(v, float) and v != v else v for k, v in r.items()}  # NaN: pandas' None
        nxt = f"{_scale(r['next_up'])} ({r['why']})" if r["next_up"] is not None else "every scale run passed"
        t.add(
            [
                r["backend"],
                r["workload"],
                r["target"],
                holds_text(r),
                f"{_f(r['rps'], 2)}, {_f(r['input_tps'], 0)}" if r["holds"] is not None else "–",
                nxt,
                gpus_text(r["gpus_low"], r["gpus_high"]),
            ]
        )
    return t


def levels_table(levels: pd.DataFrame, targets: tuple) -> Table:
    """One row per backend and time scale: the level's figures and each target's decision."""
    names = [t.name for t in targets if not t.throughput_only]
    classes = [c.removeprefix("class:") for c in levels.columns if c.startswith("class:")]
    t = Table(
        [
            "backend",
            "time scale",
            "req/s",
            "requests (failed)",
            "out tok/s",
            "in tok/s",
            "TTFT p50 / p99 ms",
            "TPOT p50 / p99 ms",
            "submit lag p99 ms",
            "reuse: trace / engine",
            *names,
            *(c if c == ALL else f"{c} requests" for c in classes),
        ],
        numeric={2, 3, 4, 5, 6, 7, 8},
    )
    for r in levels.sort_values(["backend", "time_scale"]).to_dict("records"):
        t.add(
            [
                r["backend"],
                _scale(r["time_scale"]),
                _f(r["rate_rps"], 2),
                f"{r['requests']} ({r['failed']})",
                _f(r["output_tps"], 1),
                _f(r["input_tps"], 0),
                f"{_f(r['ttft_p50'])} / {_f(r['ttft_p99'])}",
                f"{_f(r['tpot_p50'], 1)} / {_f(r['tpot_p99'], 1)}",
                _f(r["lag_p99_ms"], 1),
                f"{_pc(r['reuse_trace'])} / {_pc(r['reuse_engine'])}",
                *(r.get(f"verdict:{n}") or "–" for n in names),
                *(_word(r.get(f"class:{c}")) for c in classes),
            ]
        )
    return t


PROMPTS = {  # how each form of trace gives its prompts, in words
    "blocks": "the same hash id is the same block of token ids, so a prefix cache can reuse exactly what the "
    "trace reuses",
    "lengths": "a trace of lengths alone shares no prefix (each prompt is drawn for its request)",
    "transcript": "a transcript's prompt is its session's history and its own messages, rendered by the "
    "model's chat template, so a prefix cache can reuse what the log's sessions share",
}


def blocks(section: Any, slots: Any, report: Any) -> list:  # no charts yet
    """The section: the trace's shape, the capacity per target, the levels."""
    d = section.data
    out = [h3("The trace"), table(shape_table(d["shape"]))]
    forms = {s.get("form") or "blocks" for s in d["shape"].values()}  # older records: blocks
    out.append(
        p(
            "Each time scale k is one open-loop level: request i is sent (timestamp − window start) ÷ k "
            "seconds after the level starts; "
            + "; ".join(PROMPTS[f] for f in PROMPTS if f in forms)
            + ". Throughput over the steady window (first to last submit); a failed request is a miss.",
            muted=True,
        )
    )
    if not d["capacity"].empty:
        out += [
            h3("How much of this traffic each backend holds"),
            table(capacity_table(d["capacity"])),
            p(
                "Holds: the bracket [last pass, first miss] of the time scale (k× the trace's rate), planned "
                "scales and those the capacity search added (--trace search_levels=N) alike. GPUs for the "
                "trace at 1×: n = ⌈1/k⌉ over that bracket, if the traffic splits evenly across GPUs (by "
                "session, each keeping its prefix reuse) and each GPU's share behaves as the trace slowed "
                "down: an estimate from one GPU, not a measurement on more.",
                muted=True,
            ),
        ]
    for w, s in d["shape"].items():  # mixed traffic: each class, its requests and its target
        mapping = targets_of_classes(s, d["targets"])
        if mapping:
            counts = s.get("class_counts") or {}
            out.append(
                p(
                    f"{w}: traffic classes, each judged on its own requests against its own target: "
                    + "; ".join(
                        f"{c} ({counts.get(c, 0)} requests) at "
                        + (t.label() if t else "no target of that name (class_targets names one)")
                        for c, t in mapping.items()
                    )
                    + f". The capacity search brackets each class at its own target (a target no class "
                    f"has: over all requests); '{ALL}' is bracketed by the scales it measured.",
                    muted=True,
                )
            )
    if not d["levels"].empty:
        out += [h3("Per time scale"), table(levels_table(d["levels"], d["targets"]))]
        lacking = d["levels"][d["levels"]["no_steady"].notna()]
        if len(lacking):
            out.append(
                note(f"No steady throughput at {len(lacking)} level(s): {lacking['no_steady'].iloc[0]}")
            )
    return out


KIND = ReportKind(
    "trace",
    _analyse,
    blocks=blocks,
    sees_failures=True,
    agreement=False,
    steady_state=True,
)
