"""The report halves of the four original kinds (conversation, sweep, json, template), registered in ``reports.kinds``.

Each entry points at the kind's analysis (``reports.analysis.<kind>`` through ``assemble``'s data
builders), charts (``reports.charts``), view (``reports.views.<kind>``), caveats and summary rows.
Imports happen inside the functions so that registering costs nothing.
"""

from __future__ import annotations

from reports.kinds import ReportKind


def _conversation_data(rows, ctx, name):
    from reports.assemble import conversation_data, stability

    return conversation_data(rows, ctx.blocks, stability(ctx.ds, name))


def _sweep_data(rows, ctx, name):  # noqa: ARG001
    from reports.assemble import sweep_data

    return sweep_data(rows, ctx.roofs)


def _json_data(rows, ctx, name):  # noqa: ARG001
    from reports.assemble import json_data, random_weights_note

    return json_data(rows, random_weights=random_weights_note(ctx.ds) is not None)


def _template_data(rows, ctx, name):  # noqa: ARG001
    from reports.assemble import template_data

    return template_data(rows)


def _charts():
    from reports import charts

    return charts


def _view(name):
    import importlib

    return importlib.import_module(f"reports.views.{name}")


def _caveats():
    from reports.analysis import caveats

    return caveats


def _summary():
    from reports.analysis import summary

    return summary


def _quality(report):
    return "weights are random: not a quality figure" if report.random_weights else None


CONVERSATION = ReportKind(
    "conversation", _conversation_data,
    blocks=lambda s, slots, report: _view("conversation").blocks(s, slots),
    charts={"ttft": (lambda d, r: _charts().conversation_ttft(d["turns"]), "TTFT per turn")},
    caveats=lambda s, report: _caveats().conversation(s),
    jobs=lambda s, rows, report: _summary().conversation_jobs(s, rows),
    cached_vs_full=True,
)
SWEEP = ReportKind(
    "sweep", _sweep_data,
    blocks=lambda s, slots, report: _view("sweep").blocks(s, slots, roofs=report.roofs),
    charts={
        "prefill": (lambda d, r: _charts().sweep_phase(d["lengths"], r.roofs, "prefill", r.ds.backends), "prefill vs N"),
        "decode": (lambda d, r: _charts().sweep_phase(d["lengths"], r.roofs, "decode", r.ds.backends), "decode vs N"),
        "decode_x": (lambda d, r: _charts().decode_vs_floor(d["lengths"], d["vs_roof"], r.ds.backends),
                     "decode as a multiple of the floor"),
    },
    caveats=lambda s, report: _caveats().sweep(s, report),
    jobs=lambda s, rows, report: _summary().sweep_jobs(s, rows),
)
JSON = ReportKind(
    "json", _json_data,
    blocks=lambda s, slots, report: _view("json_extraction").blocks(s, slots),
    charts={"pass": (lambda d, r: _charts().json_pass(d["rates"]), "JSON pass rate vs temperature")},
    caveats=lambda s, report: _caveats().json_workload(s),
    jobs=lambda s, rows, report: _summary().json_jobs(s, _quality(report)),
    quality_note="Random weights: not a quality figure. Validity without a grammar, correctness, the step-0 candidates "
                 "and the seed's claims below describe noise; the grammar's guarantee of form and its cost per token still hold.",
)
TEMPLATE = ReportKind(
    "template", _template_data,
    blocks=lambda s, slots, report: _view("template").blocks(s, slots),
    charts={"attention": (lambda d, r: _charts().attention(d["attention"], r.ds.backends), "attention on special tokens")},
    jobs=lambda s, rows, report: [_summary().template_job(s, _quality(report))],
    quality_note="Random weights: not a quality figure. Clean answers and attention on special tokens describe noise.",
)
