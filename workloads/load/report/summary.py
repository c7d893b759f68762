"""What the Load section adds to the rest of the report: its summary rows and its regression-gate figures.

The summary gets a row per variant with each backend's own peak output tokens/s (peaks at different
levels, so never ranked; backends that ran other requests, ``capacity.mix_classes``, in a
row of their own); the gate (``reports.gate``) gets each level's throughput, goodput and
median latencies, one run per level, so with no spread measured.
"""

from __future__ import annotations

from llm_call_anatomy.reports import fmt
from llm_call_anatomy.reports.analysis.figures import Figure
from llm_call_anatomy.reports.model import Job
from llm_call_anatomy.workloads.load.report.capacity import mix_classes
from llm_call_anatomy.workloads.load.report.labels import LEVEL_TPS
from llm_call_anatomy.workloads.load.report.mix_groups import by_class, mix_label


def jobs(section, report) -> list:
    """The Load section's summary rows: per variant, each backend's own peak output tok/s and the level it
    came at, failures noted; never ranked, since the peaks come at different levels. Backends that ran other
    requests than the variant's main group get a row of their own."""
    out = []
    classes = mix_classes(section.data["cap"]["steady"])
    for (w, m), whole in section.data["peaks"].groupby(["workload", "mode"], sort=False):
        for g in by_class(classes, w, m, whole):
            g = g.sort_values("peak_tps", ascending=False)
            values = [
                (
                    r["backend"],
                    f"{fmt.n(r['peak_tps'])} {LEVEL_TPS} at {r['peak_level']}"
                    + (f" ({r['peak_errors']} failed: every level had failures)" if r["peak_errors"] else ""),
                )
                for r in g.to_dict("records")
            ]
            out.append(
                Job(
                    f"Many users ({w} · {m}{mix_label(classes, w, m, g['backend'])})",
                    f"each backend's own peak {LEVEL_TPS} over its levels (levels differ: "
                    "compared at one level in the throughput row)",
                    values,
                    None,
                    "one backend: nothing to choose"
                    if len(values) < 2
                    else "peaks at different levels: not ranked",
                )
            )
    return out


# (levels column, figure, unit, which way is better): what the regression gate compares per level
GATED = (
    ("output_tps", "output tokens/s", "tok/s", "higher"),
    ("goodput_rps", "goodput (requests/s within the SLO)", "req/s", "higher"),
    ("ttft_p50", "TTFT p50", "ms", "lower"),
    ("itl_p50", "ITL p50", "ms", "lower"),
)


def figures(section, report) -> list:
    """Each level's throughput and median latencies as gate
    figures (one run per level: no spread measured)."""
    out = []
    for r in section.data["levels"].to_dict("records"):
        group = f"Load · {r['workload']} · {r['mode']} · {r['case']}"
        for col, label, unit, better in GATED:
            value = r[col]
            if value is not None and value == value:
                n = r["itl_n"] if col.startswith("itl") else r["requests"]
                out.append(Figure(group, label, r["backend"], float(value), unit, better, n=int(n)))
    return out
