"""Lightning callbacks that govern a run's life: a checkpoint after every validation pass (to
resume an interrupted run), the run's time limit (``--run-timeout``) and the clock of the
training steps (:class:`StepTimer`, the only source of a throughput figure).

With :mod:`harness.training.loop`, the only modules that import Lightning. A resumed run ends exactly
as an uninterrupted one: Lightning restores weights, optimiser, schedule and loops;
``LitLM.on_save_checkpoint`` keeps the rest (validation curve, RNG, ...); the data stream skips
the batches already trained on (``TaskData(start_step=...)``).
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

import lightning.pytorch as L
import torch

CHECKPOINT = "last.ckpt"


class TimedOut(RuntimeError):
    """The run went over its time limit (``--run-timeout``) and was stopped."""

    def __init__(self, step: int, elapsed: float, limit: float) -> None:
        super().__init__(f"stopped after {elapsed:.1f} s at step {step} (run timeout {limit:g} s)")
        self.step, self.elapsed, self.limit = step, elapsed, limit


class Deadline(L.Callback):
    """Stops a run cooperatively once it is over its time limit: checked after every training,
    validation and test batch (a single batch that never returns is not interrupted)."""

    def __init__(self, limit_s: float) -> None:
        self.limit, self.t0 = limit_s, time.monotonic()

    def _check(self, trainer: L.Trainer, *args: Any) -> None:
        elapsed = time.monotonic() - self.t0
        if elapsed > self.limit:
            raise TimedOut(trainer.global_step, elapsed, self.limit)

    on_train_batch_end = on_validation_batch_end = on_test_batch_end = _check


class StepTimer(L.Callback):
    """Seconds spent inside training steps only: from ``on_train_batch_start`` to
    ``on_train_batch_end`` (forward, backward, clipping and the optimiser step), synchronised on
    CUDA at both ends so that queued kernels are counted in the step that launched them.

    Validation passes, checkpoint writes, logging flushes and the fetching of the next batch
    fall between two steps and are not counted (a timer around ``trainer.fit`` counted them all:
    the same 200 steps read 85,139 tokens/s validating every 200 steps and 61,086 every 10).

    Attributes:
        seconds: summed step time of this process (this attempt only, for a resumed run).
        steps: training steps timed.
        tokens: tokens in the timed steps' inputs (``B x T`` each, this process).
    """

    def __init__(self) -> None:
        self.seconds, self.steps, self.tokens = 0.0, 0, 0
        self._t0: float | None = None

    @staticmethod
    def _sync(trainer: L.Trainer) -> None:
        device = trainer.strategy.root_device
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    def on_train_batch_start(
        self, trainer: L.Trainer, pl_module: L.LightningModule, batch: Any, batch_idx: int
    ) -> None:
        self._sync(trainer)
        self._t0 = time.perf_counter()

    def on_train_batch_end(
        self, trainer: L.Trainer, pl_module: L.LightningModule, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        self._sync(trainer)
        if self._t0 is not None:
            self.seconds += time.perf_counter() - self._t0
            self.steps += 1
            self.tokens += int(batch[0].numel())
            self._t0 = None

    def tokens_per_s(self) -> float:
        """Tokens per second of training steps; NaN when no step was timed."""
        return self.tokens / self.seconds if self.seconds > 0 else float("nan")


def resume_point(checkpoint_dir: Path | None, resume: bool = True) -> tuple[int, str | None]:
    """``(global step, path)`` of the run's last checkpoint, or ``(0, None)``.

    The checkpoint is loaded with ``weights_only=True`` (tensors and plain containers only); one
    that cannot be loaded (truncated, foreign, an incompatible version) is removed and the run
    starts afresh.
    """
    path = Path(checkpoint_dir) / CHECKPOINT if checkpoint_dir is not None else None
    if not resume or path is None or not path.is_file():
        return 0, None
    try:
        state = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
        return int(state["global_step"]), str(path)
    except Exception as exc:  # noqa: BLE001  any unreadable checkpoint means: start afresh
        logging.getLogger("ablate").warning("ignoring unloadable checkpoint %s (%s: %s)", path, type(exc).__name__, exc)
        path.unlink(missing_ok=True)
        return 0, None


def run_callbacks(checkpoint_dir: Path | None, timeout_s: float | None) -> list[L.Callback]:
    """A checkpoint after every validation pass (so it always holds the validation curve so far)
    into ``checkpoint_dir/last.ckpt``, and the run's time limit."""
    out: list[L.Callback] = []
    if checkpoint_dir is not None:
        out.append(
            L.callbacks.ModelCheckpoint(
                dirpath=checkpoint_dir,
                filename=CHECKPOINT.removesuffix(".ckpt"),
                save_top_k=1,
                save_on_train_epoch_end=False,
                enable_version_counter=False,
            )
        )
    if timeout_s:
        out.append(Deadline(timeout_s))
    return out
