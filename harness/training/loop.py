"""The training layer: with :mod:`harness.training.callbacks`, the only modules that import Lightning.

A :class:`LitLM` LightningModule wraps the pure-torch :class:`~harness.modules.TransformerLM`;
a :class:`TaskData` LightningDataModule serves one task's batches from the seeded streams of
:mod:`harness.seeding`. :func:`train_and_evaluate` runs one (config, task, seed): it trains for
``train.steps`` AdamW steps with a linear warm-up and cosine decay, validates at length L every
``train.val_every`` steps on the validation split (convergence curve, ``steps_to_target``), then
tests at every evaluation length on the test split. Loggers: CSV always; W&B (offline unless a
key is set, one W&B run per training run, finished afterwards).
"""

from __future__ import annotations

import csv
import itertools
import logging
import math
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import lightning.pytorch as L
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, IterableDataset, TensorDataset

from harness.modules import TransformerLM
from harness.seeding import numpy_rng, stream_seed
from harness.training import precision as prec
from harness.training.callbacks import StepTimer, TimedOut, resume_point, run_callbacks
from harness.training.probes import measure
from tasks import IGNORE_INDEX

logging.getLogger("lightning.pytorch").setLevel(logging.ERROR)
logging.getLogger("lightning.fabric").setLevel(logging.ERROR)


class Diverged(RuntimeError):
    """The training loss became NaN or inf; carries the step and the last finite loss."""

    def __init__(self, step: int, last_finite: float | None) -> None:
        super().__init__(f"non-finite training loss at step {step} (last finite loss: {last_finite})")
        self.step, self.last_finite = step, last_finite


def _salt(salt: int) -> tuple[int, ...]:
    """The sub-stream of ``train.seed_salt``: none at 0, so unsalted runs keep their streams."""
    return (salt,) if salt else ()


class _TrainStream(IterableDataset):
    """``steps`` training batches drawn from the run's data stream (same for every variant).

    A resumed run passes ``start``: the first ``start`` batches are drawn and dropped, so the
    stream continues exactly where the interrupted attempt stopped.
    """

    def __init__(
        self, task: Any, batch_size: int, seq_len: int, steps: int, seed: int, start: int = 0, salt: int = 0
    ) -> None:
        self.task, self.batch_size, self.seq_len, self.steps, self.seed = task, batch_size, seq_len, steps, seed
        self.start, self.salt = start, salt

    def __iter__(self) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        rng = numpy_rng(self.seed, "data", *_salt(self.salt))
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

    def __init__(self, task: Any, cfg: Any, seed: int, eval_split: str = "test", start_step: int = 0) -> None:
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


def score(logits: torch.Tensor, targets: torch.Tensor, token_bytes: torch.Tensor | None = None) -> dict[str, float]:
    """Sums for loss and accuracy over scored positions (targets != IGNORE_INDEX).

    Args:
        logits: (B, T, V) float.
        targets: (B, T) long, IGNORE_INDEX where no loss is taken.
        token_bytes: (V,) long, UTF-8 bytes per token id (``Task.token_bytes``), or None.

    Returns:
        ``loss_sum`` (nats), ``tokens``, ``correct``, ``seqs`` (rows with a scored position) and
        ``exact`` (rows whose every scored position is right); with ``token_bytes``, ``bytes``:
        the bytes the scored targets stand for.
    """
    mask = targets != IGNORE_INDEX  # (B, T)
    loss = F.cross_entropy(logits.float().flatten(0, 1), targets.flatten(), ignore_index=IGNORE_INDEX, reduction="sum")
    hit = (logits.argmax(-1) == targets) & mask  # (B, T)
    has = mask.any(-1)  # (B,)
    exact = (hit | ~mask).all(-1) & has
    out = {
        "loss_sum": loss.item(),
        "tokens": mask.sum().item(),
        "correct": hit.sum().item(),
        "seqs": has.sum().item(),
        "exact": exact.sum().item(),
    }
    if token_bytes is not None:  # bits per byte (issue 13's text task)
        out["bytes"] = token_bytes.to(targets.device)[targets[mask]].sum().item()
    return out


def summarise(sums: dict[str, float], kind: str, suffix: str) -> dict[str, float]:
    """Metrics from summed counts: ``loss`` (nats/token) always; ``acc``/``exact`` for synthetic
    tasks (answer positions only); ``ppl`` = exp(loss) for language modelling, and ``bpb`` (bits
    per byte: ``loss_sum / (bytes x ln 2)``, i.e. ``loss x tokens / (bytes x ln 2)``) when the
    sums hold the scored bytes."""
    loss = sums["loss_sum"] / max(sums["tokens"], 1)
    out = {f"loss{suffix}": loss}
    if kind == "lm":
        out[f"ppl{suffix}"] = math.exp(min(loss, 50.0))
    else:
        out[f"acc{suffix}"] = sums["correct"] / max(sums["tokens"], 1)
        out[f"exact{suffix}"] = sums["exact"] / max(sums["seqs"], 1)
    if sums.get("bytes"):  # bits per byte (issue 13's text task)
        out[f"bpb{suffix}"] = sums["loss_sum"] / (sums["bytes"] * math.log(2))
    return out


def _add(acc: dict[str, float], new: dict[str, float]) -> None:
    for k, v in new.items():
        acc[k] = acc.get(k, 0.0) + v


class LitLM(L.LightningModule):
    """Causal LM training around a pure :class:`TransformerLM`.

    Loss: token-level cross-entropy (nats) over scored positions. Optimiser: AdamW with
    ``model.parameter_groups`` (weight decay on Linear weights only: embeddings, including the
    learned position table, are not decayed, so rows never trained keep their initial values).
    """

    def __init__(
        self,
        model: TransformerLM,
        cfg: Any,
        task_kind: str,
        target: Any = None,
        pad_id: int | None = None,
        token_bytes: torch.Tensor | None = None,
    ) -> None:
        super().__init__()
        self.model, self.cfg, self.kind, self.target = model, cfg, task_kind, target
        self.pad_id = pad_id  # the task's padding token: hidden from attention (key padding mask)
        self.token_bytes = token_bytes  # (V,) bytes per token id, for bpb; not a buffer: no state_dict key
        self.precision_ran: str | None = None
        self.multipliers = list(cfg.eval.length_multipliers)
        self.history: list[dict[str, float]] = []
        self.test_metrics: dict[str, float] = {}
        self.steps_to_target: int | None = None
        self._last_finite: float | None = None
        self._sums: dict[int, dict[str, float]] = {}
        self._grad_stats = torch.zeros(4)  # sum, sum of squares, steps of finite norms; non-finite steps

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
        if not torch.isfinite(loss):
            raise Diverged(self.global_step, self._last_finite)
        self._last_finite = loss.item()
        self.log("train/loss", loss, on_step=True, on_epoch=False)
        self.log("train/lr", self.lr_schedulers().get_last_lr()[0], on_step=True, on_epoch=False)
        return loss

    def on_validation_epoch_start(self) -> None:
        self._sums = {0: {}}

    def validation_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> None:
        _add(self._sums[0], score(self(batch[0]), batch[1], self.token_bytes))

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
        _add(self._sums[dataloader_idx], score(self(batch[0]), batch[1], self.token_bytes))

    def on_test_epoch_end(self) -> None:
        for i, mult in enumerate(self.multipliers):
            self.test_metrics.update(summarise(self._sums[i], self.kind, f"@x{mult}"))

    def on_before_optimizer_step(self, optimizer: Any) -> None:
        """Accumulate the gradient norm of every step (before clipping; unscaled under fp16, where
        the scaler then skips a non-finite step), on the device, without a sync per step."""
        grads = [p.grad for p in self.model.parameters() if p.grad is not None]
        if not grads:
            return
        norm = torch.nn.utils.get_total_norm(grads).float()
        finite = torch.isfinite(norm)
        n = torch.where(finite, norm, torch.zeros_like(norm))
        step = torch.stack([n, n * n, finite.float(), (~finite).float()])
        self._grad_stats = self._grad_stats.to(step.device) + step

    def grad_metrics(self) -> dict[str, float]:
        """``grad_norm_mean``, ``grad_norm_cv`` (std / mean over steps: the "swings" of claim
        layernorm-needed) and ``nonfinite_grad_steps`` (steps with a NaN/inf gradient), over the whole
        run (a resumed run restores the sums from its checkpoint)."""
        total, sq, n, bad = self._grad_stats.tolist()
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
        checkpoint["ablate"] = {
            "history": self.history,
            "steps_to_target": self.steps_to_target,
            "last_finite": self._last_finite,
            "grad_stats": self._grad_stats.cpu(),
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
        self._last_finite, self.precision_ran = state["last_finite"], state["precision_ran"]
        self._grad_stats = state["grad_stats"].clone()
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


def _continue_csv(logger: Any, ckpt: str | None) -> None:
    """Make ``logger`` (a CSVLogger) append to the curve the checkpoint ``ckpt`` saw.

    Lightning's CSV writer deletes ``metrics.csv`` when it is created; this creates it, then puts
    back the rows logged up to the checkpoint (``csv_rows``; rows an interrupted attempt logged
    after it are dropped: the resumed attempt logs them again) with their header. Without a
    checkpoint, or one that does not know its rows, the log starts afresh.
    """
    path = Path(logger.log_dir) / CSV_FILE
    state = torch.load(ckpt, map_location="cpu", weights_only=True, mmap=True) if ckpt else {}
    rows = state.get("ablate", {}).get("csv_rows")
    header, kept = [], []
    if rows and path.is_file():
        with open(path, newline="") as fh:
            reader = csv.DictReader(fh)
            header, kept = list(reader.fieldnames or []), list(itertools.islice(reader, rows))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Experiment logs directory ... exists and is not empty"
        writer = logger.experiment  # removes metrics.csv
    if kept:
        with open(path, "w", newline="") as fh:
            out = csv.DictWriter(fh, fieldnames=header)
            out.writeheader()
            out.writerows(kept)
        writer.metrics_keys = header  # later rows are appended under this header (or it is widened)


def lr_factor(step: int, warmup: int, total: int, min_ratio: float) -> float:
    """Linear warm-up over ``warmup`` steps, then cosine decay to ``min_ratio`` at ``total``."""
    if step < warmup:
        return (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    return min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * progress))


def train_and_evaluate(
    model_cfg: Any,
    cfg: Any,
    task: Any,
    seed: int,
    run_dir: Path,
    target: Any = None,
    wandb: dict[str, Any] | None = None,
    callbacks: list[Any] | None = None,
    eval_split: str = "test",
    *,
    checkpoint_dir: Path | None = None,
    resume: bool = True,
    timeout_s: float | None = None,
    devices: int | str = 1,
    strategy: str = "auto",
) -> dict[str, Any]:
    """Train one run and evaluate it at every length; returns metrics, history and timings.

    Timings (seconds, this attempt only for a resumed run): ``train_step_s`` inside training
    steps (:class:`~harness.training.callbacks.StepTimer`; the metric ``train_tokens_per_s`` is tokens
    over it), ``fit_s`` the wall time of ``trainer.fit`` (steps, validation passes, checkpoint
    writes, data), ``test_s`` the evaluation at every length. The runner adds ``wall_time_s``,
    the whole attempt (task build, init probes, loggers, fit, test, final probes).

    Args:
        model_cfg: the :class:`~harness.modules.TransformerConfig` of the run.
        cfg: the validated :class:`~harness.experiment.config.RunConfig`.
        task: a built task (``tasks.build_task``).
        seed: the run seed, split into streams by :mod:`harness.seeding`.
        run_dir: the run's folder; the CSV log goes to ``run_dir/csv``, W&B to ``run_dir/wandb``.
        target: a :class:`~harness.experiment.ablation.Threshold` on a validation metric, or None.
        wandb: keyword arguments for ``WandbLogger`` (mode, project, group, name, ...), or None.
        callbacks: extra Lightning callbacks (e.g. Optuna's pruning callback); an exception one
            raises (``optuna.TrialPruned``) propagates out of this function.
        eval_split: ``"test"`` (comparisons) or ``"val"`` (tuning): the split the per-length
            evaluation after training draws from.
        checkpoint_dir: where to checkpoint after every validation pass (None: no checkpoints).
        resume: continue from ``checkpoint_dir/last.ckpt`` when there is one; the result is the
            same as an uninterrupted run's (weights, optimiser, schedule, loops, validation
            curve, RNG and the position in the data stream are all restored); the CSV log keeps
            its rows up to the checkpoint and appends, so it holds the curve from step 0.
        timeout_s: stop the run (raise :class:`TimedOut`) once it has run this long.
        devices, strategy: Lightning's, for one run over several devices (e.g. 2 and ``"ddp"``).

    Raises:
        Diverged: the training loss became non-finite.
        TimedOut: the run went over ``timeout_s``.
    """
    torch.manual_seed(stream_seed(seed, "init", *_salt(cfg.train.seed_salt)))
    model = TransformerLM(model_cfg)
    torch.manual_seed(stream_seed(seed, "dropout", *_salt(cfg.train.seed_salt)))
    lit = LitLM(
        model,
        cfg,
        task.kind,
        target,
        pad_id=getattr(task, "pad_id", None),
        token_bytes=getattr(task, "token_bytes", None),
    )
    loggers: list[Any] = [L.loggers.CSVLogger(run_dir, name="csv", version="")]
    if wandb is not None:
        import wandb as wandb_lib

        # init the run ourselves and hand it to Lightning: WandbLogger's own init passes the
        # deprecated `anonymous` setting, which W&B 0.31 warns about on every run
        loggers.append(L.loggers.WandbLogger(experiment=wandb_lib.init(dir=str(run_dir), **wandb)))
    start, ckpt = resume_point(checkpoint_dir, resume)
    _continue_csv(loggers[0], ckpt)
    step_timer = StepTimer()
    trainer = L.Trainer(
        max_steps=cfg.train.steps,
        accelerator="auto",
        devices=devices,
        strategy=strategy,
        **prec.trainer_kwargs(cfg.train.precision),
        logger=loggers,
        enable_checkpointing=checkpoint_dir is not None,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[step_timer, *(callbacks or []), *run_callbacks(checkpoint_dir, timeout_s)],
        val_check_interval=min(cfg.train.val_every, cfg.train.steps),
        check_val_every_n_epoch=None,
        num_sanity_val_steps=0,
        gradient_clip_val=cfg.train.grad_clip or None,
        log_every_n_steps=min(25, cfg.train.steps),
    )
    data = TaskData(task, cfg, seed, eval_split, start_step=start)
    plugin, device = trainer.precision_plugin, trainer.strategy.root_device
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=UserWarning)
            warnings.filterwarnings("ignore", category=FutureWarning)
            # probes at init run on a copy of the freshly initialised model (also when resuming)
            probes = measure(model, cfg, task, seed, plugin.forward_context, device, "init", plugin.convert_module)
            if device.type == "cuda":
                torch.cuda.reset_peak_memory_stats(device)
            t0 = time.perf_counter()
            try:
                trainer.fit(lit, datamodule=data, ckpt_path=ckpt, weights_only=True if ckpt else None)
            except Exception as exc:  # the init probes are outcomes too (e.g. of a run that diverges)
                exc.partial_metrics = probes  # type: ignore[attr-defined]
                raise
            fit_s = time.perf_counter() - t0
            trainer.test(lit, datamodule=data, verbose=False)
            test_s = time.perf_counter() - t0 - fit_s
            probes |= measure(lit.model, cfg, task, seed, plugin.forward_context, device, "final")
        metrics = dict(lit.test_metrics) | probes | lit.grad_metrics()
        if device.type == "cuda":
            metrics["peak_mem_mb"] = torch.cuda.max_memory_allocated(device) / 2**20
        metrics["steps_to_target"] = float(lit.steps_to_target if lit.steps_to_target is not None else cfg.train.steps)
        metrics["target_reached"] = float(lit.steps_to_target is not None)
        metrics["train_loss_final"] = float(lit._last_finite) if lit._last_finite is not None else float("nan")
        metrics["train_tokens_per_s"] = step_timer.tokens_per_s()  # training steps only, this attempt's
        if wandb is not None:  # under the store's names (record.json "metrics" and "status")
            loggers[1].experiment.summary.update({**metrics, "status": "ok"})
        return {
            "metrics": metrics,
            "history": lit.history,
            "train_step_s": step_timer.seconds,
            "fit_s": fit_s,
            "test_s": test_s,
            "n_params": model.num_parameters(),
            "device": str(trainer.strategy.root_device),
            "precision": lit.precision_ran or str(trainer.precision),
            "precision_requested": cfg.train.precision,
            "adam_eps": prec.adam_eps(cfg.train.precision),
            "kernel_backend": ",".join(model.kernel_backends()),
            "wandb_id": loggers[1].experiment.id if wandb else None,
            "resumed_from_step": start or None,
            "devices": devices,
            "strategy": strategy,
        }
    except Exception as exc:  # the status and partial metrics the runner stores for this run
        if wandb is not None:
            status = "diverged" if isinstance(exc, Diverged) else "timeout" if isinstance(exc, TimedOut) else "failed"
            partial = {} if status == "timeout" else getattr(exc, "partial_metrics", {})  # as harness.execution.attempt
            loggers[1].experiment.summary.update({**partial, "status": status})
        raise
    finally:
        if wandb is not None:
            import wandb as wandb_lib

            wandb_lib.finish()
