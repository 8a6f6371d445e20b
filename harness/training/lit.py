"""The LightningModule and DataModule of a run: :class:`LitLM` wraps the pure-torch
:class:`~harness.modules.TransformerLM` (loss, optimiser, schedule, validation and test sums, the
state a resumed run restores); :class:`TaskData` serves one task's batches from the seeded streams
of :mod:`harness.seeding`. :func:`harness.training.loop.train` runs them.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

import lightning.pytorch as L
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, IterableDataset, TensorDataset

from harness.config import RunConfig
from harness.modules import TransformerLM
from harness.seeding import numpy_rng
from harness.tasks import IGNORE_INDEX, Task
from harness.training import precision as prec
from harness.training.scoring import add_sums, score, summarise, undefined_reason
from harness.training.step_log import StepLog


class Target(Protocol):
    """A convergence target on a validation metric (:class:`harness.experiment.declaration.Threshold`)."""

    metric: str

    def passes(self, value: float | None) -> bool: ...


def salt_stream(salt: int) -> tuple[int, ...]:
    """The sub-stream of ``train.seed_salt``: none at 0, so unsalted runs keep their streams."""
    return (salt,) if salt else ()


class _TrainStream(IterableDataset):
    """``steps`` training batches drawn from the run's data stream (same for every variant).

    A resumed run passes ``start``: the first ``start`` batches are drawn and dropped, so the
    stream continues exactly where the interrupted attempt stopped.
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

    The validation and test sets depend only on (task, seed, length), never on the variant.
    ``eval_split="val"`` (tuning) draws the per-length evaluation sets from the validation split
    instead, so an Optuna objective never sees the test split the comparison uses.
    """

    def __init__(self, task: Task, cfg: RunConfig, seed: int, eval_split: str = "test", start_step: int = 0) -> None:
        super().__init__()
        if eval_split not in ("val", "test"):
            raise ValueError(f"eval_split must be 'val' or 'test', got {eval_split!r}")
        self.task, self.cfg, self.seed, self.eval_split = task, cfg, seed, eval_split
        self.lengths = cfg.eval_lengths()
        self.start_step = start_step  # a resumed run: batches already trained on are skipped

    def train_dataloader(self) -> DataLoader:
        t = self.cfg.train
        stream = _TrainStream(self.task, t.batch_size, t.seq_len, t.steps, self.seed, self.start_step, t.seed_salt)
        return DataLoader(stream, batch_size=None)

    def val_dataloader(self) -> DataLoader:
        x, y = self.task.sample(self.cfg.eval.val_examples, self.cfg.train.seq_len, numpy_rng(self.seed, "val"), "val")
        return DataLoader(TensorDataset(x, y), batch_size=self.cfg.eval.batch_size)

    def test_dataloader(self) -> list[DataLoader]:
        loaders = []
        for mult, length in zip(self.cfg.eval.length_multipliers, self.lengths):
            rng = numpy_rng(self.seed, self.eval_split, mult)
            x, y = self.task.sample(self.cfg.eval.n_examples, length, rng, self.eval_split)
            loaders.append(DataLoader(TensorDataset(x, y), batch_size=self._eval_batch(length)))
        return loaders

    def _eval_batch(self, length: int) -> int:
        # keep eval memory roughly constant across lengths: batch x length <= eval.batch x L
        return max(1, self.cfg.eval.batch_size * self.cfg.train.seq_len // length)


class LitLM(L.LightningModule):
    """Causal LM training around a pure :class:`TransformerLM`.

    Loss: token-level cross-entropy (nats) over scored positions. Optimiser: AdamW with
    ``model.parameter_groups`` (weight decay on Linear weights only: embeddings, including the
    learned position table, are not decayed, so rows never trained keep their initial values).
    """

    def __init__(
        self,
        model: TransformerLM,
        cfg: RunConfig,
        task_kind: str,
        target: Target | None = None,
        pad_id: int | None = None,
        token_bytes: torch.Tensor | None = None,
        log_every: int = 25,
    ) -> None:
        super().__init__()
        self.model, self.cfg, self.kind, self.target = model, cfg, task_kind, target
        self.pad_id = pad_id  # the task's padding token: hidden from attention (key padding mask)
        self.token_bytes = token_bytes  # (V,) bytes per token id, for bpb; not a buffer: no state_dict key
        self.precision_ran: str | None = None
        self.multipliers = list(cfg.eval.length_multipliers)
        self.history: list[dict[str, float]] = []
        self.test_metrics: dict[str, float] = {}
        self.undefined: dict[str, str] = {}  # test metric -> why it is NaN (scoring.undefined_reason)
        self.steps_to_target: int | None = None
        self.log_every = max(1, min(log_every, cfg.train.steps))  # the Trainer's log_every_n_steps
        self.steps = StepLog(self.log_every)  # per-step loss and gradient norm, read back every log_every steps
        self._sums: dict[int, dict[str, float]] = {}
        self._params: list[torch.nn.Parameter] | None = None

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        """(B, T) -> logits (B, T, V); padding tokens (``pad_id``) are hidden keys."""
        return self.model(idx) if self.pad_id is None else self.model(idx, idx == self.pad_id)

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> torch.Tensor:
        x, y = batch
        logits = self(x)  # (B, T, V)
        if self.precision_ran is None:  # what ran, observed, never what was asked for
            self.precision_ran = prec.observed(logits, self.model.tok_emb.weight)
            prec.check_ran(self.cfg.train.precision, self.precision_ran)
        loss = F.cross_entropy(logits.float().flatten(0, 1), y.flatten(), ignore_index=IGNORE_INDEX)
        step = self.global_step
        self.steps.add_loss(step, loss)  # no host sync: read back every log_every steps
        if (step + 1) % self.log_every == 0 or step + 1 == self.cfg.train.steps:
            self._log_train(step, self.steps.read_back())  # raises Diverged at a non-finite loss
        return loss

    def _log_train(self, step: int, loss: float | None) -> None:
        """Training loss and learning rate of ``step``, at Lightning's logging points (every
        ``log_every`` steps) and at the last step, which Lightning's cadence would leave out."""
        lr = self.lr_schedulers().get_last_lr()[0]
        if (step + 1) % self.log_every == 0:  # Lightning writes them at the end of this step
            self.log("train/loss", loss, on_step=True, on_epoch=False)
            self.log("train/lr", lr, on_step=True, on_epoch=False)
            return
        for logger in self.loggers:  # under Lightning's step and epoch keys
            logger.log_metrics({"train/loss": loss, "train/lr": lr, "epoch": self.current_epoch}, step=step)

    def on_validation_epoch_start(self) -> None:
        self.steps.read_back()  # a diverged run is never validated or checkpointed
        self._sums = {0: {}}

    def validation_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> None:
        add_sums(self._sums[0], score(self(batch[0]), batch[1], self.token_bytes))

    def on_validation_epoch_end(self) -> None:
        metrics = summarise(self._sums[0], self.kind, "")
        self.log_dict({f"val/{k}": v for k, v in metrics.items()})
        self.history.append({"step": self.global_step, **metrics})
        if (
            self.target is not None
            and self.steps_to_target is None
            and self.target.passes(metrics.get(self.target.metric))
        ):
            self.steps_to_target = self.global_step

    def on_test_epoch_start(self) -> None:
        self._sums = {i: {} for i in range(len(self.multipliers))}

    def test_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int, dataloader_idx: int = 0) -> None:
        add_sums(self._sums[dataloader_idx], score(self(batch[0]), batch[1], self.token_bytes))

    def on_test_epoch_end(self) -> None:
        for i, mult in enumerate(self.multipliers):
            metrics = summarise(self._sums[i], self.kind, f"@x{mult}")
            self.test_metrics.update(metrics)
            if why := undefined_reason(self._sums[i], mult * self.cfg.train.seq_len):
                self.undefined |= dict.fromkeys(metrics, why)

    def on_before_optimizer_step(self, optimizer: Any) -> None:
        """Buffer the gradient norm of every step (before clipping; unscaled under fp16, where
        the scaler then skips a non-finite step), on the device, without a sync per step."""
        if self._params is None:
            self._params = list(self.model.parameters())
        grads = [p.grad for p in self._params if p.grad is not None]
        if grads:
            self.steps.add_grad_norm(torch.nn.utils.get_total_norm(grads).float())

    def grad_metrics(self) -> dict[str, float]:
        """``grad_norm_mean``, ``grad_norm_cv`` (std / mean over steps: the "swings" of claim
        layernorm-needed) and ``nonfinite_grad_steps`` (steps with a NaN/inf gradient), over the whole
        run (a resumed run restores the sums from its checkpoint)."""
        total, sq, n, bad = self.steps.grad_state().tolist()
        mean = total / n if n else float("nan")
        var = max(sq / n - mean * mean, 0.0) if n else float("nan")
        return {
            "grad_norm_mean": mean,
            "grad_norm_cv": math.sqrt(var) / mean if n and mean else float("nan"),
            "nonfinite_grad_steps": bad,
        }

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        """Keep what lives outside the weights, so a resumed run ends as an uninterrupted one: the
        validation curve so far, the convergence step, the last finite loss, the gradient-norm
        sums, the precision that ran and the global RNG (dropout) state; and the CSV log, flushed
        here, with the number of its rows (a resumed run keeps those and appends)."""
        self.steps.read_back()  # never a checkpoint of a diverged run
        checkpoint["ablate"] = {
            "history": self.history,
            "steps_to_target": self.steps_to_target,
            "last_finite": self.steps.last_finite,
            "grad_stats": self.steps.grad_state(),
            "precision_ran": self.precision_ran,
            "rng": torch.get_rng_state(),
        }
        for logger in self.loggers:
            if isinstance(logger, L.loggers.CSVLogger):
                logger.save()
                checkpoint["ablate"]["csv_rows"] = _csv_rows(Path(logger.log_dir) / CSV_FILE)

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        state = checkpoint["ablate"]
        self.history, self.steps_to_target = list(state["history"]), state["steps_to_target"]
        self.precision_ran = state["precision_ran"]
        self.steps.restore(state["grad_stats"], state["last_finite"])
        torch.set_rng_state(state["rng"])

    def configure_optimizers(self) -> dict[str, Any]:
        t = self.cfg.train
        opt = torch.optim.AdamW(
            self.model.parameter_groups(t.weight_decay), lr=t.lr, betas=(0.9, 0.95), eps=prec.adam_eps(t.precision)
        )
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_factor(s, t.warmup_steps, t.steps, t.min_lr_ratio))
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


CSV_FILE = "metrics.csv"  # Lightning's CSVLogger file in run_dir/csv/


def _csv_rows(path: Path) -> int:
    """Data rows (header excluded) of a CSV file; 0 when there is none."""
    if not path.is_file():
        return 0
    with open(path, newline="") as fh:
        return sum(1 for _ in csv.DictReader(fh))


def lr_factor(step: int, warmup: int, total: int, min_ratio: float) -> float:
    """Linear warm-up over ``warmup`` steps, then cosine decay to ``min_ratio`` at ``total``."""
    if step < warmup:
        return (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    return min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * progress))
