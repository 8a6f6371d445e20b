"""One run, trained and evaluated.

:func:`train` runs Lightning's Trainer on the :class:`~harness.training.lit.LitLM` and
:class:`~harness.training.lit.TaskData`: ``train.steps`` AdamW steps, validation at length L every
``train.val_every`` steps (convergence curve, ``steps_to_target``), then a test at every evaluation
length. Loggers: CSV; W&B (offline unless a key is set; one W&B run per attempt). A resumed run ends
exactly as an uninterrupted one: Lightning restores weights, optimiser, schedule and loops;
``LitLM.on_save_checkpoint`` the rest; the data stream skips the batches already trained on; the
logs continue (:func:`_resume`).
"""

from __future__ import annotations

import csv
import itertools
import json
import logging
import signal
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import lightning.pytorch as L
import torch

from harness.config import RunConfig
from harness.errors import RunStatus, TimedOut, run_error, stall_reason
from harness.modules import TransformerLM
from harness.run_options import RunOptions
from harness.seeding import stream_seed
from harness.tasks import Task
from harness.threshold import Threshold
from harness.training import precision as prec
from harness.training import scoring
from harness.training.lit import CSV_FILE, LitLM, TaskData, salt_stream
from harness.training.model_and_devices import transformer_config
from harness.training.probes import measure
from harness.training.progress import EVERY_S, PROGRESS, RunProgress, write_progress
from harness.training.wandb_upload import REPLAYED

logging.getLogger("lightning.pytorch").setLevel(logging.ERROR)
logging.getLogger("lightning.fabric").setLevel(logging.ERROR)

CHECKPOINT = "last.ckpt"


class RunMonitor(L.Callback):
    """Step clock, time limit, checkpoints and progress of one run.

    Four concerns in one callback, because Lightning calls every hook of every callback at every step.

    - Step clock (``seconds``, ``tokens``: this attempt's): inside training steps only, CUDA
      synchronised at both ends, so ``train_tokens_per_s`` does not depend on how often the run
      validates (validation passes, checkpoints and logging fall outside the clock).
    - Time limit (``timeout_s``, from the callback's creation): checked after every batch; raises
      :class:`~harness.errors.TimedOut`.
    - Checkpoints: ``checkpoint_dir/last.ckpt`` at the end of a validation pass (so it holds the
      curve so far) once ``checkpoint_every_s`` passed since the previous one (0: every pass).
    - Progress: ``progress_dir/progress.json`` after the first step, then every
      :data:`~harness.training.progress.EVERY_S` seconds (its loss: the last read back from the
      device, no sync of its own).
    """

    def __init__(
        self,
        checkpoint_dir: Path | None = None,
        checkpoint_every_s: float = 0.0,
        timeout_s: float | None = None,
        progress_dir: Path | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.checkpoint_dir, self.checkpoint_every_s = checkpoint_dir, checkpoint_every_s
        self.limit, self.progress_dir = timeout_s, progress_dir
        self.seconds, self.tokens = 0.0, 0
        self.clock = clock
        self._created = self._started = self._last_checkpoint = clock()
        self._last_progress, self._start_step, self._t0, self._cuda = -float("inf"), 0, 0.0, False

    def on_train_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        """Start this attempt's clocks at the step it starts from."""
        # after a checkpoint is restored: global_step is the step this attempt starts at
        self._cuda = trainer.strategy.root_device.type == "cuda"
        self._started = self._last_checkpoint = self.clock()
        self._start_step = trainer.global_step

    def on_train_batch_start(self, trainer: L.Trainer, *args: Any) -> None:
        """Start the step clock (CUDA synchronised)."""
        if self._cuda:
            torch.cuda.synchronize(trainer.strategy.root_device)
        self._t0 = time.perf_counter()

    def on_train_batch_end(self, trainer: L.Trainer, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        """Stop the step clock, count the batch's tokens, check the time limit, write the progress when due."""
        if self._cuda:
            torch.cuda.synchronize(trainer.strategy.root_device)
        self.seconds += time.perf_counter() - self._t0
        self.tokens += int(batch[0].numel())
        now = self._check(trainer)
        if now - self._last_progress >= EVERY_S:
            self._last_progress = now
            self.write_progress(trainer, pl_module)

    def write_progress(self, trainer: L.Trainer, pl_module: LitLM) -> None:
        """Replace ``progress_dir/progress.json`` now (no ``progress_dir``: nothing)."""
        if self.progress_dir is not None:
            now, total = self.clock(), int(trainer.max_steps)
            step, loss = trainer.global_step, pl_module.steps.last_finite
            progress = RunProgress(step, total, loss, self._start_step, now - self._started, time.time())
            write_progress(self.progress_dir, progress)

    def _check(self, trainer: L.Trainer, *args: Any) -> float:
        now = self.clock()
        if self.limit is not None and now - self._created > self.limit:
            raise TimedOut(trainer.global_step, now - self._created, self.limit)
        return now

    on_validation_batch_end = on_test_batch_end = _check

    def on_validation_end(self, trainer: L.Trainer, pl_module: Any) -> None:
        """Write the checkpoint when one is due (never during the sanity check)."""
        if not trainer.sanity_checking and self.clock() - self._last_checkpoint >= self.checkpoint_every_s:
            self.save(trainer)
            self._last_checkpoint = self.clock()

    def save(self, trainer: L.Trainer) -> None:
        """Write ``checkpoint_dir/last.ckpt`` now, replacing the previous one."""
        if self.checkpoint_dir is not None:
            trainer.save_checkpoint(Path(self.checkpoint_dir) / CHECKPOINT)


def _resume(checkpoint_dir: Path | None, loggers: list[Any]) -> tuple[int, str | None]:
    """``(global step, path)`` of the last checkpoint in ``checkpoint_dir`` (``(0, None)``: none).

    The logs are continued to it. One that cannot be loaded with ``weights_only=True`` (truncated,
    foreign, another version) is removed: the run starts afresh.

    The CSV log keeps the rows the checkpoint saw (``csv_rows``; Lightning's CSV writer deletes
    ``metrics.csv`` when it is created: they are put back with their header; later rows of the
    interrupted attempt are logged again). A W&B run that does not hold them (offline, or never
    uploaded: W&B keeps an offline run's records in memory until a block is full) gets them at
    their steps, as Lightning logged them live, and :data:`REPLAYED` beside its files (``ablate
    sync`` then uploads this folder alone).
    """
    path = Path(checkpoint_dir) / CHECKPOINT if checkpoint_dir is not None else None
    state: dict[str, Any] = {}
    try:
        if path is not None and path.is_file():
            state = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
            step = int(state["global_step"])
    except Exception as exc:  # noqa: BLE001  any unreadable checkpoint means: start afresh
        logging.getLogger("ablate").warning("ignoring unloadable checkpoint %s (%s: %s)", path, type(exc).__name__, exc)
        path.unlink(missing_ok=True)  # type: ignore[union-attr]
        state = {}
    rows, csv_path = state.get("ablate", {}).get("csv_rows"), Path(loggers[0].log_dir) / CSV_FILE
    header, kept = [], []
    if rows and csv_path.is_file():
        with open(csv_path, newline="", encoding="utf-8") as fh:
            reader = csv.DictReader(fh)
            header, kept = list(reader.fieldnames or []), list(itertools.islice(reader, rows))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Experiment logs directory ... exists and is not empty"
        writer = loggers[0].experiment  # removes metrics.csv
    if kept:  # written back under their header; later rows are appended under it (or it is widened)
        writer.metrics_keys, writer.metrics = header, kept
        writer.save()
    if kept and len(loggers) > 1 and not loggers[1].experiment.resumed:  # a W&B run resumed online has them
        for row in kept:  # a cell as logged: an integer as written (epoch), else Python's float text
            metrics = {k: int(v) if v.lstrip("-").isdigit() else float(v) for k, v in row.items() if k != "step" and v}
            loggers[1].log_metrics(metrics, step=int(row["step"]))
        to_step = json.dumps({"to_step": int(kept[-1]["step"])})
        (Path(loggers[1].experiment.dir).parent / REPLAYED).write_text(to_step)
    return (step, str(path)) if state else (0, None)


@dataclass(frozen=True)
class TrainOptions:
    """How one run trains beyond what determines its numbers.

    ``run``: the execution options of ``ablate run`` (:class:`~harness.run_options.RunOptions`:
    resume, checkpoint cadence, time limit, devices), held as given; ``target``: the convergence
    target of ``steps_to_target``; ``wandb``: ``wandb.init`` keyword arguments (None: no W&B);
    ``callbacks``: extra Lightning callbacks (Optuna's pruning; one that raises ends the run as a
    ``RunFailed``); ``eval_split``: ``"test"`` (comparisons) or ``"val"`` (tuning), the split of the
    per-length evaluation; ``checkpoint_dir``: None, no checkpoints. Every run writes
    ``run_dir/progress.json`` while training (removed when the run ends).
    """

    run: RunOptions = RunOptions()
    target: Threshold | None = None
    wandb: dict[str, Any] | None = None
    callbacks: tuple[L.Callback, ...] = ()
    eval_split: str = "test"
    checkpoint_dir: Path | None = None


@dataclass(frozen=True)
class RunResult:
    """A run that trained to its end: its numbers, validation curve, timings and what ran.

    Timings in seconds, this attempt's: ``train_step_s`` inside training steps, ``fit_s`` of
    ``trainer.fit``, ``test_s`` of the test at every length. ``flags``
    (:func:`~harness.training.scoring.train_gap_flag`) and ``undefined_metrics``
    (:func:`~harness.training.scoring.undefined_reason`) when raised; ``status`` ``ok``, or
    ``stalled`` with its ``reason`` (:func:`~harness.errors.stall_reason`).
    """

    metrics: dict[str, float]
    history: list[dict[str, float]]
    train_step_s: float
    fit_s: float
    test_s: float
    n_params: int
    device: str
    precision: str
    precision_requested: str
    adam_eps: float
    kernel_backend: str
    wandb_id: str | None
    resumed_from_step: int | None
    devices: int | str
    strategy: str
    undefined_metrics: dict[str, str] = field(default_factory=dict)
    flags: dict[str, str] = field(default_factory=dict)
    status: RunStatus = RunStatus.OK
    reason: str | None = None

    def record_fields(self) -> dict[str, Any]:
        """The fields of the run's record (its ``status`` and ``reason`` among them).

        All but ``history`` (a file of its own) and an empty ``undefined_metrics`` or ``flags``.
        """
        optional = ("undefined_metrics", "flags")
        return {k: v for k, v in vars(self).items() if k != "history" and (v or k not in optional)}


def train(cfg: RunConfig, task: Task, seed: int, run_dir: Path, options: TrainOptions = TrainOptions()) -> RunResult:
    """Train the run of ``cfg`` on a built ``task`` with ``seed`` in ``run_dir``, and evaluate it at every length.

    ``seed`` is split into streams by :mod:`harness.seeding`; the logs go in ``csv/`` and ``wandb/``
    of ``run_dir``.

    Raises:
        RunError: the run stopped in training or evaluation (``Diverged``, ``TimedOut``, or
            ``RunFailed`` of any other exception; the init probes as its metrics when it stopped in
            ``trainer.fit``; the status also the W&B run's summary). Building the model, its
            loggers or its trainer raises what they raise.
    """
    o, r, t = options, options.run, cfg.train
    torch.manual_seed(stream_seed(seed, "init", *salt_stream(t.seed_salt)))
    model = TransformerLM(transformer_config(cfg, task.vocab_size))
    torch.manual_seed(stream_seed(seed, "dropout", *salt_stream(t.seed_salt)))
    lit = LitLM(model, cfg, task, o.target)
    loggers: list[Any] = [L.loggers.CSVLogger(run_dir, name="csv", version="")]
    wandb = None
    if o.wandb is not None:
        import wandb as wandb_lib

        # init the run ourselves: WandbLogger's own init passes the deprecated `anonymous` setting
        wandb = wandb_lib.init(dir=str(run_dir), **o.wandb)
        loggers.append(L.loggers.WandbLogger(experiment=wandb))
    start, ckpt = _resume(o.checkpoint_dir if r.resume else None, loggers)
    monitor = RunMonitor(o.checkpoint_dir, r.checkpoint_every, r.run_timeout, run_dir)
    trainer = L.Trainer(
        max_steps=t.steps,
        accelerator="auto",
        devices=r.devices,
        strategy=r.strategy,
        **prec.trainer_kwargs(t.precision),
        logger=loggers,
        enable_checkpointing=False,  # RunMonitor writes the checkpoints, at its own cadence
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[monitor, *o.callbacks],
        val_check_interval=min(t.val_every, t.steps),
        check_val_every_n_epoch=None,
        num_sanity_val_steps=0,  # no gradient_clip_val: LitLM clips with the norm it logs
        log_every_n_steps=lit.log_every,
    )
    data = TaskData(task, cfg, seed, o.eval_split, start_step=start)
    plugin, device = trainer.precision_plugin, trainer.strategy.root_device
    probes, fitting = {}, False
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=UserWarning)
            warnings.filterwarnings("ignore", category=FutureWarning)
            # probes at init run on a copy of the freshly initialised model (also when resuming)
            probes = measure(model, cfg, task, seed, plugin, device, "init")
            if device.type == "cuda":
                torch.cuda.reset_peak_memory_stats(device)
            t0, fitting = time.perf_counter(), True
            try:
                trainer.fit(lit, datamodule=data, ckpt_path=ckpt, weights_only=True if ckpt else None)
            except SystemExit:  # Lightning turns Ctrl-C into exit 1 and ignores the next ones
                if not trainer.interrupted:
                    raise
                signal.signal(signal.SIGINT, signal.default_int_handler)
                raise KeyboardInterrupt from None  # the caller's: the interrupted line, exit 130
            fit_s, fitting = time.perf_counter() - t0, False
            lit.steps.read_back()
            monitor.write_progress(trainer, lit)
            if r.keep_checkpoints:
                monitor.save(trainer)
            trainer.test(lit, datamodule=data, verbose=False)
            test_s = time.perf_counter() - t0 - fit_s
            probes |= measure(lit.model, cfg, task, seed, plugin, device, "final")
        metrics = lit.test_metrics | probes | lit.run_metrics()
        if device.type == "cuda":
            metrics["peak_mem_mb"] = torch.cuda.max_memory_allocated(device) / 2**20
        metrics["train_tokens_per_s"] = monitor.tokens / monitor.seconds if monitor.seconds > 0 else float("nan")
        fresh = scoring.fresh_draws(task.kind, t.steps * t.batch_size * t.seq_len, task.max_seq_len("train"))
        held_out = metrics.get("loss@x1", lit.history[-1]["loss"] if lit.history else float("nan"))
        gap = scoring.train_gap_flag(metrics["train_loss_final"], held_out, fresh)
        if chance := task.chance:
            metrics["chance_loss"] = chance.loss
        best, best_step = lit.best_validation()
        stalled = stall_reason(best, best_step, chance.loss if chance else None, chance.basis if chance else "")
        status = RunStatus.STALLED if stalled else RunStatus.OK
        if wandb is not None:  # under the store's names (record.json "metrics" and "status")
            wandb.summary.update({**metrics, "status": status.value})
        return RunResult(
            metrics=metrics,
            history=lit.history,
            train_step_s=monitor.seconds,
            fit_s=fit_s,
            test_s=test_s,
            n_params=model.num_parameters(),
            device=str(device),
            precision=lit.precision_ran or str(trainer.precision),
            precision_requested=t.precision,
            adam_eps=prec.adam_eps(t.precision),
            kernel_backend=",".join(model.kernel_backends()),
            wandb_id=wandb.id if wandb is not None else None,
            resumed_from_step=start or None,
            devices=r.devices,
            strategy=r.strategy,
            undefined_metrics=lit.undefined,
            flags={"train_below_held_out": gap} if gap else {},
            status=status,
            reason=stalled,
        )
    except Exception as exc:  # noqa: BLE001  how the run ended, as its record and its W&B summary hold it
        err = run_error(exc)
        if fitting:  # the init probes are outcomes too (e.g. of a run that diverges)
            err.metrics = probes
        if wandb is not None:
            wandb.summary.update({**err.fields().get("metrics", {}), "status": err.status.value})
        raise err from err.__cause__
    finally:
        (run_dir / PROGRESS).unlink(missing_ok=True)
        if wandb is not None:
            wandb.finish()
