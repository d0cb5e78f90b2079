"""Where a training step's time goes: ``profile_steps=N`` profiles the last N steps of a run with
torch.profiler and writes ``RUN/profile.txt``, so a slow run says whether the device waited on
the host (launches, synchronisations, the loader) or which kernels took the time.

The report gives, over the profiled steps: wall seconds per step, the share of that wall time
in which at least one device kernel ran (busy share; the rest is the device idle, waiting for
the host), kernel launches and host-device synchronisations per step, and the operators and
kernels ranked by their own device time (torch's key_averages table).
"""
from __future__ import annotations

import time
from typing import Optional

import torch

from c4forge.core.io import atomic_write

SYNC_CALLS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize")


def busy_seconds(intervals: list[tuple[float, float]]) -> float:
    """Length of the union of (start, end) intervals: time in which at least one kernel ran
    (kernels of several streams may overlap; each instant counts once)."""
    total, end = 0.0, float("-inf")
    for start, stop in sorted(intervals):
        if stop <= end:
            continue
        total += stop - max(start, end)
        end = stop
    return total


class StepProfiler:
    """Profiles steps ``first`` .. ``first + count - 1`` (1-based, as the run counts them) and
    writes the report to ``path`` after the last of them."""

    def __init__(self, first: int, count: int, path: str, device: torch.device) -> None:
        self.first, self.last, self.path, self.device = first, first + count - 1, path, device
        self.profiler: Optional[torch.profiler.profile] = None
        self.started = 0.0

    def _sync(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def before_step(self, step: int) -> None:
        """Call with the number of the step about to run."""
        if step != self.first:
            return
        activities = [torch.profiler.ProfilerActivity.CPU]
        if self.device.type == "cuda":
            activities.append(torch.profiler.ProfilerActivity.CUDA)
        self._sync()
        self.profiler = torch.profiler.profile(activities=activities)
        self.profiler.__enter__()
        self.started = time.perf_counter()

    def after_step(self, step: int) -> None:
        """Call with the number of the step that just ran."""
        if self.profiler is None or step != self.last:
            return
        self._sync()
        wall = time.perf_counter() - self.started
        self.profiler.__exit__(None, None, None)
        with atomic_write(self.path) as handle:
            handle.write(self.report(self.profiler, wall, self.last - self.first + 1))
        self.profiler = None

    def report(self, profiler: torch.profiler.profile, wall: float, steps: int) -> str:
        events = profiler.events()
        kernels = [(e.time_range.start, e.time_range.end) for e in events
                   if e.device_type == torch.autograd.DeviceType.CUDA]
        launches = sum(1 for e in events if e.name in ("cudaLaunchKernel", "cuLaunchKernel", "cuLaunchKernelEx",
                                                      "cudaLaunchKernelExC"))
        syncs = sum(1 for e in events if e.name in SYNC_CALLS)
        busy = busy_seconds(kernels) / 1e6
        sort = "self_cuda_time_total" if kernels else "self_cpu_time_total"
        lines = [f"profiled steps: {steps}; wall {wall / steps * 1e3:.2f} ms per step",
                 f"device busy: {busy / steps * 1e3:.2f} ms per step ({busy / wall:.1%} of wall)"
                 if kernels else "device busy: no device kernels (CPU run)",
                 f"kernel launches per step: {launches / steps:.0f}; host-device synchronisations "
                 f"per step: {syncs / steps:.1f}", "",
                 profiler.key_averages().table(sort_by=sort, row_limit=30, max_name_column_width=70)]
        return "\n".join(lines) + "\n"
