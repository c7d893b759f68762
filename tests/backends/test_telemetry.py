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
    from llm_call_anatomy.backends.load_loop import LoadSettings, run_level
    from tests.backends.test_load import Batching, req

    _, facts = run_level(Batching(), [[req()] for _ in range(2)], LoadSettings(concurrency=2))
    assert facts["gpu_telemetry"].startswith("not measured: ") and "NVMLError" not in facts["gpu_telemetry"]
    assert not any(k.startswith("gpu_power") for k in facts)


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
