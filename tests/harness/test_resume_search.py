"""``--resume`` redoes a capacity-search level whose requests failed (issue 44, item 1): a server that dies
inside the searched C=6, or answers four of its requests with HTTP 500, leaves a run that exits 1; the
resume against the server brought back healthy runs C=6 again (and every other level with failures,
searched or planned), exits 0 with no error left, and the capacity is the uninterrupted run's C=6.

The server's first token waits 20 ms x the completions in flight, plus 600 ms once more than 6 are: at
TTFT p90 <= 500 ms the knee is C=6 with wide margins. Planned levels 1, 2, 8 and no warm-ups; the search adds
4, 6 (met), then 7 (missed): 16 requests each, so C=6's completions are numbers 65 to 80 at the server.
"""

from __future__ import annotations

import pytest

from llm_call_anatomy.contract import capacity as cap
from llm_call_anatomy.contract.level_stats import level_stats
from llm_call_anatomy.contract.slo import parse_target
from llm_call_anatomy.harness.load_search import measured_levels
from llm_call_anatomy.harness.records import read_records
from tests.conftest import compare
from tests.harness.faulty_server import Faults, faulty_server

pytestmark = [pytest.mark.openai, pytest.mark.slow]  # two compare.py runs of six levels each

TARGET = "t:ttft_p90_ms=500"
HEALTHY = {"ttft_unit_s": 0.02, "knee": 6, "saturated_s": 0.6}
SPEC = """
workloads:
  - name: srch
    kind: load
    shape: fixed
    prompt_tokens: 64
    shared_prefix_tokens: [0]
    output_tokens: 4
    requests: 16
    warmup_requests: 0
    levels: [1, 2, 8]
    rates: []
    search_levels: 3
    search_max: 8
"""


def run(url: str, spec, out, *extra: str):
    return compare(
        "--backend", "openai", "--base-url", url, "--model", "tiny", "--workload-file", str(spec),
        "--slo", TARGET, "--request-timeout", "30", "--out", str(out), "--no-report", *extra,
        timeout=400, check=False,
    )  # fmt: skip


def capacity_of(out) -> cap.Capacity:
    target = parse_target(TARGET)
    judged = {
        x: (cap.judge(target, level_stats(rows, x)), facts)
        for x, (rows, facts) in measured_levels(out, "openai", 0, "srch", "S=0", "closed").items()
    }
    return cap.capacity(target, "closed", judged, 8)


@pytest.mark.parametrize(
    "fault", [{"die_after": 70}, {"fail_from": 70, "fail_count": 4}], ids=["death", "http-500"]
)
def test_a_resume_redoes_a_searched_level_with_failures(tmp_path, fault):
    spec, out = tmp_path / "srch.yaml", tmp_path / "run"
    spec.write_text(SPEC)
    with faulty_server(Faults(**HEALTHY, **fault)) as server:
        first = run(server.url, spec, out)
        assert first.returncode == 1, first.stderr[-3000:]
        failed = {r["case"] for r in read_records(out) if r["error"]}
        assert "C=6" in failed
        server.restart(Faults(**HEALTHY))
        sent = server.completions
        again = run(server.url, spec, out, "--resume")
        assert again.returncode == 0, again.stderr[-3000:]
        assert server.completions > sent  # the resume ran the failed levels again
    rows = read_records(out)
    assert [(r["case"], r["error"]) for r in rows if r["error"]] == []  # no error left
    assert {r["case"] for r in rows} >= failed  # every failed level measured again
    found = capacity_of(out)
    assert found.value == 6, found  # the uninterrupted run's capacity
