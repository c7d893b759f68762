"""The H200 sittings' load lines (lab/h200/capacity_sitting.sh and the committed hf-server run) plan the
same requests at every closed-loop level they share, at the built-in scale: the check of
tests/workloads/test_load_same_mix.py, at a CPU's scale there, run on the lines the sittings queued."""

from __future__ import annotations

import json

import pytest
from test_serving_sitting import CAPACITY, HF_SERVER_RUN, studies

from llm_call_anatomy.harness.cli import parser
from llm_call_anatomy.workloads.catalog import read_builtin
from llm_call_anatomy.workloads.overrides import apply
from tests.workloads.test_load_same_mix import levels, plan_of


@pytest.mark.slow
def test_the_h200_sittings_lines_plan_the_same_requests_at_full_scale(renderer):
    """The ``--load`` of every load study the H200 sittings queue (capacity_sitting.sh, whose session a
    runs vllm-server at the committed sglang-server run's line and whose session d runs both servers at the
    in-process capacity runs' line) and the committed hf-server run's, planned at the built-in scale: at every
    closed-loop level two of them share, the fixed shape's requests are equal, and the sessions' are equal
    where ``users`` and ``max_turns`` are (the HF mix's are not: fewer turns)."""
    hf_server = json.loads(HF_SERVER_RUN.read_text())["argv"]
    hf_mix = hf_server[hf_server.index("--load") + 1]
    loads = {hf_mix}
    capacity_line: dict[str, set[str]] = {}  # the capacity runs' (h200-cap-*) --load -> their backends
    third_start = None  # session g's third sglang-server start: the capacity line's C = 128 levels alone
    for name, backend, flags in studies(CAPACITY):
        args = parser("compare.py").parse_args(["--backend", backend, *flags])
        if args.workloads == "load":
            loads.add(args.load)
            if name.startswith("h200-cap-"):
                capacity_line.setdefault(args.load, set()).add(backend)
            if name == "h200-starts-sglang-server":
                third_start = args.load
    # the servers' built-in levels, the capacity runs', the HF mix, and session g's third sglang-server start
    assert len(loads) == 4 and third_start is not None, loads
    assert {"vllm", "sglang", "vllm-server", "sglang-server"} <= next(
        b for b in capacity_line.values() if "vllm" in b
    )  # session d's servers plan the in-process capacity runs' requests
    plans = {load: levels(plan_of(renderer, load)) for load in sorted(loads)}
    specs = {load: apply(read_builtin(["load"]), {"--load": load}) for load in loads}
    ordered = sorted(loads)
    for i, a in enumerate(ordered):
        for b in ordered[i + 1 :]:
            sessions_alike = {(s.users, s.max_turns) for s in specs[a] + specs[b] if s.shape == "sessions"}
            shared = [k for k in plans[a] if k in plans[b] and "/C=" in k[0]]
            assert shared or {a, b} == {third_start, hf_mix}, (a, b)  # C = 128 alone: not in the HF mix
            for key in shared:
                same = not key[0].startswith("load-sessions/") or len(sessions_alike) == 1
                assert (plans[a][key] == plans[b][key]) == same, (a, b, key)
