"""GPU telemetry during a load level: power, utilisation, memory and energy from NVML, on a thread of its own.

    with GpuTelemetry() as gpu:
        ...  # the level runs
    facts = gpu.facts()
    # -> {"gpu_power_w_mean": ..., "gpu_energy_j": ...} or {"gpu_telemetry": "not measured: why"}

The thread samples ``nvidia-ml-py`` (``pynvml``) every ``EVERY_S`` seconds, outside the event loop that
stamps tokens, so a slow NVML call never delays a timestamp. Energy is NVML's own counter
(``nvmlDeviceGetTotalEnergyConsumption``, mJ since the driver loaded; Volta and later) read at the
start and the end; where the GPU has none, the integral of the power samples (trapezoids), said so
in ``gpu_energy_source``. The device is the first in ``CUDA_VISIBLE_DEVICES`` when that names an
index (NVML counts physical devices), else device 0. The whole GPU is measured: another process
on it counts too. No ``nvidia-ml-py``, no driver or no GPU: one fact, ``gpu_telemetry``, says why in words
(``not measured: no NVIDIA GPU here (...)`` on a CPU machine, never NVML's exception name).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from typing import Any

EVERY_S = 0.1


def device_index() -> int:
    first = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    return int(first) if first.isdigit() else 0


# NVML's errors where the machine has no NVIDIA GPU to read, in words (a CPU machine: no library, no driver)
NO_GPU = {
    "NVMLError_LibraryNotFound": "the NVIDIA driver's library is not installed",
    "NVMLError_DriverNotLoaded": "the NVIDIA driver is not loaded",
}


def not_readable(exc: Exception) -> str:
    """Why NVML could not be read, in words: no NVIDIA GPU here (a CPU machine), or NVML's own message; never
    the exception's class name."""
    why = NO_GPU.get(type(exc).__name__)
    if why:
        return f"not measured: no NVIDIA GPU here ({why})"
    return f"not measured: NVML could not be read ({str(exc).strip() or 'no reason given'})"


class GpuTelemetry:
    def __init__(self, every_s: float = EVERY_S, nvml: Any = None) -> None:
        self.every_s = every_s
        self.samples: list[
            tuple[float, float | None, float | None, float | None]
        ] = []  # (t, W, util %, bytes)
        self.why_not: str | None = None
        self.energy_mj: list[float] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._nvml = nvml
        self._handle = None

    # -- start / stop ---------------------------------------------------------------------
    def _open(self) -> bool:
        if self._nvml is None:
            try:
                import pynvml
            except ImportError:
                self.why_not = "not measured: nvidia-ml-py is not installed"
                return False
            self._nvml = pynvml
        try:
            self._nvml.nvmlInit()
            count = self._nvml.nvmlDeviceGetCount()
            index = device_index()
            if index >= count:
                self.why_not = f"not measured: no GPU {index} (NVML sees {count})"
                return False
            self._handle = self._nvml.nvmlDeviceGetHandleByIndex(index)
        except Exception as exc:  # noqa: BLE001 - NVMLError_LibraryNotFound, _DriverNotLoaded, ...
            self.why_not = not_readable(exc)
            return False
        return True

    def __enter__(self) -> GpuTelemetry:
        if self._open():
            self._energy()
            self._thread = threading.Thread(target=self._run, name="gpu-telemetry", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join(timeout=5)
            self._sample()
            self._energy()
            with contextlib.suppress(Exception):
                self._nvml.nvmlShutdown()  # nvmlInit is counted: one shutdown for each

    # -- sampling -------------------------------------------------------------------------
    def _read(self, call, *args, scale: float = 1.0) -> float | None:
        try:
            return float(call(self._handle, *args)) * scale
        except Exception:  # noqa: BLE001 - a query this GPU does not support
            return None

    def _sample(self) -> None:
        nv = self._nvml
        power = self._read(nv.nvmlDeviceGetPowerUsage, scale=1e-3)  # mW -> W
        util = mem = None
        with contextlib.suppress(Exception):  # a query this GPU does not support
            util = float(nv.nvmlDeviceGetUtilizationRates(self._handle).gpu)
        with contextlib.suppress(Exception):
            mem = float(nv.nvmlDeviceGetMemoryInfo(self._handle).used)
        self.samples.append((time.perf_counter(), power, util, mem))

    def _energy(self) -> None:
        e = self._read(self._nvml.nvmlDeviceGetTotalEnergyConsumption)
        if e is not None:
            self.energy_mj.append(e)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._sample()
            self._stop.wait(self.every_s)

    # -- facts ----------------------------------------------------------------------------
    def facts(self) -> dict[str, Any]:
        """The samples summed up for env.json: mean and peak power, mean utilisation, peak memory, energy (the
        NVML counter's difference where it has one, else the power samples integrated), or why none."""
        if self.why_not is not None:
            return {"gpu_telemetry": self.why_not}
        power = [(t, w) for t, w, _, _ in self.samples if w is not None]
        util = [u for _, _, u, _ in self.samples if u is not None]
        mem = [m for _, _, _, m in self.samples if m is not None]
        out: dict[str, Any] = {"gpu_samples": len(self.samples), "gpu_index": device_index()}
        if power:
            out["gpu_power_w_mean"] = sum(w for _, w in power) / len(power)
            out["gpu_power_w_peak"] = max(w for _, w in power)
        if util:
            out["gpu_util_pct_mean"] = sum(util) / len(util)
        if mem:
            out["gpu_memory_used_peak_bytes"] = max(mem)
        if len(self.energy_mj) == 2:
            out["gpu_energy_j"], out["gpu_energy_source"] = (
                (self.energy_mj[1] - self.energy_mj[0]) / 1e3,
                "nvml-counter",
            )
        elif len(power) > 1:
            out["gpu_energy_j"] = sum(
                (b[0] - a[0]) * (a[1] + b[1]) / 2 for a, b in zip(power, power[1:], strict=False)
            )
            out["gpu_energy_source"] = "power-integral"
        if not power and not util and not mem:
            out = {"gpu_telemetry": "not measured: NVML answered no query on this GPU"}
        return out
