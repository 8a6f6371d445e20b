"""Where the runs of a local process pool go: how many workers, and which GPUs each one sees.

CPU: every run uses ``threads`` torch threads and the default number of workers keeps
workers x threads within the cores. GPU: the visible GPUs (``CUDA_VISIBLE_DEVICES`` when set,
else all that torch counts) are cut into slots of ``gpus_per_run`` devices; each worker owns
one slot for its whole life and is pinned to it through ``CUDA_VISIBLE_DEVICES`` before CUDA is
initialised, so a run's ``cuda:0`` is its slot's first GPU. No torch import here unless
GPUs have to be counted.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from harness.errors import AblateError


def visible_gpus(environ: Mapping[str, str] | None = None, count: int | None = None) -> list[str]:
    """Identifiers of the GPUs this process may use, as ``CUDA_VISIBLE_DEVICES`` spells them.

    Args:
        environ: the environment to read (default ``os.environ``).
        count: the number of CUDA devices when ``CUDA_VISIBLE_DEVICES`` is unset (default: ask
            torch, which counts without initialising CUDA, where an NVIDIA driver is installed).
    """
    env = os.environ if environ is None else environ
    if "CUDA_VISIBLE_DEVICES" in env:
        raw = env["CUDA_VISIBLE_DEVICES"].strip()
        if raw in ("", "-1"):
            return []
        return [part.strip() for part in raw.split(",") if part.strip()]
    return [str(i) for i in range(_cuda_count() if count is None else count)]


def _cuda_count() -> int:
    """CUDA devices torch sees; 0 without importing torch where no NVIDIA driver is installed."""
    if not Path("/proc/driver/nvidia/gpus").exists() and shutil.which("nvidia-smi") is None:
        return 0
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def gpu_slots(gpus: list[str], per_run: int) -> list[str]:
    """Disjoint groups of ``per_run`` GPUs, each as a ``CUDA_VISIBLE_DEVICES`` value.

    Raises:
        AblateError: ``per_run`` < 1 or more than the GPUs visible.
    """
    if per_run < 1:
        raise AblateError(f"--gpus-per-run must be at least 1, got {per_run}")
    if per_run > len(gpus):
        seen = f"{len(gpus)} visible ({','.join(gpus)})" if gpus else "none visible (CUDA_VISIBLE_DEVICES, torch.cuda)"
        raise AblateError(
            f"--gpus-per-run {per_run} needs {per_run} GPU(s), {seen}; "
            f"lower --gpus-per-run or run on CPU with --gpus-per-run 0"
        )
    return [",".join(gpus[i : i + per_run]) for i in range(0, len(gpus) - per_run + 1, per_run)]


@dataclass(frozen=True)
class Placement:
    """How many workers run at once, and the GPU slot of each (empty on CPU)."""

    workers: int
    slots: tuple[str, ...] = ()

    @property
    def on_gpu(self) -> bool:
        return bool(self.slots)


def place(
    workers: int | None, todo: int, threads: int, gpus: list[str], gpus_per_run: int | None, cpus: int | None = None
) -> Placement:
    """Decide the pool for ``todo`` runs.

    Args:
        workers: ``--workers`` (None: one per GPU slot, else cores // threads).
        todo: runs to execute; never more workers than runs.
        threads: torch threads per run.
        gpus: :func:`visible_gpus`.
        gpus_per_run: ``--gpus-per-run`` (None: 1 when GPUs are visible; 0: CPU only).
        cpus: cores (default ``os.cpu_count()``).

    Raises:
        AblateError: more workers than GPU slots, or more GPUs per run than visible.
    """
    todo = max(todo, 1)
    if gpus_per_run == 0 or (gpus_per_run is None and not gpus):
        default = max(1, (cpus or os.cpu_count() or 1) // max(threads, 1))
        return Placement(max(1, min(workers or default, todo)))
    slots = gpu_slots(gpus, gpus_per_run or 1)
    if workers is not None and workers > len(slots):
        raise AblateError(
            f"--workers {workers} but only {len(slots)} GPU slot(s) ({len(gpus)} GPU(s) / "
            f"--gpus-per-run {gpus_per_run or 1}); use --workers {len(slots)} or fewer, "
            f"or --gpus-per-run 0 for CPU workers"
        )
    n = min(workers or len(slots), len(slots), todo)
    return Placement(n, tuple(slots[:n]))
