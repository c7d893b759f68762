"""Data-parallel replicas (``--dp``) and their router, as the adapters record them in env.json.

    replica_record(settings, "sglang-server")
    # -> {"tp": 1, "dp": 2, "router": "sglang-router", "policy": "cache_aware"}

``router`` names who spreads the requests: ``vllm-dp-coordinator`` (vLLM's internal balancer: the API server
sends each request to the least-loaded engine, waiting + running requests as the DP coordinator reports them;
the exact score is vLLM's own and changes between versions:
``DPLBAsyncMPClient.get_core_engine_for_request``), ``sglang-dp-controller`` (SGLang's data-parallel
controller, its ``load_balance_method``, read back from the engine into ``policy`` where it says), or
``sglang-router`` (SGLang's router, ``sglang-router`` on PyPI, with ``policy`` ``cache_aware`` or
``round_robin``). One replica: router and policy are None.
"""

from __future__ import annotations

from typing import Any

from llm_call_anatomy.contract.adapter import BackendSettings

INTERNAL = "internal"
SGLANG_ROUTER = "sglang-router"
SGLANG_ROUTER_MODULE = "sglang_router"  # the wheel's import name


def uses_sglang_router(settings: BackendSettings) -> bool:
    return settings.dp > 1 and settings.router != INTERNAL


def replica_record(settings: BackendSettings, backend: str, engine_policy: Any = None) -> dict[str, Any]:
    """tp, dp, router and policy for env.json; ``engine_policy``: what the engine says its balancer does."""
    if settings.dp <= 1:
        return {"tp": settings.tp, "dp": 1, "router": None, "policy": None}
    if uses_sglang_router(settings):
        return {"tp": settings.tp, "dp": settings.dp, "router": SGLANG_ROUTER, "policy": settings.router}
    balancer = "vllm-dp-coordinator" if backend.startswith("vllm") else "sglang-dp-controller"
    default = "least loaded (waiting + running per engine)" if backend.startswith("vllm") else None
    return {"tp": settings.tp, "dp": settings.dp, "router": balancer, "policy": engine_policy or default}
