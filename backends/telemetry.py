"""GPU telemetry during a load level: power, utilisation, memory and energy from NVML, on a thread of its own.

    with GpuTelemetry() as gpu:
        ...  # the level runs
    facts = gpu.facts(origin)  # origin: the level's time.perf_counter() at its start
    # -> {"gpu_power_w_mean": ..., "gpu_energy_j": ...} or {"gpu_telemetry": "not measured: why"}

The thread samples ``nvidia-ml-py`` (``pynvml``) every ``EVERY_S`` seconds, outside the event loop that
stamps tokens, so a slow NVML call never delays a timestamp. Energy is NVML's own counter
(``nvmlDeviceGetTotalEnergyConsumption``, mJ since the driver loaded; Volta and later) read at the
start and the end; where the GPU has none, the integral of the power samples (trapezoids), said so
in ``gpu_energy_source``. The device is the first in ``CUDA_VISIBLE_DEVICES`` when that names an
index (NVML counts physical devices), else device 0. The whole GPU is measured: another process
on it counts too. No ``nvidia-ml-py``, no driver or no GPU: one fact, ``gpu_telemetry``, says why in words
(``not measured: no NVIDIA GPU here (...)`` on a CPU machine, never NVML's exception name).

Beside the level's totals (issue 40):

- **the energy series** (``gpu_energy_series``): ``[t_s, J]`` pairs, ``t_s`` in seconds from the level's
  origin on ``time.perf_counter()`` (the clock of the request records' ``submit_s``, ``finish_s`` and token
  times: ``backends.load_loop``; CLOCK_MONOTONIC, one clock for the client processes too), ``J`` the energy
  since the series' first pair: NVML's counter read at every sample, else the running integral of the power
  samples (trapezoids), as ``gpu_energy_source`` says. At most ``SERIES_POINTS`` pairs (evenly thinned, the
  last kept), so that the report can take the energy between any two times of the level
  (``contract.level_energy``);
- **the idle floor** (``gpu_idle_w``, over ``gpu_idle_s``): the GPU's power before the level's first request,
  with none in flight: :meth:`GpuTelemetry.idle` waits ``IDLE_S`` seconds right after the telemetry starts
  and before the level's origin, and takes the counter's difference over that time ÷ its length (without a
  counter, the mean of the power samples in it). Not measured, and no wait, where NVML could not be read.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from typing import Any

EVERY_S = 0.1
IDLE_S = 1.0  # the idle floor's window, before the level's first request: short, and bounded
SERIES_POINTS = 600  # the energy series' pairs at most (a 10-minute level: one every second)


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
        self.counter: list[tuple[float, float]] = []  # (t, mJ): NVML's energy counter at every sample
        self.idle_window: tuple[float, float] | None = None  # (t0, t1) of the idle floor's wait
        self.idle_w: float | None = None
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

    def idle(self, seconds: float | None = None) -> None:
        """The idle floor: wait ``seconds`` (default IDLE_S) with nothing in flight (call it after entering,
        before the level's first request), the GPU's mean power over that time in ``idle_w``. Nothing, and
        no wait, where NVML could not be read."""
        if self._thread is None:
            return
        seconds = IDLE_S if seconds is None else seconds
        t0, e0 = time.perf_counter(), self._read(self._nvml.nvmlDeviceGetTotalEnergyConsumption)
        time.sleep(seconds)
        t1, e1 = time.perf_counter(), self._read(self._nvml.nvmlDeviceGetTotalEnergyConsumption)
        self.idle_window = (t0, t1)
        if e0 is not None and e1 is not None and t1 > t0:
            self.idle_w = (e1 - e0) / 1e3 / (t1 - t0)
            return
        power = [w for t, w, _, _ in list(self.samples) if w is not None and t0 <= t <= t1]
        self.idle_w = sum(power) / len(power) if power else None

    def _sample(self) -> None:
        nv = self._nvml
        power = self._read(nv.nvmlDeviceGetPowerUsage, scale=1e-3)  # mW -> W
        util = mem = None
        with contextlib.suppress(Exception):  # a query this GPU does not support
            util = float(nv.nvmlDeviceGetUtilizationRates(self._handle).gpu)
        with contextlib.suppress(Exception):
            mem = float(nv.nvmlDeviceGetMemoryInfo(self._handle).used)
        now = time.perf_counter()
        self.samples.append((now, power, util, mem))
        if self.energy_mj:  # the counter answered at the start: read it along the level too
            e = self._read(nv.nvmlDeviceGetTotalEnergyConsumption)
            if e is not None:
                self.counter.append((now, e))

    def _energy(self) -> None:
        e = self._read(self._nvml.nvmlDeviceGetTotalEnergyConsumption)
        if e is not None:
            self.energy_mj.append(e)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._sample()
            self._stop.wait(self.every_s)

    # -- facts ----------------------------------------------------------------------------
    def series(self, origin: float) -> list[list[float]]:
        """The energy series: ``[t_s, J]`` pairs from ``origin`` (module docstring), at most SERIES_POINTS."""
        if self.counter and len(self.energy_mj) == 2:
            e0 = self.counter[0][1]
            pairs = [(t, (e - e0) / 1e3) for t, e in self.counter]
        else:
            power = [(t, w) for t, w, _, _ in self.samples if w is not None]
            pairs, j = [], 0.0
            for i, (t, w) in enumerate(power):
                if i:
                    j += (t - power[i - 1][0]) * (w + power[i - 1][1]) / 2
                pairs.append((t, j))
        if len(pairs) < 2:
            return []
        step = -(-len(pairs) // SERIES_POINTS)
        kept = pairs[::step] + ([pairs[-1]] if (len(pairs) - 1) % step else [])
        return [[round(t - origin, 4), round(j, 3)] for t, j in kept]

    def facts(self, origin: float | None = None) -> dict[str, Any]:
        """The samples summed up for env.json: mean and peak power, mean utilisation, peak memory, energy (the
        NVML counter's difference where it has one, else the power samples integrated), or why none; with the
        level's ``origin`` (its ``time.perf_counter()`` at the start), the energy series on the level's clock
        and the idle floor."""
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
        if origin is not None and "gpu_energy_j" in out and (series := self.series(origin)):
            out["gpu_energy_series"] = series
        if self.idle_window is not None and self.idle_w is not None:
            out["gpu_idle_w"] = self.idle_w
            out["gpu_idle_s"] = self.idle_window[1] - self.idle_window[0]
        if not power and not util and not mem:
            out = {"gpu_telemetry": "not measured: NVML answered no query on this GPU"}
        return out
