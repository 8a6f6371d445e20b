"""The LightningModule and DataModule of a run.

:class:`LitLM` wraps the pure-torch :class:`~harness.modules.TransformerLM` (loss, optimiser, schedule, validation and
test sums, the state a resumed run restores); :class:`TaskData` serves one task's batches from the seeded streams of
:mod:`harness.seeding`; :class:`StepLog` keeps every step's loss and gradient norm without a host-device sync per step.
:func:`harness.training.loop.train` runs them.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import lightning.pytorch as L
import numpy as np
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, IterableDataset, TensorDataset

from harness.config import RunConfig
from harness.errors import Diverged
from harness.modules import TransformerLM
from harness.seeding import numpy_rng
from harness.tasks import IGNORE_INDEX, Task
from harness.threshold import Threshold
from harness.training import precision as prec
from harness.training.scoring import add_sums, score, summarise, undefined_reason

CSV_FILE = "metrics.csv"  # Lightning's CSVLogger file in run_dir/csv/
LOG_EVERY = 25
"""Steps between two rows of training loss and learning rate in the logs (Lightning's
``log_every_n_steps``; the last step is logged too): how often losses are read back from the device."""


def salt_stream(salt: int) -> tuple[int, ...]:
    """The sub-stream of ``train.seed_salt``: none at 0, so unsalted runs keep their streams."""
    return (salt,) if salt else ()


def lr_factor(step: int, warmup: int, total: int, min_ratio: float) -> float:
    """Linear warm-up over ``warmup`` steps, then cosine decay to ``min_ratio`` at ``total``.

    ``min_ratio`` 1 holds the rate constant after the warm-up (``warmup`` 0: constant throughout).
    """
    if step < warmup:
        return (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    return min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * progress))


SWING_WINDOW = 51
"""Steps of the centred rolling median that :func:`swing` takes as a gradient norm's trend: long
enough that a spike of a few steps does not move it, short against the hundreds of steps over which
the norm falls as the loss does."""


def swing(norms: np.ndarray, warmup: int) -> float:
    """``grad_norm_cv_detrended``: the relative size of the gradient norm's swings about its own trend.

    It is the standard deviation of log gradient norm about its rolling median (:data:`SWING_WINDOW` steps, centred;
    the series' end values repeated beyond its ends) over the steps after ``warmup``, finite norms only: about std /
    mean where the swings are small, unmoved by the early fall of the norm or a warm-up. NaN with fewer than 2 such
    steps.

    Args:
        norms: (steps,) every step's gradient norm before clipping, in step order.
        warmup: the warm-up steps (``train.warmup_steps``), left out.
    """
    from scipy.ndimage import median_filter

    after = np.asarray(norms, dtype=np.float64)[warmup:]
    logs = np.log(after[np.isfinite(after) & (after > 0)])
    if logs.size < 2:
        return math.nan
    return float(np.std(logs - median_filter(logs, size=min(SWING_WINDOW, logs.size), mode="nearest")))


class StepLog:
    """Per-step training loss and gradient norm, kept on the device.

    They are brought to the host by :meth:`read_back` every few steps (each logging point, before a validation pass or a
    checkpoint, at the end), folded in step order: the first non-finite loss raises :class:`~harness.errors.Diverged`
    with its step and the last finite loss, as a check after every step would; the gradient-norm sums (sum, sum of
    squares, finite steps, non-finite steps) are added one step at a time in float32, the figures of a per-step device
    sum to the last bit; :meth:`norm_series` gives every step's norm (float32, in step order) for :func:`swing`.

    Args:
        capacity: the losses held between two read-backs (the logging interval).
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = max(1, capacity)
        self.last_finite: float | None = None  # the last finite training loss read back
        self.grad_sums = np.zeros(4, dtype=np.float32)
        self.norms: list[np.ndarray] = []  # every step's gradient norm, in blocks of read-backs
        self.complete = True  # False: resumed from a checkpoint that did not keep the norms
        self._losses: list[torch.Tensor] = []
        self._norms: list[torch.Tensor] = []
        self._first_step = 0  # the step of the first buffered loss

    def add_loss(self, step: int, loss: torch.Tensor) -> None:
        """Buffer the training loss (0-dim) of ``step``; no sync."""
        if len(self._losses) == self.capacity:
            raise RuntimeError("StepLog full: read_back() was not called within its capacity")
        if not self._losses:
            self._first_step = step
        self._losses.append(loss.detach().float())

    def add_grad_norm(self, norm: torch.Tensor) -> None:
        """Buffer the gradient norm (0-dim) of the step being taken; no sync."""
        self._norms.append(norm.detach().float())

    def read_back(self) -> float | None:
        """Fold the buffers in; returns the latest loss read back (None: none was buffered)."""
        latest = None
        values, self._losses = (torch.stack(self._losses).tolist() if self._losses else []), []
        for i, value in enumerate(values):
            if not math.isfinite(value):
                raise Diverged(self._first_step + i, self.last_finite)
            self.last_finite = latest = value
        self._fold_norms()
        return latest

    def _fold_norms(self) -> None:
        norms, self._norms = (torch.stack(self._norms).cpu().numpy() if self._norms else []), []
        if len(norms):
            self.norms.append(norms)
        s, one = self.grad_sums, np.float32(1)
        for n in norms:  # float32, one step at a time: the order of a per-step device sum
            if np.isfinite(n):
                s[0], s[1], s[2] = s[0] + n, s[1] + n * n, s[2] + one
            else:
                s[3] = s[3] + one

    def grad_state(self) -> torch.Tensor:
        """The gradient-norm sums (norms folded in first) as the float32 tensor a checkpoint holds."""
        self._fold_norms()
        return torch.from_numpy(self.grad_sums.copy())

    def norm_series(self) -> np.ndarray:
        """(steps,) float32: every step's gradient norm so far (norms folded in first)."""
        self._fold_norms()
        return np.concatenate(self.norms) if self.norms else np.zeros(0, dtype=np.float32)

    def restore(self, grad_state: torch.Tensor, last_finite: float | None, norms: torch.Tensor | None = None) -> None:
        """Continue from a checkpoint's sums, last finite loss and per-step norms.

        ``norms`` None: a checkpoint written without them: the run's ``grad_norm_cv_detrended`` is then unknown, NaN.
        """
        self.grad_sums = grad_state.numpy(force=True).astype(np.float32)  # a copy
        self.last_finite, self._losses, self._norms = last_finite, [], []
        self.norms = [norms.numpy(force=True).astype(np.float32)] if norms is not None else []
        self.complete = norms is not None


class _TrainStream(IterableDataset):
    """``steps`` training batches of the run's data stream (the same for every variant).

    A resumed run draws and drops the first ``start``, so the stream continues where it stopped.
    """

    def __init__(
        self, task: Task, batch_size: int, seq_len: int, steps: int, seed: int, start: int = 0, salt: int = 0
    ) -> None:
        self.task, self.batch_size, self.seq_len, self.steps, self.seed = task, batch_size, seq_len, steps, seed
        self.start, self.salt = start, salt

    def __iter__(self) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        rng = numpy_rng(self.seed, "data", *salt_stream(self.salt))
        for i in range(self.steps):
            batch = self.task.sample(self.batch_size, self.seq_len, rng, "train")
            if i >= self.start:
                yield batch

    def __len__(self) -> int:
        return self.steps


class TaskData(L.LightningDataModule):
    """Training stream, validation set at L (val split) and one test set per evaluation length.

    The evaluation sets depend only on (task, seed, length). ``eval_split="val"`` (tuning) draws the per-length sets
    from the validation split, so an Optuna objective never sees the test split (else ``"test"``; any other value:
    ``ValueError``). ``start_step``: a resumed run's step (the batches already trained on are skipped).
    """

    def __init__(self, task: Task, cfg: RunConfig, seed: int, eval_split: str = "test", start_step: int = 0) -> None:
        super().__init__()
        if eval_split not in ("val", "test"):
            raise ValueError(f"eval_split must be 'val' or 'test', got {eval_split!r}")
        self.task, self.cfg, self.seed, self.eval_split, self.start_step = task, cfg, seed, eval_split, start_step

    def train_dataloader(self) -> DataLoader:
        """The run's seeded training stream (salted by ``train.seed_salt``), from ``start_step`` on."""
        t = self.cfg.train
        stream = _TrainStream(self.task, t.batch_size, t.seq_len, t.steps, self.seed, self.start_step, t.seed_salt)
        return DataLoader(stream, batch_size=None)

    def val_dataloader(self) -> DataLoader:
        """The validation set: ``eval.val_examples`` sequences at L from the val split, ``eval.batch_size`` a batch."""
        x, y = self.task.sample(self.cfg.eval.val_examples, self.cfg.train.seq_len, numpy_rng(self.seed, "val"), "val")
        return DataLoader(TensorDataset(x, y), batch_size=self.cfg.eval.batch_size)

    def test_dataloader(self) -> list[DataLoader]:
        """One loader per evaluation length from the ``eval_split`` split, in batches of about constant memory."""
        loaders, e = [], self.cfg.eval
        for mult, length in zip(e.length_multipliers, self.cfg.eval_lengths()):
            x, y = self.task.sample(e.n_examples, length, numpy_rng(self.seed, self.eval_split, mult), self.eval_split)
            # eval memory about constant across lengths: batch x length <= eval.batch_size x L
            batch = max(1, e.batch_size * self.cfg.train.seq_len // length)
            loaders.append(DataLoader(TensorDataset(x, y), batch_size=batch))
        return loaders


class LitLM(L.LightningModule):
    """Causal LM training around a pure :class:`TransformerLM`.

    Token-level cross-entropy (nats) over scored positions; AdamW over ``model.parameter_groups`` (weight decay on
    Linear weights only: embedding rows never trained keep their initial values), with :func:`lr_factor`. The training
    loss is read back and logged every ``log_every`` steps: :data:`LOG_EVERY`, at most ``train.steps``.

    Args:
        model: the pure-torch model trained.
        cfg: the run's config (``train``: optimiser, schedule, clipping, precision, steps; ``eval``: the test lengths).
        task: the task trained on (its kind, padding token and bytes per token).
        target: the convergence target on a validation metric, or None.
    """

    def __init__(self, model: TransformerLM, cfg: RunConfig, task: Task, target: Threshold | None) -> None:
        super().__init__()
        self.model, self.cfg, self.kind, self.target = model, cfg, task.kind, target
        self.pad_id = task.pad_id  # the task's padding token: hidden from attention (key padding mask)
        self.token_bytes = task.token_bytes  # (V,) bytes per token id, for bpb; not a buffer: no state_dict key
        self.precision_ran: str | None = None
        self.history: list[dict[str, float]] = []
        self.test_metrics: dict[str, float] = {}
        self.undefined: dict[str, str] = {}  # test metric -> why it is NaN (scoring.undefined_reason)
        self.steps_to_target: int | None = None
        self.log_every = max(1, min(LOG_EVERY, cfg.train.steps))  # the Trainer's log_every_n_steps
        self.steps = StepLog(self.log_every)
        self._sums: list[dict[str, float]] = []
        self.automatic_optimization = False  # one step is training_step's own: no closure, no per-step hooks

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        """(B, T) -> logits (B, T, V); padding tokens (``pad_id``) are hidden keys."""
        return self.model(idx) if self.pad_id is None else self.model(idx, idx == self.pad_id)

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> torch.Tensor:
        """One optimiser step; returns the step's loss.

        Forward, loss (read back and logged every ``log_every`` steps), backward (scaled under fp16), the optimiser's
        step (through Lightning's precision plugin, which calls :meth:`on_before_optimizer_step`), the schedule's step.
        """
        x, y = batch
        step = self.global_step  # before the optimiser's step counts this one
        logits = self(x)  # (B, T, V)
        if self.precision_ran is None:  # what ran, observed, never what was asked for
            self.precision_ran = prec.observed(logits, self.model.tok_emb.weight)
            prec.check_ran(self.cfg.train.precision, self.precision_ran)
        loss = F.cross_entropy(logits.float().flatten(0, 1), y.flatten(), ignore_index=IGNORE_INDEX)
        self.steps.add_loss(step, loss)
        optimizer, schedule = self.optimizers(), self.lr_schedulers()
        if (step + 1) % self.log_every == 0 or step + 1 == self.cfg.train.steps:
            # to the loggers directly, as Lightning's self.log would at this step (at a tenth of its cost)
            row = {"train/loss": self.steps.read_back(), "train/lr": schedule.get_last_lr()[0]}  # Diverged here
            for logger in self.loggers:
                logger.log_metrics(row | {"epoch": self.current_epoch}, step=step)
        optimizer.zero_grad()
        self.manual_backward(loss)
        optimizer.step()
        schedule.step()
        return loss

    def on_before_optimizer_step(self, optimizer: Any) -> None:
        """The gradient norm of every step, computed once, buffered and used to clip.

        It is buffered before clipping (unscaled under fp16, where the scaler then skips a non-finite step), then used
        to clip at ``train.grad_clip`` (0: no clipping), over the optimiser's parameters as Lightning would.
        """
        params = [p for group in optimizer.param_groups for p in group["params"] if p.grad is not None]
        if not params:
            return
        norm = torch.nn.utils.get_total_norm([p.grad for p in params])
        self.steps.add_grad_norm(norm)
        if self.cfg.train.grad_clip:
            torch.nn.utils.clip_grads_with_norm_(params, self.cfg.train.grad_clip, norm)

    def on_validation_epoch_start(self) -> None:
        """Read the buffered training losses back (:class:`~harness.errors.Diverged` here) and start the pass's sums."""
        self.steps.read_back()  # a diverged run is never validated or checkpointed
        self._sums = [{}]

    def test_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int, dataloader_idx: int = 0) -> None:
        """Add the sums (:func:`~harness.training.scoring.score`) of a (B, T) batch to loader ``dataloader_idx``'s."""
        add_sums(self._sums[dataloader_idx], score(self(batch[0]), batch[1], self.token_bytes))

    validation_step = test_step

    def on_validation_epoch_end(self) -> None:
        """Log the validation metrics at L, add them to the history, and note the first step meeting the target."""
        metrics = summarise(self._sums[0], self.kind, "")
        self.log_dict({f"val/{k}": v for k, v in metrics.items()})
        self.history.append({"step": self.global_step, **metrics})
        t = self.target
        if t is not None and self.steps_to_target is None and t.passes(metrics.get(t.metric)):
            self.steps_to_target = self.global_step

    def on_test_epoch_start(self) -> None:
        """Start one set of sums per evaluation length."""
        self._sums = [{} for _ in self.cfg.eval.length_multipliers]

    def on_test_epoch_end(self) -> None:
        """Make each length's test metrics (suffix ``@x<multiplier>``) and note why any of them is NaN."""
        for sums, mult in zip(self._sums, self.cfg.eval.length_multipliers):
            metrics = summarise(sums, self.kind, f"@x{mult}")
            self.test_metrics.update(metrics)
            if why := undefined_reason(sums, mult * self.cfg.train.seq_len):
                self.undefined |= dict.fromkeys(metrics, why)

    def best_validation(self) -> tuple[float, int | None]:
        """The lowest finite validation loss at L and its step (NaN and None: no finite one)."""
        passes = [(h["loss"], int(h["step"])) for h in self.history if math.isfinite(h.get("loss", math.nan))]
        return min(passes, default=(math.nan, None))

    def run_metrics(self) -> dict[str, float]:
        """What the run measured of itself, over every attempt.

        ``grad_norm_mean``, ``grad_norm_cv`` (std / mean over every step, the warm-up and the early fall of the norm
        included), ``grad_norm_cv_detrended`` (:func:`swing`: the swings of claim layernorm-needed; NaN for a run
        resumed from a checkpoint that did not keep every step's norm), ``nonfinite_grad_steps``, ``steps_to_target``
        (the step budget when never reached), ``target_reached``, ``train_loss_final`` (the last finite training loss,
        nats/token) and ``val_loss_best`` (the lowest validation loss at L).
        """
        total, sq, n, bad = self.steps.grad_state().tolist()
        mean = total / n if n else math.nan
        var = max(sq / n - mean * mean, 0.0) if n else math.nan
        reached, last = self.steps_to_target, self.steps.last_finite
        detrended = swing(self.steps.norm_series(), self.cfg.train.warmup_steps) if self.steps.complete else math.nan
        return {
            "grad_norm_mean": mean,
            "grad_norm_cv": math.sqrt(var) / mean if n and mean else math.nan,
            "grad_norm_cv_detrended": detrended,
            "nonfinite_grad_steps": bad,
            "steps_to_target": float(reached if reached is not None else self.cfg.train.steps),
            "target_reached": float(reached is not None),
            "train_loss_final": float(last) if last is not None else math.nan,
            "val_loss_best": self.best_validation()[0],
        }

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        """Keep what lives outside the weights, so a resumed run ends as an uninterrupted one.

        That is the validation curve, convergence step, last finite loss, gradient-norm sums and per-step norms, the
        precision that ran and the global RNG state; also the CSV log's rows so far (flushed here).
        """
        self.steps.read_back()  # never a checkpoint of a diverged run
        state = checkpoint["ablate"] = {
            "history": self.history,
            "steps_to_target": self.steps_to_target,
            "last_finite": self.steps.last_finite,
            "grad_stats": self.steps.grad_state(),
            "grad_norms": torch.from_numpy(self.steps.norm_series()),
            "precision_ran": self.precision_ran,
            "rng": torch.get_rng_state(),
        }
        for logger in self.loggers:
            if isinstance(logger, L.loggers.CSVLogger):
                logger.save()
                if (path := Path(logger.log_dir) / CSV_FILE).is_file():
                    with open(path, newline="", encoding="utf-8") as fh:
                        state["csv_rows"] = sum(1 for _ in csv.DictReader(fh))

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        """Restore what :meth:`on_save_checkpoint` kept outside the weights, the global RNG state included."""
        state = checkpoint["ablate"]
        self.history, self.steps_to_target = list(state["history"]), state["steps_to_target"]
        self.precision_ran = state["precision_ran"]
        self.steps.restore(state["grad_stats"], state["last_finite"], state.get("grad_norms"))
        torch.set_rng_state(state["rng"])

    def configure_optimizers(self) -> dict[str, Any]:
        """AdamW over ``model.parameter_groups`` at ``train.lr``, its rate scaled every step by :func:`lr_factor`."""
        t = self.cfg.train
        opt = torch.optim.AdamW(
            self.model.parameter_groups(t.weight_decay), lr=t.lr, betas=(0.9, 0.95), eps=prec.adam_eps(t.precision)
        )
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_factor(s, t.warmup_steps, t.steps, t.min_lr_ratio))
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}
