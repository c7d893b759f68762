"""Assemble the report: run every analysis over a :class:`~reports.runs.Dataset`, per workload.

The result (:class:`~reports.model.Report`) is plain data the page renders; workloads are labelled by their
name and analysed by their kind, so user workload files get the same sections as built-ins,
and a report works with any subset of workloads.
"""

from __future__ import annotations

import pandas as pd

from llm_call_anatomy.contract.price import GpuPrice, price_from
from llm_call_anatomy.reports import kinds, roofline
from llm_call_anatomy.reports.analysis import agreement, anatomy, caveats, claims, status, summary
from llm_call_anatomy.reports.kvcache import block_size
from llm_call_anatomy.reports.model import Report, Section
from llm_call_anatomy.reports.runs import Dataset
from llm_call_anatomy.reports.stats import num


def random_weights_note(ds: Dataset) -> str | None:
    """Why quality figures do not hold, when the weights are random (env.json or the records say so)."""
    for run_id, env in ds.envs.items():
        model = env.get("model") or {}
        if model.get("random_weights"):
            return f"run {run_id}: the weights of {model.get('label') or 'the model'} are random"
        if model.get("builtin") and model.get("label") == "tiny":
            return f"run {run_id}: the built-in tiny model has random weights"
    if ds.records["random_weights"].eq(True).any():
        return "the records say the weights are random"
    return None


SMALL_MODEL = 1e9  # parameters: below this, a decode step is launch-bound on any GPU


def model_notes(ds: Dataset) -> list[str]:
    """What a small real model's figures mean: latencies are launch-bound, quality is this model's own."""
    out = []
    for env in ds.envs.values():
        model = env.get("model") or {}
        params = num(model.get("params"))
        if model.get("random_weights") or params is None or params >= SMALL_MODEL:
            continue
        label = model.get("label") or "the model"
        out.append(
            f"{label} has {params / 1e6:.0f} M parameters. Latency: a step moves so few weight "
            "bytes that every backend is bound by per-call and per-step overhead (Python, "
            "kernel launches, scheduling), not by memory bandwidth; read these latencies as "
            "each stack's overhead, and a large model's run (the Qwen3-8B-shape study) for the "
            "latency story. Quality (JSON validity, fence ranks, clean answers, agreement) is "
            f"{label}'s, a small instruct model's: it says nothing about Qwen3-8B's answers."
        )
    return list(dict.fromkeys(out))


def _kinds(df: pd.DataFrame) -> dict[str, str | None]:
    kinds: dict[str, str | None] = {}
    for wl, kind in zip(df["workload"], df["kind"], strict=True):
        if not isinstance(wl, str):
            continue
        if kinds.get(wl) is None:
            kinds[wl] = kind if isinstance(kind, str) else None
    return kinds


def assemble(
    ds: Dataset,
    bandwidth_gbps: float | None = None,
    tflops: float | None = None,
    copy_gbps: float | None = None,
    slo: dict[str, float] | None = None,
    gpu_hour_usd: GpuPrice | float | None = None,  # a number: one price (contract.price)
    targets: tuple | None = None,
    size: object = None,
) -> Report:
    """The whole report of a dataset: each workload's section analysed by its kind (``reports.kinds``), the
    agreement across backends, the backends' status, then the caveats, summary rows and claims derived from
    it."""
    df, measured = ds.records, ds.measured()
    roofs = {}
    for b in ds.backends:
        process = ds.env_of(b).get("process") or {}
        roofs[b] = roofline.roof_for(
            b,
            process.get("gpu"),
            ds.run_env_of(b),
            bandwidth_gbps,
            tflops,
            known="gpu" in process,
            copy_gbps=copy_gbps,
        )
    blocks = {b: block_size(ds.env_of(b).get("engine") or {}) for b in ds.backends}
    sections = []
    ctx = kinds.Context(ds, roofs, blocks, slo, price_from(gpu_hour_usd), targets, size)
    attempted = df[df["skipped"].isna()]
    for name, kind in _kinds(df).items():
        report_kind = kinds.report_kind(kind) if kind else None
        source = attempted if report_kind is not None and report_kind.sees_failures else measured
        rows = source[source["workload"] == name]
        present = [b for b in ds.backends if b in set(rows["backend"])]
        section = Section(name, kind, present, status.workload_notes(df, name))
        if (
            present and report_kind is not None
        ):  # none present: every request failed or was skipped (the notes say why)
            section.data = report_kind.analyse(rows, ctx, name)
        sections.append(section)
    # agreement compares one request's tokens across backends; a load level's requests are its own section's
    single = measured[~measured["kind"].isin(kinds.without_agreement())]
    cases = agreement.per_case(single, ds.backends)
    flat = agreement.flat_backends(single)
    cached = agreement.cached_vs_full(single)
    report = Report(
        ds,
        status.backend_status(df, ds.backends, ds.planned_levels()),
        sections,
        cases,
        agreement.summary(cases, flat),
        status.server_timings(measured),
        roofs,
        random_weights_note(ds),
        [],
        [],
        agreement_cached=cached,
        agreement_cached_summary=agreement.summary(cached, flat),
        flat_logits=flat,
        model_notes=model_notes(ds),
        anatomy=anatomy.calls(measured, ds.backends),
    )
    report.caveats = caveats.derive(report)
    report.jobs = summary.jobs(report)
    report.claims = claims.check_all(report)
    return report
