"""The GPU's SM clock, power and clock-event reasons, sampled through NVML every few milliseconds
while in a `with` block, and read back over any window of wall-clock time: whether a timing that
came out slower than the same kernel's in another engine ran at a lower clock.

NVML through ctypes (libnvidia-ml.so.1, which the driver installs): nvidia-smi's own loop samples
at most every 100 ms and buffers what it prints, and a candidate's timed calls hold the GPU for
100-200 ms. Without NVML (no GPU, the CPU path) nothing is sampled and every window reads empty.
"""

import ctypes
import threading
import time

# nvmlClocksEventReasons bits (nvml.h): why the clock is below its maximum.
REASONS = {
    0x1: "idle",
    0x2: "app_clocks",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal",
    0x40: "hw_thermal",
    0x80: "hw_power_brake",
    0x100: "display_clock",
}
NVML_CLOCK_SM = 1
NVML_TEMPERATURE_GPU = 0


def reason_names(mask: int) -> list[str]:
    return [name for bit, name in REASONS.items() if mask & bit]


class _Nvml:
    """The few NVML calls the sampler makes, on GPU `index`."""

    def __init__(self, index: int = 0):
        self.lib = ctypes.CDLL("libnvidia-ml.so.1")
        if self.lib.nvmlInit_v2() != 0:
            raise OSError("nvmlInit failed")
        self.handle = ctypes.c_void_p()
        if self.lib.nvmlDeviceGetHandleByIndex_v2(index, ctypes.byref(self.handle)) != 0:
            raise OSError(f"no GPU {index}")
        # The older name of the same call, which every driver still exports.
        self._reasons = self.lib.nvmlDeviceGetCurrentClocksThrottleReasons

    def sample(self) -> tuple[int, float, int, int]:
        """(SM clock MHz, power W, reasons mask, temperature C)."""
        clock, power, temp = ctypes.c_uint(), ctypes.c_uint(), ctypes.c_uint()
        reasons = ctypes.c_ulonglong()
        self.lib.nvmlDeviceGetClockInfo(self.handle, NVML_CLOCK_SM, ctypes.byref(clock))
        self.lib.nvmlDeviceGetPowerUsage(self.handle, ctypes.byref(power))
        self._reasons(self.handle, ctypes.byref(reasons))
        self.lib.nvmlDeviceGetTemperature(self.handle, NVML_TEMPERATURE_GPU, ctypes.byref(temp))
        return clock.value, power.value / 1000, reasons.value, temp.value

    def close(self) -> None:
        self.lib.nvmlShutdown()


class Sampler:
    """A thread running `_run` while in a `with` block; `_stop` is set when the block ends."""

    def __init__(self):
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        raise NotImplementedError

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *_):
        self._stop.set()
        self._thread.join()


class GpuClocks(Sampler):
    """Samples (epoch ms, SM MHz, W, reasons, C) every `every_s` in a thread while in the block."""

    def __init__(self, every_s: float = 0.01, index: int = 0):
        super().__init__()
        self.every_s, self.index, self.samples = every_s, index, []

    def _run(self) -> None:
        try:
            nvml = _Nvml(self.index)
        except (OSError, AttributeError):
            return  # no NVML here: nothing sampled
        try:
            while not self._stop.is_set():
                self.samples.append((time.time() * 1000, *nvml.sample()))
                self._stop.wait(self.every_s)
        finally:
            nvml.close()

    def during(self, start_ms: float, end_ms: float) -> dict | None:
        """The samples inside [start_ms, end_ms] (the one just before it where none fall inside):
        the lowest SM clock, the highest power and temperature, every reason seen; None without any."""
        inside = [s for s in self.samples if start_ms <= s[0] <= end_ms]
        before = [s for s in self.samples if s[0] < start_ms]
        inside = inside or before[-1:]
        if not inside:
            return None
        reasons = 0
        for s in inside:
            reasons |= s[3]
        return {
            "samples": len(inside),
            "sm_mhz_min": min(s[1] for s in inside),
            "sm_mhz_max": max(s[1] for s in inside),
            "power_w_max": max(s[2] for s in inside),
            "temp_c_max": max(s[4] for s in inside),
            "reasons": reason_names(reasons),
        }
