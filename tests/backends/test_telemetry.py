"""GPU telemetry under load (backends/telemetry.py): on this machine (no NVIDIA driver) every level says
"not measured" and why; with NVML answering (a stand-in module: there is no GPU here) power, utilisation,
memory and energy come from a thread of their own, energy from NVML's counter or, without one, the
integral of the power samples."""

from __future__ import annotations

import sys
import time
from types import SimpleNamespace

import pytest

from llm_call_anatomy.backends import telemetry
from llm_call_anatomy.backends.telemetry import GpuTelemetry


def nvml_loads() -> bool:
    try:
        import pynvml

        pynvml.nvmlInit()
        return True
    except Exception:  # noqa: BLE001
        return False


@pytest.mark.skipif(nvml_loads(), reason="NVML works here: the not-measured path is not this machine's")
def test_without_a_driver_a_level_says_not_measured_and_why():
    from llm_call_anatomy.backends.load_level import run_level
    from llm_call_anatomy.backends.load_loop import LoadSettings
    from tests.backends.test_load import Batching, req

    _, facts = run_level(Batching(), [[req()] for _ in range(2)], LoadSettings(concurrency=2))
    assert facts.gpu_telemetry.startswith("not measured: ") and "NVMLError" not in facts.gpu_telemetry
    assert not any(k.startswith("gpu_power") for k in facts.to_dict())


def test_a_machine_without_an_nvidia_gpu_is_said_in_words():
    """issue 43: a CPU run's page never shows a raw NVMLError_LibraryNotFound."""

    class NVMLError_LibraryNotFound(Exception):
        pass

    class NoLibrary(FakeNvml):
        def nvmlInit(self):
            raise NVMLError_LibraryNotFound("NVML Shared Library Not Found")

    with GpuTelemetry(nvml=NoLibrary()) as gpu:
        pass
    said = gpu.facts()["gpu_telemetry"]
    assert said == "not measured: no NVIDIA GPU here (the NVIDIA driver's library is not installed)"
    assert (
        telemetry.not_readable(RuntimeError("Unknown Error"))
        == "not measured: NVML could not be read (Unknown Error)"
    )


def test_without_nvidia_ml_py_it_says_so(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml raises ImportError
    with GpuTelemetry() as gpu:
        pass
    assert gpu.facts() == {"gpu_telemetry": "not measured: nvidia-ml-py is not installed"}


class FakeNvml:
    """NVML for one GPU drawing WATTS, 70 % busy, 40 GB used; its energy counter runs in real time."""

    WATTS = 300.0

    def __init__(self, energy_counter: bool = True, devices: int = 1) -> None:
        self.energy_counter, self.devices, self.t0, self.calls = (
            energy_counter,
            devices,
            time.perf_counter(),
            0,
        )

    def nvmlInit(self):
        pass

    def nvmlShutdown(self):
        pass

    def nvmlDeviceGetCount(self):
        return self.devices

    def nvmlDeviceGetHandleByIndex(self, i):
        return ("gpu", i)

    def nvmlDeviceGetPowerUsage(self, h):
        self.calls += 1
        return int(self.WATTS * 1e3)  # mW

    def nvmlDeviceGetUtilizationRates(self, h):
        return SimpleNamespace(gpu=70, memory=30)

    def nvmlDeviceGetMemoryInfo(self, h):
        return SimpleNamespace(used=40 * 2**30, total=141 * 2**30)

    def nvmlDeviceGetTotalEnergyConsumption(self, h):
        if not self.energy_counter:
            raise RuntimeError("NVMLError_NotSupported")
        return (time.perf_counter() - self.t0) * self.WATTS * 1e3  # mJ


@pytest.mark.parametrize("counter,source", [(True, "nvml-counter"), (False, "power-integral")])
def test_energy_power_utilisation_and_memory_over_a_level(counter, source, monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    nvml = FakeNvml(energy_counter=counter)
    start = time.perf_counter()
    with GpuTelemetry(every_s=0.02, nvml=nvml) as gpu:
        time.sleep(0.3)
    wall = time.perf_counter() - start
    f = gpu.facts()
    assert f["gpu_energy_source"] == source and f["gpu_samples"] >= 5 and nvml.calls == f["gpu_samples"]
    assert f["gpu_power_w_mean"] == f["gpu_power_w_peak"] == FakeNvml.WATTS
    assert f["gpu_util_pct_mean"] == 70.0 and f["gpu_memory_used_peak_bytes"] == 40 * 2**30
    # the counter spans the whole block; the integral spans first to last sample (a sample's gap short)
    assert 0.8 * FakeNvml.WATTS * wall <= f["gpu_energy_j"] <= FakeNvml.WATTS * wall * 1.05


def test_the_device_is_the_first_visible_one_and_a_missing_one_is_named(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,1")
    assert telemetry.device_index() == 3
    with GpuTelemetry(nvml=FakeNvml(devices=2)) as gpu:
        pass
    assert gpu.facts() == {"gpu_telemetry": "not measured: no GPU 3 (NVML sees 2)"}
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-5d3c")  # a UUID: device 0
    assert telemetry.device_index() == 0


# --- the energy series and the idle floor (issue 40) ---------------------------------------------
class RampNvml(FakeNvml):
    """NVML whose energy counter ramps at IDLE_W until ``busy_at``, at WATTS after: a known counter ramp."""

    IDLE_W = 60.0

    def __init__(self, energy_counter: bool = True) -> None:
        super().__init__(energy_counter=energy_counter)
        self.busy_at: float | None = None

    def watts_at(self, t: float) -> float:
        return self.IDLE_W if self.busy_at is None or t < self.busy_at else self.WATTS

    def nvmlDeviceGetPowerUsage(self, h):
        self.calls += 1
        return int(self.watts_at(time.perf_counter()) * 1e3)

    def nvmlDeviceGetTotalEnergyConsumption(self, h):
        if not self.energy_counter:
            raise RuntimeError("NVMLError_NotSupported")
        now = time.perf_counter()
        if self.busy_at is None or now < self.busy_at:
            return (now - self.t0) * self.IDLE_W * 1e3
        return ((self.busy_at - self.t0) * self.IDLE_W + (now - self.busy_at) * self.WATTS) * 1e3


def test_the_counter_series_on_the_levels_clock_gives_a_windows_energy_and_the_idle_floor(monkeypatch):
    """A counter ramping at 60 W, then 300 W from the level's origin: the idle floor is 60 W (the counter over
    the idle wait), the series is on the level's clock (seconds from the origin, the idle wait before 0), and
    the energy between two times of the busy part is 300 W × their distance, by hand."""
    from llm_call_anatomy.contract.level_energy import energy_between

    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    nvml = RampNvml()
    with GpuTelemetry(every_s=0.01, nvml=nvml) as gpu:
        gpu.idle(0.2)
        origin = time.perf_counter()
        nvml.busy_at = origin  # the level's first request: the GPU draws 300 W from here
        time.sleep(0.4)
    f = gpu.facts(origin)
    assert f["gpu_idle_w"] == pytest.approx(RampNvml.IDLE_W, rel=1e-3)
    assert f["gpu_idle_s"] == pytest.approx(0.2, abs=0.05)
    series = f["gpu_energy_series"]
    assert series[0][0] < -0.15 and series[0][1] == 0.0 and series[-1][0] >= 0.4  # idle wait, then the level
    assert all(b[0] > a[0] and b[1] >= a[1] for a, b in zip(series, series[1:], strict=False))
    assert energy_between(series, 0.1, 0.3) == pytest.approx(300.0 * 0.2, rel=1e-2)  # 60 J by hand
    assert energy_between(series, -0.15, -0.05) == pytest.approx(60.0 * 0.1, rel=1e-2)  # 6 J, idle
    assert energy_between(series, 0.1, 99.0) is None  # past the series' end: no figure, never a guess


def test_without_a_counter_the_series_integrates_the_power_samples(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    nvml = RampNvml(energy_counter=False)
    with GpuTelemetry(every_s=0.01, nvml=nvml) as gpu:
        gpu.idle(0.1)
        origin = time.perf_counter()
        nvml.busy_at = origin
        time.sleep(0.3)
    f = gpu.facts(origin)
    assert f["gpu_energy_source"] == "power-integral"
    assert f["gpu_idle_w"] == pytest.approx(RampNvml.IDLE_W)  # the power samples' mean in the idle wait
    assert f["gpu_energy_series"][-1][1] == pytest.approx(f["gpu_energy_j"], rel=1e-3)


def test_the_series_is_thinned_to_its_bound_and_keeps_its_last_pair(monkeypatch):
    monkeypatch.setattr(telemetry, "SERIES_POINTS", 5)
    with GpuTelemetry(every_s=0.01, nvml=FakeNvml()) as gpu:
        time.sleep(0.2)
    origin = gpu.samples[0][0]
    series = gpu.facts(origin)["gpu_energy_series"]
    assert 2 <= len(series) <= 6 and series[-1][0] == round(gpu.counter[-1][0] - origin, 4)


def test_no_gpu_means_no_idle_wait():
    class NoDriver(FakeNvml):
        def nvmlInit(self):
            raise RuntimeError("no driver")

    start = time.perf_counter()
    with GpuTelemetry(nvml=NoDriver()) as gpu:
        gpu.idle(5.0)
    assert time.perf_counter() - start < 1.0 and set(gpu.facts(start)) == {"gpu_telemetry"}


def test_a_level_records_its_idle_floor_and_series_on_its_requests_clock(monkeypatch):
    """The load loop measures the idle floor before its origin and writes the series from it: the series spans
    every request's submit and finish (the same clock)."""
    from llm_call_anatomy.backends import load_level
    from llm_call_anatomy.backends.load_level import run_level
    from llm_call_anatomy.backends.load_loop import LoadSettings
    from tests.backends.test_load import Batching, req

    monkeypatch.setattr(telemetry, "IDLE_S", 0.05)
    monkeypatch.setattr(load_level, "GpuTelemetry", lambda: GpuTelemetry(every_s=0.01, nvml=RampNvml()))
    outs, facts = run_level(Batching(), [[req()] for _ in range(4)], LoadSettings(concurrency=2))
    series = facts.gpu_energy_series
    done = [o for s in outs for o in s]
    assert facts.gpu_idle_w == pytest.approx(RampNvml.IDLE_W, rel=1e-2) and series[0][0] < 0
    assert series[-1][0] >= max(o.finish_s for o in done) and min(o.submit_s for o in done) >= 0
