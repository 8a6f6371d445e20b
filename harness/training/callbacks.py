"""The one Lightning callback that governs a run's life, :class:`RunMonitor`: the clock of the
training steps (the only source of a throughput figure), the run's time limit (``--run-timeout``),
its checkpoints (to resume an interrupted run) and its progress file (what ``ablate run`` shows
of a run in flight). One callback rather than four, because Lightning calls every hook of every
callback at every step.

With :mod:`harness.training.lit` and :mod:`harness.training.loop`, the only modules that import
Lightning. A resumed run ends exactly as an uninterrupted one: Lightning restores weights,
optimiser, schedule and loops; ``LitLM.on_save_checkpoint`` keeps the rest (validation curve, RNG,
...); the data stream skips the batches already trained on (``TaskData(start_step=...)``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lightning.pytorch as L
import torch

from harness.errors import TimedOut
from harness.training.progress import EVERY_S, RunProgress, write_progress

CHECKPOINT = "last.ckpt"


class RunMonitor(L.Callback):
    """Step clock, time limit, checkpoints and progress of one run.

    - Step clock: seconds inside training steps only, from ``on_train_batch_start`` to
      ``on_train_batch_end`` (forward, backward, clipping and the optimiser step), synchronised on
      CUDA at both ends so that queued kernels are counted in the step that launched them.
      Validation passes, checkpoint writes, logging flushes and the fetching of the next batch
      fall between two steps and are not counted (a timer around ``trainer.fit`` counted them all:
      the same 200 steps read 85,139 tokens/s validating every 200 steps and 61,086 every 10).
    - Time limit: counted from the callback's creation, checked after every training, validation
      and test batch (a single batch that never returns is not interrupted); raises
      :class:`~harness.errors.TimedOut`.
    - Checkpoints: ``checkpoint_dir/last.ckpt``, written at the end of a validation pass (so it
      always holds the validation curve so far) when ``checkpoint_every_s`` have passed since the
      previous one or the start of training (0: at every validation pass), so an interrupted run
      loses at most that plus one validation interval, and a run shorter than it writes none.
    - Progress: ``progress_dir/progress.json`` (:mod:`harness.training.progress`) after the first
      step and then every ``progress_every_s`` seconds; the loss shown is the last one the run
      read back from the device (no sync of its own).

    Attributes:
        seconds: summed step time of this process (this attempt only, for a resumed run).
        steps: training steps timed.
        tokens: tokens in the timed steps' inputs (``B x T`` each, this process).
        checkpoints: checkpoints written by this attempt.
    """

    def __init__(
        self,
        checkpoint_dir: Path | None = None,
        checkpoint_every_s: float = 0.0,
        timeout_s: float | None = None,
        progress_dir: Path | None = None,
        progress_every_s: float = EVERY_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.checkpoint_dir, self.checkpoint_every_s = checkpoint_dir, checkpoint_every_s
        self.limit, self.progress_dir, self.progress_every_s = timeout_s, progress_dir, progress_every_s
        self.seconds, self.steps, self.tokens, self.checkpoints = 0.0, 0, 0, 0
        self._t0: float | None = None
        self.clock = clock
        self._created = self._started = self._last_checkpoint = self._last_progress = clock()
        self._start_step: int | None = None
        self._cuda = False

    def on_train_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        # after a checkpoint is restored: global_step is the step this attempt starts at
        self._cuda = trainer.strategy.root_device.type == "cuda"
        self._started = self._last_checkpoint = self.clock()
        self._start_step = trainer.global_step
        self._last_progress = -float("inf")  # the first progress is written after the first step

    def on_train_batch_start(
        self, trainer: L.Trainer, pl_module: L.LightningModule, batch: Any, batch_idx: int
    ) -> None:
        if self._cuda:
            torch.cuda.synchronize(trainer.strategy.root_device)
        self._t0 = time.perf_counter()

    def on_train_batch_end(
        self, trainer: L.Trainer, pl_module: L.LightningModule, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        if self._cuda:
            torch.cuda.synchronize(trainer.strategy.root_device)
        if self._t0 is not None:
            self.seconds += time.perf_counter() - self._t0
            self.steps += 1
            self.tokens += int(batch[0].numel())
            self._t0 = None
        now = self.clock()
        if self.limit is not None:
            self._check(trainer, now)
        if self.progress_dir is not None and now - self._last_progress >= self.progress_every_s:
            self._last_progress = now
            self.write_progress(trainer, pl_module, now)

    def write_progress(self, trainer: L.Trainer, pl_module: L.LightningModule, now: float | None = None) -> None:
        """Write ``progress.json`` now (a no-op without ``progress_dir``)."""
        if self.progress_dir is None:
            return
        now = self.clock() if now is None else now
        steps = getattr(pl_module, "steps", None)
        write_progress(
            self.progress_dir,
            RunProgress(
                step=trainer.global_step,
                total=int(trainer.max_steps),
                loss=steps.last_finite if steps is not None else None,
                start_step=self._start_step or 0,
                elapsed_s=now - self._started,
                updated_at=time.time(),
            ),
        )

    def _check(self, trainer: L.Trainer, now: float | None = None) -> None:
        elapsed = (self.clock() if now is None else now) - self._created
        if self.limit is not None and elapsed > self.limit:
            raise TimedOut(trainer.global_step, elapsed, self.limit)

    def on_validation_batch_end(self, trainer: L.Trainer, *args: Any) -> None:
        if self.limit is not None:
            self._check(trainer)

    on_test_batch_end = on_validation_batch_end

    def on_validation_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if self.checkpoint_dir is None or trainer.sanity_checking:
            return
        now = self.clock()
        if now - self._last_checkpoint >= self.checkpoint_every_s:
            self.save(trainer)
            self._last_checkpoint = self.clock()

    def save(self, trainer: L.Trainer) -> None:
        """Write ``checkpoint_dir/last.ckpt`` now, replacing the previous one."""
        if self.checkpoint_dir is None:
            return
        trainer.save_checkpoint(Path(self.checkpoint_dir) / CHECKPOINT)
        self.checkpoints += 1

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
