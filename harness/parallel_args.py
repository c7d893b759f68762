"""The two-GPU flags, ``--dp N`` and ``--router``, and their checks (one line, exit 2, before anything runs).

    --dp N          the engine's own data parallelism: N replicas of the model, each on --tp GPUs (vLLM
                    ``data_parallel_size`` / ``--data-parallel-size``, SGLang ``dp_size`` / ``--dp-size``)
    --router R      who spreads the requests over the replicas: ``internal`` (default: the engine's own
                    balancer, vLLM's DP coordinator or SGLang's data-parallel controller), or SGLang's router
                    (``sglang-router`` on PyPI, ``python -m sglang_router.launch_server``) with the policy
                    ``cache_aware`` or ``round_robin`` (``--backend sglang-server`` only)

What is decided here, and why (docs/guides/two-gpus.md):
- ``--dp`` is for the engine backends only (``vllm`` in process is refused above 1: ``vllm.LLM`` raises on
  ``data_parallel_size > 1`` in one process, in vLLM 0.26 and 0.32; ``vllm-server`` has it); a run that also
  names another backend is refused, since a dp=2 column beside a one-GPU column is no comparison the page
  could draw honestly.
- tp x dp must fit the CUDA devices this process sees (``torch.cuda.device_count()``, which honours
  ``CUDA_VISIBLE_DEVICES``). On a CPU there is one replica: ``--dp`` above 1 is refused (vLLM's CPU backend
  and SGLang's have no data parallelism we could measure against two GPUs).
- ``--router`` other than ``internal`` needs ``--dp`` above 1 and ``--backend sglang-server`` alone.
"""

from __future__ import annotations

import argparse

from llm_call_anatomy.backends import DATA_PARALLEL, ROUTED
from llm_call_anatomy.contract.columns import base_of
from llm_call_anatomy.contract.docs import doc
from llm_call_anatomy.harness.cli_checks import UsageError

# the backends registry says which backends have data parallelism and which can stand behind a router
DP_BACKENDS = DATA_PARALLEL
REFUSED_IN_PROCESS = {
    "vllm": "vLLM's LLM class refuses data_parallel_size > 1 in one process "
    "(vllm/entrypoints/llm.py); its data parallelism is the server's: --backend vllm-server"
}
INTERNAL = "internal"
SGLANG_ROUTER_POLICIES = ("cache_aware", "round_robin")
ROUTERS = (INTERNAL, *SGLANG_ROUTER_POLICIES)
ROUTER_BACKENDS = ROUTED  # the backends an external router can stand in front of


def add_parallel_args(p: argparse.ArgumentParser) -> None:
    """Add ``--dp`` and ``--router`` to the study's parser; :func:`check_parallel` checks them against the
    backends and the CUDA devices seen (the module docstring says what is refused and why)."""
    p.add_argument(
        "--dp",
        type=int,
        default=1,
        metavar="N",
        help="data-parallel replicas for sglang, vllm-server, sglang-server (the engine's own data "
        f"parallelism); tp x dp must fit the CUDA devices seen; 1 on a CPU (see {doc('guides/two-gpus.md')})",
    )
    p.add_argument(
        "--router",
        choices=ROUTERS,
        default=INTERNAL,
        help="with --dp > 1: internal (default: the engine's own balancer) or SGLang's router "
        "(sglang-router) with the policy cache_aware or round_robin (--backend sglang-server)",
    )


def visible_cuda_devices() -> int:
    """How many CUDA devices this process sees (0 without torch's CUDA or a driver)."""
    try:
        import torch
    except ImportError:
        return 0
    try:
        return int(torch.cuda.device_count())
    except RuntimeError:
        return 0


def check_parallel(
    dp: int, tp: int, router: str, names: list[str], device: str, cuda_devices: int | None = None
) -> None:
    """The flag checks; ``cuda_devices`` defaults to :func:`visible_cuda_devices` (asked only when it
    matters)."""
    if dp < 1:
        raise UsageError(f"--dp must be at least 1 (got {dp})")
    if router != INTERNAL and dp == 1:
        raise UsageError(f"--router {router}: there is one replica to route to; pass --dp 2 or more")
    bases = [base_of(n) for n in names]  # a column base@variant is its base backend here
    if router != INTERNAL and set(bases) - set(ROUTER_BACKENDS):
        raise UsageError(
            f"--router {router} is SGLang's router (sglang-router), for --backend "
            f"{', '.join(ROUTER_BACKENDS)} alone (got {', '.join(names)}); vLLM balances its replicas "
            "itself (--router internal)"
        )
    if dp == 1:
        return
    for name in bases:
        if name in REFUSED_IN_PROCESS:
            raise UsageError(f"--dp {dp} --backend {name}: {REFUSED_IN_PROCESS[name]}")
    others = [n for n, b in zip(names, bases, strict=True) if b not in DP_BACKENDS]
    if others:
        raise UsageError(
            f"--dp {dp} is for {', '.join(DP_BACKENDS)}: {', '.join(others)} run(s) one replica "
            "(run them in a run of their own)"
        )
    if device.split(":")[0] != "cuda":
        raise UsageError(
            f"--dp {dp} on a CPU: the engines run one replica there; --dp above 1 needs CUDA GPUs"
        )
    seen = visible_cuda_devices() if cuda_devices is None else cuda_devices
    if tp * dp > seen:
        raise UsageError(
            f"--tp {tp} x --dp {dp} = {tp * dp} GPUs, and this process sees {seen} CUDA device(s) "
            "(CUDA_VISIBLE_DEVICES)"
        )
