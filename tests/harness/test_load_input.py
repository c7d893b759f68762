"""Load input that cannot run as meant stops with one line and exit 2 before anything runs (issue 26, item
11): no levels, no shared-prefix variant, a wait that never ends, a level given twice, --load renaming every
load, --load without a load workload; and (issue 44, items 9 and 10) a concurrency, search_max or request
count past its bound, two rates that print alike. And a level's ``seconds`` bounds its waits too (think
time, Poisson gaps)."""

from __future__ import annotations

import time

import pytest

from llm_call_anatomy.backends.load_level import run_level
from llm_call_anatomy.backends.load_loop import LoadSettings
from llm_call_anatomy.harness.cli import main
from tests.harness.fakes import echo_backend_class

FIXED = "shape=fixed,prompt_tokens=32,output_tokens=2,requests=2,rates=,levels=1"


@pytest.mark.parametrize(
    ("load", "said"),
    [
        ("levels=,rates=", "no load to run: levels and rates are both empty"),
        ("shared_prefix_tokens=", "shared_prefix_tokens is empty"),
        ("think_time_s=inf", "think_time_s inf: at most 3600 s"),
        ("rates=1e-9", "rate 1e-09/s: a mean gap between arrivals above 3600 s"),
        ("rates=inf", "rate inf/s"),
        ("levels=1:1", "levels: 1 is given twice: each value is one level, measured once"),
        ("shared_prefix_tokens=0:0", "shared_prefix_tokens: 0 is given twice"),
        ("name=x", "--load name=...: sets every load workload's name at once"),
        ("search_max=1000000", "search_max 1000000: at most 4096 requests in flight"),
        ("search_max=1e8", "search_max"),
        ("levels=5000", "levels 5000: at most 4096 requests in flight"),
        ("requests=100000000", "requests 100000000: at most 100000 requests a level"),
        ("rates=1.0000001:1.0000002", "two levels print alike as rate=1"),
    ],
)
def test_bad_load_input_is_one_line_and_exit_2(load, said, tmp_path, capsys):
    code = main(["--backend", "hf", "--workloads", "load", "--load", load, "--out", str(tmp_path / "run")])
    err = capsys.readouterr().err
    assert code == 2 and said in err, err
    assert len(err.strip().splitlines()) == 1 and err.startswith("compare.py: error: ")
    assert not (tmp_path / "run").exists()


def test_load_without_a_load_workload_is_refused(tmp_path, capsys):
    code = main(
        ["--backend", "hf", "--workloads", "template", "--load", "levels=1", "--out", str(tmp_path / "run")]
    )
    err = capsys.readouterr().err
    assert code == 2 and "--load: none of this run's workloads is a load workload" in err
    assert not (tmp_path / "run").exists()


def test_seconds_bounds_the_waits_of_a_level():
    from llm_call_anatomy.contract.adapter import BackendSettings, Request

    backend = echo_backend_class()(BackendSettings(model_path="none", model_label="none"))
    request = Request(prompt_ids=[1, 2, 3], max_new_tokens=2)
    started = time.perf_counter()
    run_level(backend, [[request, request]], LoadSettings(concurrency=1, think_time_s=30, seconds=0.3))
    run_level(backend, [[request], [request]], LoadSettings(rate_rps=0.001, seconds=0.3, seed=1))
    assert time.perf_counter() - started < 10  # both levels stop at their 0.3 s, not after 30 s or ~1000 s
