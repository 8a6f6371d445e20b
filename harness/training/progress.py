"""The progress of a run in flight: ``progress.json`` in its run folder.

It is replaced atomically every few seconds by the run (:class:`harness.training.loop.RunMonitor`)
and read by whoever shows the grid. Every executor (this process, a local pool, Ray, SLURM) feeds
the same display through the store's filesystem. A finished run removes it; an attempt killed
mid-run leaves it behind until the next attempt starts, so a reader also checks its age. No torch:
the command line imports it.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from harness.encode import dumps
from harness.files import write_atomic

PROGRESS = "progress.json"
EVERY_S = 2.0
"""Seconds between two writes of a run's progress (the first is written after its first step)."""


@dataclass(frozen=True)
class RunProgress:
    """Where one run is.

    ``step`` done (of every attempt) of ``total``; ``loss``, the last training loss read back
    (nats/token; None before one); ``start_step``, this attempt's first step; ``elapsed_s`` since
    this attempt's training started; ``updated_at`` (Unix time).
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
    """Replace ``folder/progress.json``, strict JSON (:mod:`harness.encode`: a NaN loss is null).

    A failure to write is ignored: not the run's failure.
    """
    try:  # never creates the run's folder; rewritten every EVERY_S seconds: no fsync
        write_atomic(folder / PROGRESS, dumps(asdict(progress)).encode(), parents=False, durable=False)
    except OSError:
        pass


def read_progress(folder: Path, stale_s: float | None = None) -> RunProgress | None:
    """The progress of the run in ``folder``, or None.

    None when there is none, it cannot be read, or it was written more than ``stale_s`` seconds ago
    (an attempt that died).
    """
    try:
        out = RunProgress(**json.loads((folder / PROGRESS).read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError):
        return None
    if stale_s is not None and time.time() - out.updated_at > stale_s:
        return None
    return out
