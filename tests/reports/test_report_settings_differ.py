"""issue 43: columns that differ in settings (dtype, endpoint, KV pool...) are named before any ranking
between them, on the page and in the terminal's summary; columns that agree get no note."""

from __future__ import annotations

import html

from llm_call_anatomy.harness.summary_table import summary_table
from llm_call_anatomy.reports import build
from llm_call_anatomy.reports.assemble import assemble
from llm_call_anatomy.reports.export import plain, summary_rows
from llm_call_anatomy.reports.runs import read_runs
from tests.reports.records import sweep_records, write_run
from tests.reports.test_report_assemble import gpu_env, starts

DECODE = "Generating tokens (sweep)"


def run(tmp_path, name, backend, dtype, decode):
    rows = sweep_records(backend, 16.0, 0.01, decode)
    env = {**gpu_env([backend]), "dtype": dtype, "started": "2026-11-30T15:03:24+00:00", "git_commit": "c0"}
    return write_run(tmp_path / name, starts(rows, 0) + starts(rows, 1, 0.002), env)


def test_two_runs_that_differ_in_dtype_say_so_before_the_ranking(tmp_path):
    runs = [run(tmp_path, "a", "vllm", "bfloat16", 5.2), run(tmp_path, "b", "sglang", "float32", 4.0)]
    report = assemble(read_runs(runs))
    decode = next(j for j in report.jobs if j.job == DECODE)
    assert decode.best == "sglang"  # ranked, and so the note is needed
    assert decode.differs is not None and "dtype: sglang float32 vs vllm bfloat16" in decode.differs

    lines = summary_table(plain(summary_rows(report)), width=400)
    note = next(i for i, line in enumerate(lines) if "dtype: sglang float32 vs vllm bfloat16" in line)
    verdict = next(i for i, line in enumerate(lines) if line.startswith(f"{DECODE}: by "))
    assert note < verdict  # the terminal says it before the winner

    page = html.unescape(build(runs, tmp_path / "report.html").read_text())
    row = page[page.index(f"<td>{DECODE}</td>") :]
    assert row.index("dtype: sglang float32 vs vllm bfloat16") < row.index("<b>sglang</b> by")


def test_a_pair_that_differs_in_nothing_gets_no_note(tmp_path):
    runs = [run(tmp_path, "a", "vllm", "bfloat16", 5.2), run(tmp_path, "b", "sglang", "bfloat16", 4.0)]
    report = assemble(read_runs(runs))
    assert all(j.differs is None for j in report.jobs)
    assert not any("settings differ" in line for line in summary_table(plain(summary_rows(report)), 400))


def test_a_launched_server_s_dtype_and_endpoint_come_from_its_own_record(tmp_path):
    rows = sweep_records("hf", 16.0, 0.01, 5.2) + sweep_records("vllm-server", 16.0, 0.01, 4.0)
    env = gpu_env(["hf", "vllm-server"])
    env["dtype"] = "float32"
    env["backends"]["vllm-server"]["engine"] = {
        "base_url": "http://127.0.0.1:1/v1",
        "endpoint": "completions, streamed, prompt as token ids",
        "server_command": "python -m vllm.entrypoints.openai.api_server --dtype bfloat16",
    }
    report = assemble(read_runs([write_run(tmp_path / "r", starts(rows, 0) + starts(rows, 1, 0.002), env)]))
    decode = next(j for j in report.jobs if j.job == DECODE)
    assert "dtype: vllm-server bfloat16 vs hf float32" in decode.differs
    endpoint = "endpoint: vllm-server completions, streamed, prompt as token ids vs hf in process"
    assert endpoint in decode.differs


def pools(tmp_path, name, vllm_tokens, sglang_tokens):
    rows = sweep_records("vllm", 16.0, 0.01, 5.2) + sweep_records("sglang", 16.0, 0.01, 4.0)
    env = gpu_env(["vllm", "sglang"])
    for backend, tokens in (("vllm", vllm_tokens), ("sglang", sglang_tokens)):
        env["backends"][backend]["starts"] = [{"engine_start": 0, "kv_cache_tokens": tokens}]
    report = assemble(read_runs([write_run(tmp_path / name, starts(rows, 0) + starts(rows, 1, 0.002), env)]))
    return next(j for j in report.jobs if j.job == DECODE).differs or ""


def test_kv_pools_a_fraction_of_a_per_cent_apart_are_one_setting_and_pools_far_apart_are_named(tmp_path):
    """Two starts of one configuration size their pools from the memory free at the start (794,016 vs
    797,680 tokens on the H200): that is no setting that differs; 800,000 vs 400,000 is."""
    assert "KV pool" not in pools(tmp_path, "near", 797_680, 794_016)
    assert "KV pool: sglang 400,000 tokens vs vllm 800,000 tokens" in pools(tmp_path, "far", 800_000, 400_000)
