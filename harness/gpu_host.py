"""What else ran on the GPU host while an engine start ran: for env.json, so the report can say so.

Two sources. The sitting script declares it (``LCA_GPU_HOST_SHARED``: free text, e.g. ``"sglang
study on GPU 1"``, set when it runs two studies side by side on one host); and NVML's list of
compute processes on every GPU of the host (``nvidia-ml-py``, where it is installed and a driver
answers), each marked ``ours`` when it is this process or one of its descendants (an engine's
workers). A start samples it after the engine is up and again after its requests, and keeps
every process seen. Nothing here raises: a fact missing is recorded as missing.
"""

from __future__ import annotations

import contextlib
import os
import socket
from pathlib import Path
from typing import Any

DECLARED_ENV = "LCA_GPU_HOST_SHARED"


def _parent(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    try:
        return int(
            stat.rsplit(")", 1)[1].split()[1]
        )  # the field after the state, past the command's parentheses
    except (IndexError, ValueError):
        return None


def is_ours(pid: int, me: int | None = None) -> bool:
    """``pid`` is this process or descends from it."""
    me = os.getpid() if me is None else me
    seen = 0
    while pid and pid > 1 and seen < 64:
        if pid == me:
            return True
        pid, seen = _parent(pid) or 0, seen + 1
    return False


def _name(pid: int) -> str | None:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").strip()
    except OSError:
        return None
    return raw.decode(errors="replace")[:160] or None


def gpu_processes() -> list[dict[str, Any]] | None:
    """Every compute process on every GPU of the host (NVML), or None where NVML cannot be read."""
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except Exception:  # noqa: BLE001 - no driver, no GPU: not known
        return None
    out = []
    try:
        for index in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            for proc in pynvml.nvmlDeviceGetComputeRunningProcesses(handle):
                used = getattr(proc, "usedGpuMemory", None)
                out.append(
                    {
                        "gpu": index,
                        "pid": int(proc.pid),
                        "used_bytes": int(used) if isinstance(used, int) else None,
                        "ours": is_ours(int(proc.pid)),
                        "command": _name(int(proc.pid)),
                    }
                )
    except Exception:  # noqa: BLE001 - a partial list is still a fact; say where it stopped
        out.append({"error": "NVML stopped answering"})
    finally:
        with contextlib.suppress(Exception):
            pynvml.nvmlShutdown()
    return out


def facts(previous: dict[str, Any] | None = None) -> dict[str, Any]:
    """This host's sharing facts now, merged with an earlier sample's (processes seen in either)."""
    procs = gpu_processes()
    seen = {(p.get("gpu"), p.get("pid")): p for p in ((previous or {}).get("gpu_processes") or [])}
    for p in procs or []:
        seen[(p.get("gpu"), p.get("pid"))] = p
    others = [p for p in seen.values() if p.get("pid") is not None and not p.get("ours")]
    return {
        "hostname": socket.gethostname(),
        "declared": os.environ.get(DECLARED_ENV) or None,
        "visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "gpu_processes": list(seen.values()) if procs is not None or seen else None,
        "other_processes": len(others) if procs is not None or seen else None,
    }
