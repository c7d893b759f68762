"""The real ``hf-server`` (``transformers serve --continuous-batching``, launched by the harness) on the tiny
model (CPU), under load: its streamed text is timed per chunk and its own token count is kept."""

from __future__ import annotations

import importlib.util

import pytest

from tests.conftest import compare, records

pytestmark = pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ("fastapi", "uvicorn")),
    reason="transformers serve needs fastapi and uvicorn (transformers[serving])",
)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("hfserver") / "run"
    compare("--backend", "hf-server", "--workloads", "load,template", "--out", str(out), "--no-report")
    return out, records(out)


def test_requests_in_flight_are_batched_by_the_server_and_counted_as_it_counts_them(run):
    _, rows = run
    level = sorted(
        (
            r
            for r in rows
            if r["workload"] == "load-fixed"
            and r["mode"] == "S=0"
            and r["case"] == "C=4"
            and r["rep"] is not None
        ),
        key=lambda r: r["submit_s"],
    )
    assert len(level) == 4 and all(r["error"] is None for r in level)
    assert all(
        r["output_tokens"] == 8 and r["finish_reason"] == "length" for r in level
    )  # max_tokens, the CPU scale
    assert all(r["extra"]["output_ids_from"] == "retokenized-text" for r in level)
    assert max(r["submit_s"] for r in level) < min(r["finish_s"] for r in level)  # all four in flight at once
    for r in level:
        assert r["submit_s"] < r["first_token_s"] <= r["finish_s"] and r["token_times_s"] == sorted(
            r["token_times_s"]
        )


def test_single_requests_skip_and_the_server_log_is_kept(run):
    out, rows = run
    skipped = [r for r in rows if r["workload"] == "template"]
    assert skipped and all(r["skipped"] == "hf-server does not support single requests" for r in skipped)
    log = (out / "logs" / "hf-server.log").read_text()
    assert "continuous" in log.lower() or "Uvicorn" in log
