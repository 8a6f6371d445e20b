"""The progress of a run in flight: ``progress.json`` in its run folder, written by the run every
few seconds (:class:`~harness.training.callbacks.RunMonitor`) and read by whoever shows the grid.

The file is replaced atomically (written beside, then renamed), so a reader never sees half of
one; it is the only channel from a run to the display, so every executor (this process, a local
pool, Ray, SLURM) feeds the same display through the store's filesystem, which every worker sees.
A finished run removes it; an attempt killed mid-run leaves it behind until the next attempt
starts (``harness.execution.run_folder.prepare`` clears it), so a reader also checks its age.
No torch and no Lightning here: the command line imports this module.
"""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

PROGRESS = "progress.json"
EVERY_S = 2.0
"""Seconds between two writes of a run's progress (the first is written after its first step)."""


@dataclass(frozen=True)
class RunProgress:
    """Where one run is.

    Attributes:
        step: training steps done (global step; a resumed run counts its earlier attempts' steps).
        total: ``train.steps``.
        loss: the last training loss read back from the device (nats/token; at most a logging
            interval old), or None before the first one.
        start_step: the step this attempt started at (0, or the checkpoint's step when resumed).
        elapsed_s: seconds since this attempt's training started.
        updated_at: when this was written (Unix time, seconds).
    """

    step: int
    total: int
    loss: float | None
    start_step: int
    elapsed_s: float
    updated_at: float

    def eta_s(self) -> float | None:
        """Seconds of training left at this attempt's rate; None before a step was timed."""
        done = self.step - self.start_step
        if done <= 0 or self.elapsed_s <= 0:
            return None
        return (self.total - self.step) * self.elapsed_s / done


def write_progress(folder: Path, progress: RunProgress) -> None:
    """Replace ``folder/progress.json`` atomically (a failure to write is not the run's failure:
    it is ignored)."""
    tmp = folder / f".{PROGRESS}.{os.getpid()}.tmp"
    data = asdict(progress)
    if data["loss"] is not None and not math.isfinite(data["loss"]):
        data["loss"] = None
    try:
        tmp.write_text(json.dumps(data))
        os.replace(tmp, folder / PROGRESS)
    except OSError:
        tmp.unlink(missing_ok=True)


def read_progress(folder: Path, stale_s: float | None = None) -> RunProgress | None:
    """The progress of the run in ``folder``; None when there is none, it cannot be read, or it
    was written more than ``stale_s`` seconds ago (an attempt that died)."""
    try:
        data = json.loads((folder / PROGRESS).read_text())
        out = RunProgress(**data)
    except (OSError, ValueError, TypeError):
        return None
    if stale_s is not None and time.time() - out.updated_at > stale_s:
        return None
    return out


def remove_progress(folder: Path) -> None:
    """Drop ``folder/progress.json`` (the run is over)."""
    (folder / PROGRESS).unlink(missing_ok=True)
