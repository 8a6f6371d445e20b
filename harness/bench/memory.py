"""Peak memory of one attention call, as ``ablate bench attention`` reads it (see
:mod:`harness.bench.attention` for why the CPU reading needs a fresh process per measurement):
on CUDA torch's allocator statistics, on CPU the process's resident set (``/proc/self/status``)."""

from __future__ import annotations

import resource

import torch

MEMORY = {
    "cuda": "torch.cuda.max_memory_allocated during the first forward + backward at T, after "
    "reset_peak_memory_stats; base: memory_allocated before it (weights, inputs)",
    "cpu": "peak RSS (VmHWM) during the first forward + backward at T, in a fresh forkserver child per "
    "(kernel, length), the peak reset after a T=16 call; base: the child's RSS at that reset",
}
"""What the peak and base of a row are, per device (written into the bench's JSON)."""


def status_mib(key: str) -> float | None:
    """A size field of ``/proc/self/status`` (``VmRSS``, ``VmHWM``) in MiB, or None without ``/proc``."""
    try:
        with open("/proc/self/status") as fh:
            return next(int(line.split()[1]) / 1024 for line in fh if line.startswith(key + ":"))
    except (OSError, StopIteration):
        return None


def start(device: str) -> float | None:
    """MiB in use now; resets the peak to it (on CPU where Linux allows: ``/proc/self/clear_refs``)."""
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
        return torch.cuda.memory_allocated() / 2**20
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")  # Linux >= 4.0: peak RSS := current RSS
    except OSError:
        pass  # the peak then also covers the imports, about as large as the base
    return status_mib("VmRSS")


def peak(device: str) -> float:
    """MiB at the peak since :func:`start` (CUDA: allocated by torch; CPU: the process's ``VmHWM``,
    else ``ru_maxrss``)."""
    if device == "cuda":
        return torch.cuda.max_memory_allocated() / 2**20
    peak = status_mib("VmHWM")
    if peak is None:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    return peak
