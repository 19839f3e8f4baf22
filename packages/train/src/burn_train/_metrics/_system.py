"""System metrics: CPU use and memory (from ``/proc`` on Linux, from the standard library elsewhere), and
the GPU's memory and use through NVIDIA's management library (NVML, loaded with ``ctypes``) where the
Cuda backend is installed."""

from __future__ import annotations

import ctypes
import ctypes.util
import importlib.util
import math
import os
import time
from pathlib import Path
from typing import ClassVar

from ._base import MetricEntry, MetricMetadata, NumericMetricState

__all__ = ["CpuMemory", "CpuUse", "CudaMemory", "CudaUse", "cuda_metrics_available"]

_REFRESH_S = 0.5  # system counters are read at most twice a second


def _cpu_times() -> tuple[float, float] | None:
    """``(busy, total)`` CPU ticks of the whole machine, from /proc/stat."""
    try:
        line = Path("/proc/stat").read_text().splitlines()[0]
    except (OSError, IndexError):
        return None
    values = [float(v) for v in line.split()[1:]]
    idle = values[3] + (values[4] if len(values) > 4 else 0.0)  # idle + iowait
    total = sum(values[:8])  # guest time is already in user time
    return total - idle, total


def memory_gb() -> tuple[float, float]:
    """``(used, total)`` memory of the machine in GB (used: total minus what is available)."""
    try:
        fields = {}
        for line in Path("/proc/meminfo").read_text().splitlines():
            name, _, rest = line.partition(":")
            fields[name] = float(rest.split()[0]) * 1024
        total = fields["MemTotal"]
        return (total - fields.get("MemAvailable", fields.get("MemFree", 0.0))) / 1e9, total / 1e9
    except (OSError, KeyError, ValueError, IndexError):
        pages, size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
        available = os.sysconf("SC_AVPHYS_PAGES") if hasattr(os, "sysconf") else 0
        return (pages - available) * size / 1e9, pages * size / 1e9


class _SampledMetric:
    """A metric that samples a system counter, at most every ``_REFRESH_S``."""

    input_type: ClassVar[type | None] = None
    _name = ""
    _unit = ""

    def __init__(self) -> None:
        self._state = NumericMetricState()
        self._last_read = -math.inf
        self._last = math.nan

    def name(self) -> str:
        """The metric's name."""
        return self._name

    def _sample(self) -> float:
        raise NotImplementedError

    def _formatted(self, value: float) -> str:
        return f"{value:.2f} {self._unit}"

    def update(self, item: object, metadata: MetricMetadata) -> MetricEntry:
        """Sample the counter (or reuse a sample younger than half a second)."""
        now = time.monotonic()
        if now - self._last_read >= _REFRESH_S:
            self._last = self._sample()
            self._last_read = now
        entry = self._state.update(self._last, 1, self.name(), unit=self._unit)
        return MetricEntry(
            entry.name, self._formatted(self._last), entry.serialized, entry.value, entry.running
        )

    def value(self) -> float:
        """The last sample."""
        return self._state.value()

    def running_value(self) -> float:
        """The mean of the epoch's samples."""
        return self._state.running_value()

    def clear(self) -> None:
        """Forget the epoch's samples."""
        self._state.reset()


class CpuUse(_SampledMetric):
    """The machine's CPU use in percent of all its cores, over the time since the last sample (Burn's
    ``CpuUse``). Without ``/proc/stat``, this process's CPU time over wall time and core count.

    Example:
        >>> CpuUse().name()
        'CPU Usage'
    """

    _name = "CPU Usage"
    _unit = "%"

    def __init__(self) -> None:
        super().__init__()
        self._previous = _cpu_times()
        self._process = (time.process_time(), time.monotonic())

    def _sample(self) -> float:
        current = _cpu_times()
        if current is not None and self._previous is not None:
            busy, total = current[0] - self._previous[0], current[1] - self._previous[1]
            self._previous = current
            return 100.0 * busy / total if total > 0 else math.nan
        cpu, wall = time.process_time(), time.monotonic()
        spent, elapsed = cpu - self._process[0], wall - self._process[1]
        self._process = (cpu, wall)
        return 100.0 * spent / (elapsed * (os.cpu_count() or 1)) if elapsed > 0 else math.nan


class CpuMemory(_SampledMetric):
    """The machine's memory in use, in GB (Burn's ``CpuMemory``); displayed with the total.

    Example:
        >>> CpuMemory().name()
        'CPU Memory'
    """

    _name = "CPU Memory"
    _unit = "GB"

    def __init__(self) -> None:
        super().__init__()
        self._total = math.nan

    def _sample(self) -> float:
        used, self._total = memory_gb()
        return used

    def _formatted(self, value: float) -> str:
        return f"{value:.2f} / {self._total:.2f} GB"


def cuda_metrics_available() -> bool:
    """Whether the Cuda backend (``burn_cuda``) is installed and NVML can be loaded."""
    return importlib.util.find_spec("burn_cuda") is not None and _Nvml.get() is not None


class _Nvml:
    """NVIDIA's management library, loaded once with ``ctypes`` (no Python package needed)."""

    _instance: ClassVar[_Nvml | None] = None
    _tried: ClassVar[bool] = False

    class _Memory(ctypes.Structure):
        _fields_: ClassVar = [
            ("total", ctypes.c_ulonglong),
            ("free", ctypes.c_ulonglong),
            ("used", ctypes.c_ulonglong),
        ]

    class _Utilization(ctypes.Structure):
        _fields_: ClassVar = [("gpu", ctypes.c_uint), ("memory", ctypes.c_uint)]

    def __init__(self, library: ctypes.CDLL) -> None:
        self._library = library

    @classmethod
    def get(cls) -> _Nvml | None:
        if not cls._tried:
            cls._tried = True
            name = ctypes.util.find_library("nvidia-ml") or "libnvidia-ml.so.1"
            try:
                library = ctypes.CDLL(name)
                if library.nvmlInit_v2() == 0:
                    cls._instance = cls(library)
            except (OSError, AttributeError):
                cls._instance = None
        return cls._instance

    def _handle(self, index: int) -> ctypes.c_void_p:
        handle = ctypes.c_void_p()
        if self._library.nvmlDeviceGetHandleByIndex_v2(index, ctypes.byref(handle)) != 0:
            raise RuntimeError(f"NVML: no GPU {index}")
        return handle

    def memory(self, index: int) -> tuple[float, float]:
        """``(used, total)`` memory of GPU ``index`` in GB."""
        memory = self._Memory()
        if self._library.nvmlDeviceGetMemoryInfo(self._handle(index), ctypes.byref(memory)) != 0:
            raise RuntimeError(f"NVML: cannot read the memory of GPU {index}")
        return memory.used / 1e9, memory.total / 1e9

    def utilization(self, index: int) -> float:
        """The percentage of time GPU ``index`` was busy over the last sample period."""
        rates = self._Utilization()
        if self._library.nvmlDeviceGetUtilizationRates(self._handle(index), ctypes.byref(rates)) != 0:
            raise RuntimeError(f"NVML: cannot read the use of GPU {index}")
        return float(rates.gpu)


def _nvml(where: str) -> _Nvml:
    if importlib.util.find_spec("burn_cuda") is None:
        raise RuntimeError(f"{where}: needs the Cuda backend (pip install burn-cuda)")
    nvml = _Nvml.get()
    if nvml is None:
        raise RuntimeError(
            f"{where}: cannot load NVIDIA's management library (libnvidia-ml); is a driver installed?"
        )
    return nvml


class CudaMemory(_SampledMetric):
    """The memory in use on an NVIDIA GPU, in GB, with its total (part of Burn's ``CudaMetric``).

    Args:
        index: the GPU's index.

    Raises:
        RuntimeError: burn-cuda is not installed or NVML cannot be loaded.

    Example:
        >>> metric = CudaMemory(0)  # doctest: +SKIP
    """

    _unit = "GB"

    def __init__(self, index: int = 0) -> None:
        super().__init__()
        self._nvml = _nvml("CudaMemory")
        self._index = index
        self._total = math.nan
        self._name = f"GPU {index} Memory"

    def _sample(self) -> float:
        used, self._total = self._nvml.memory(self._index)
        return used

    def _formatted(self, value: float) -> str:
        return f"{value:.2f} / {self._total:.2f} GB"


class CudaUse(_SampledMetric):
    """The percentage of time an NVIDIA GPU was busy (part of Burn's ``CudaMetric``).

    Raises:
        RuntimeError: burn-cuda is not installed or NVML cannot be loaded.

    Example:
        >>> metric = CudaUse(0)  # doctest: +SKIP
    """

    _unit = "%"

    def __init__(self, index: int = 0) -> None:
        super().__init__()
        self._nvml = _nvml("CudaUse")
        self._index = index
        self._name = f"GPU {index} Usage"

    def _sample(self) -> float:
        return self._nvml.utilization(self._index)
