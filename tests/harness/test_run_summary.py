"""What a run says at its end (#43): one line a load level within the terminal's width, and a run that
measured nothing (every backend skipped, or every request failed) exits 1 with a last line that says so."""

from __future__ import annotations

import importlib.util

import pytest

from llm_call_anatomy.harness.run_summary import load_levels, load_table, nothing_measured
from tests.conftest import compare


def request(backend="hf", case="C=2", c=2, submit=0.0, finish=1.0, ttft=100.0, tpot=10.0, tokens=8, **kw):
    return {
        "backend": backend,
        "engine_start": 0,
        "workload": "load-fixed",
        "mode": "S=0",
        "case": case,
        "rep": 0,
        "load_concurrency": c,
        "submit_s": submit,
        "finish_s": finish,
        "ttft_ms": ttft,
        "decode_ms_per_token": tpot,
        "output_tokens": tokens,
        "error": None,
        "skipped": None,
        **kw,
    }


def level_record(backend="hf", case="C=2", c=2, **facts):
    return {"backend": backend, "workload": "load-fixed", "mode": "S=0", "case": case, "rep": None,
            "load_concurrency": c, "extra": {"level": {"think_time_s": 0.0, **facts}}}  # fmt: skip


LEVEL = [
    request(submit=0.0, finish=1.0, ttft=100.0, tpot=10.0),
    request(submit=0.0, finish=1.5, ttft=200.0, tpot=12.0),
    request(submit=1.0, finish=2.0, ttft=300.0, tpot=14.0),
    request(submit=1.5, finish=1.6, error="HTTP 500", ttft=None, tpot=None, tokens=None),
    level_record(),
]


def test_a_level_is_one_line_of_its_whole_window():
    (level,) = load_levels(LEVEL)
    assert level["variant"] == "load-fixed/S=0" and level["level"] == "closed C=2"
    assert level["output_tps"] == pytest.approx(24 / 2.0)  # 3 served x 8 tokens over 0..2 s
    assert level["ttft_p50"] == 200.0 and level["ttft_p90"] == pytest.approx(280.0)
    assert level["tpot_p50"] == 12.0 and (level["errors"], level["requests"]) == (1, 4)
    title, header, line = load_table(LEVEL, width=80)
    assert header.split() == ["backend", "variant", "level", "out", "tok/s", "TTFT", "p50", "TTFT", "p90",
                              "TPOT", "p50", "errors"]  # fmt: skip
    assert line.split() == ["hf", "load-fixed/S=0", "closed", "C=2", "12.0", "200.0", "280.0", "12.0", "1/4"]
    assert "ms" in title


def test_the_level_kind_is_the_page_s_and_starts_add_their_windows():
    think = [request(c=4, case="C=4", user=i, submit=i * 0.5, finish=i * 0.5 + 1) for i in range(4)]
    think.append(level_record(case="C=4", c=4, think_time_s=30.0, think="exponential"))
    assert load_levels(think)[0]["level"] == "U=4 users, think 30 s (exponential)"
    rate = [{**request(c=None, case="rate=4"), "load_rate_rps": 4.0}, {**level_record(case="rate=4", c=None),
            "load_rate_rps": 4.0, "extra": {"level": {"arrival": "poisson", "duration_s": 60}}}]  # fmt: skip
    assert load_levels(rate)[0]["level"] == "open 4 req/s (poisson, 60 s)"
    two = [request(), request(engine_start=1, submit=5.0, finish=6.0)]
    assert load_levels(two)[0]["output_tps"] == pytest.approx(16 / 2.0)  # 1 s + 1 s, not 0..6 s


@pytest.mark.parametrize("width", [80, 64])
def test_every_line_fits_the_terminal(width):
    rows = [
        request(workload="a-very-long-workload-name-from-a-users-file", mode="sessions-with-a-long-mode"),
        {**level_record(), "workload": "a-very-long-workload-name-from-a-users-file",
         "mode": "sessions-with-a-long-mode"},
        *LEVEL,
    ]  # fmt: skip
    lines = load_table(rows, width=width)
    assert len(lines) == 4 and all(len(line) <= width for line in lines)
    assert "…" in lines[2]  # the long variant is cut, the figures are whole
    assert lines[3].endswith("1/4")


def test_no_load_no_lines_and_other_backends_left_out():
    assert load_table([{"backend": "hf", "workload": "json", "ttft_ms": 5.0}]) == []
    assert load_table(LEVEL, backends=["vllm"]) == []


def test_nothing_measured_says_why_in_one_line():
    why = "openai is not installed here (httpx): pip install 'llm-call-anatomy[openai]'"
    skipped = {"backend": "openai", "workload": "json", "skipped": why}
    assert nothing_measured([skipped], ["openai"]) == f"nothing was measured: openai was skipped: {why}"
    two = [skipped, {**skipped, "backend": "vllm", "skipped": "vllm cannot be imported here"}]
    assert nothing_measured(two, ["openai", "vllm"]) == (
        "nothing was measured: every backend was skipped (openai, vllm: each reason is above)"
    )
    failed = [r for r in LEVEL if r.get("rep") is not None]
    failed = [{**r, "error": "HTTP 500\nbody"} for r in failed] + [
        LEVEL[-1]
    ]  # the level record is no request
    said = nothing_measured([skipped, *failed], ["openai", "hf"])
    assert said == "nothing was measured: openai was skipped; hf: every request failed (first: HTTP 500)"
    assert "\n" not in said
    assert nothing_measured([skipped, *LEVEL], ["openai", "hf"]) is None  # hf measured something
    assert nothing_measured(LEVEL, ["hf"]) is None


@pytest.mark.skipif(importlib.util.find_spec("sglang") is not None, reason="sglang is installed here")
def test_a_run_whose_every_backend_was_skipped_exits_1_and_says_so_last(tmp_path):
    proc = compare("--backend", "sglang", "--model", "tiny", "--workloads", "template", "--repeats", "1",
                   "--out", str(tmp_path / "run"), "--no-report", check=False, timeout=300)  # fmt: skip
    assert proc.returncode == 1, proc.stderr[-3000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert last == (
        "compare.py: nothing was measured: sglang was skipped: sglang is not installed here (sglang): "
        "pip install 'llm-call-anatomy[sglang]' (exit 1)"
    )


@pytest.mark.slow
def test_a_load_run_ends_with_one_line_a_level(tmp_path):
    proc = compare("--backend", "hf", "--model", "tiny", "--workloads", "load", "--repeats", "1",
                   "--out", str(tmp_path / "run"), "--no-report", env=None, timeout=600)  # fmt: skip
    lines = proc.stdout.strip().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("load levels ("))
    table = lines[start + 2 :]
    assert (
        lines[start + 1].startswith("backend variant") and len(table) == 6
    )  # sessions, S=0, S=160: C=1, C=4
    assert all(line.startswith("hf ") and "closed C=" in line and len(line) <= 80 for line in table)
    assert all(line.split()[-1] == "0" for line in table)  # no errors
