"""--dp and --router: the flag checks (one line, exit 2 before anything runs) and what --resume must match."""

from __future__ import annotations

import pytest

from llm_call_anatomy.harness.cli_checks import UsageError
from llm_call_anatomy.harness.parallel_args import check_parallel
from llm_call_anatomy.harness.rundir import settings_diff
from tests.conftest import compare
from tests.harness.test_cli import one_line_error


@pytest.mark.parametrize(
    ("dp", "tp", "router", "names", "device", "gpus", "says"),
    [
        (0, 1, "internal", ["sglang-server"], "cuda", 2, "at least 1"),
        (1, 1, "cache_aware", ["sglang-server"], "cuda", 2, "one replica"),
        (2, 1, "cache_aware", ["vllm-server"], "cuda", 2, "SGLang's router"),
        (2, 1, "round_robin", ["sglang-server", "vllm-server"], "cuda", 2, "alone"),
        (2, 1, "internal", ["sglang-server", "hf"], "cuda", 2, "hf"),
        (2, 1, "internal", ["vllm"], "cuda", 2, "vllm-server"),
        (2, 1, "internal", ["sglang"], "cpu", 0, "CPU"),
        (2, 1, "internal", ["vllm-server"], "cuda", 1, "2 GPUs"),
        (2, 2, "internal", ["sglang-server"], "cuda", 2, "4 GPUs"),
    ],
)
def test_refused(dp, tp, router, names, device, gpus, says) -> None:
    with pytest.raises(UsageError, match=says):
        check_parallel(dp, tp, router, names, device, cuda_devices=gpus)


@pytest.mark.parametrize(
    ("dp", "tp", "router", "names", "device", "gpus"),
    [
        (1, 1, "internal", ["hf", "vllm"], "cpu", 0),  # one replica: nothing to check
        (2, 1, "internal", ["vllm-server", "sglang-server", "sglang"], "cuda", 2),
        (2, 1, "cache_aware", ["sglang-server"], "cuda", 2),
        (2, 2, "round_robin", ["sglang-server"], "cuda", 4),
    ],
)
def test_accepted(dp, tp, router, names, device, gpus) -> None:
    check_parallel(dp, tp, router, names, device, cuda_devices=gpus)


def test_the_cli_refuses_dp_on_a_cpu_before_anything_runs(tmp_path) -> None:
    out = tmp_path / "run"
    proc = compare(
        "--backend",
        "sglang-server",
        "--device",
        "cpu",
        "--dp",
        "2",
        "--out",
        str(out),
        check=False,
        timeout=120,
    )
    assert "--dp 2 on a CPU" in one_line_error(proc)
    assert not out.exists()


def test_the_cli_refuses_a_router_without_replicas(tmp_path) -> None:
    proc = compare(
        "--backend",
        "sglang-server",
        "--router",
        "cache_aware",
        "--out",
        str(tmp_path / "r"),
        check=False,
        timeout=120,
    )
    assert "one replica" in one_line_error(proc)


@pytest.mark.parametrize(
    ("old", "new"),
    [({"dp": 2}, {"dp": 1}), ({"router": "cache_aware"}, {"router": "round_robin"}), ({}, {"dp": 2})],
)
def test_resume_must_match_dp_and_router(old, new) -> None:
    base = {"model_label": "tiny", "dp": 1, "router": "internal"}
    previous = {k: v for k, v in {**base, **old}.items() if k in base or k in old}
    if not old:  # a run made before --dp existed: its run.json names neither
        previous = {"model_label": "tiny"}
    assert settings_diff(previous, {**base, **new})
    assert not settings_diff(previous, {**base, **(old or {"dp": 1})})
