"""One run, trained and evaluated: :func:`train` builds the model, the
:class:`~harness.training.lit.LitLM` and :class:`~harness.training.lit.TaskData` of
:mod:`harness.training.lit`, and runs Lightning's Trainer: ``train.steps`` AdamW steps with a
linear warm-up and cosine decay, validation at length L every ``train.val_every`` steps on the
validation split (convergence curve, ``steps_to_target``), then a test at every evaluation length
on the test split. Loggers: CSV always; W&B (offline unless a key is set, one W&B run per
training run, finished afterwards).
"""

from __future__ import annotations

import csv
import itertools
import json
import logging
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import lightning.pytorch as L
import torch

from harness.config import RunConfig
from harness.errors import run_error
from harness.modules import TransformerLM
from harness.seeding import stream_seed
from harness.tasks import Task
from harness.training import precision as prec
from harness.training import scoring
from harness.training.callbacks import RunMonitor, resume_point
from harness.training.fit import transformer_config
from harness.training.lit import CSV_FILE, LitLM, Target, TaskData, lr_factor, salt_stream
from harness.training.probes import measure
from harness.training.progress import remove_progress
from harness.training.wandb_upload import REPLAYED

__all__ = ["LitLM", "RunResult", "TaskData", "TrainOptions", "lr_factor", "train"]

logging.getLogger("lightning.pytorch").setLevel(logging.ERROR)
logging.getLogger("lightning.fabric").setLevel(logging.ERROR)

LOG_EVERY = 25
"""Steps between two rows of training loss and learning rate in the logs (Lightning's
``log_every_n_steps``; the last step is logged too). The losses are read back from the device
this often, never at every step."""


def _continue_csv(logger: Any, ckpt: str | None) -> list[dict[str, str]]:
    """Make ``logger`` (a CSVLogger) append to the curve the checkpoint ``ckpt`` saw; returns the
    rows kept.

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
    return kept


def _replay(logger: Any, rows: list[dict[str, str]]) -> None:
    """Log ``rows`` of the CSV log (what was logged up to the checkpoint) into the W&B run of
    ``logger`` (a WandbLogger), each at its step under its name, as Lightning logged them live
    (both loggers receive the same ``log_metrics`` calls), so that a resumed run's W&B curve
    starts at step 0 too: W&B keeps an offline run's records in memory until a block of its log
    is full or the run finishes, so a killed attempt's log holds few of them or none.

    Writes ``REPLAYED`` beside the W&B run's files (in its ``offline-run-*`` folder): ``ablate
    sync`` then knows that this folder holds the earlier attempts' curve (an attempt resumed by
    code that did not replay does not hold it, and its earlier folders are uploaded too)."""
    for row in rows:
        metrics = {k: _number(v) for k, v in row.items() if k != "step" and v not in ("", None)}
        logger.log_metrics(metrics, step=int(row["step"]))
    if rows:
        (Path(logger.experiment.dir).parent / REPLAYED).write_text(json.dumps({"to_step": int(rows[-1]["step"])}))


def _number(cell: str) -> int | float:
    """A CSV cell as the value Lightning logged: an integer as written (``epoch``), else a float
    (Python's own text of it, so the float is the same to the last bit; ``nan``, ``inf``)."""
    try:
        return int(cell)
    except ValueError:
        return float(cell)


def _flags(metrics: dict[str, float], history: list[dict[str, float]], cfg: RunConfig, task: Task) -> dict[str, str]:
    """The flags of a finished run: ``train_below_held_out`` (:func:`scoring.train_gap_flag`), against
    the test loss at L (``loss@x1``; the last validation loss when L is not among the test lengths)."""
    t = cfg.train
    fresh = scoring.fresh_draws(task.kind, t.steps * t.batch_size * t.seq_len, task.max_seq_len("train"))
    held_out = metrics.get("loss@x1", history[-1]["loss"] if history else float("nan"))
    gap = scoring.train_gap_flag(metrics["train_loss_final"], held_out, fresh)
    return {"train_below_held_out": gap} if gap else {}


@dataclass(frozen=True)
class TrainOptions:
    """How one run trains, beyond what determines its numbers (its config, task and seed).

    Attributes:
        target: the convergence target of ``steps_to_target`` (an ablation's ``target``), or None.
        wandb: keyword arguments for ``wandb.init`` (mode, project, group, name, ...), or None.
        callbacks: extra Lightning callbacks (e.g. Optuna's pruning callback); an exception one
            raises ends the run as a :class:`~harness.errors.RunFailed` whose cause it is.
        eval_split: ``"test"`` (comparisons) or ``"val"`` (tuning): the split the per-length
            evaluation after training draws from.
        checkpoint_dir: where to checkpoint, at the end of a validation pass (None: no checkpoints).
        checkpoint_every_s: seconds between two checkpoints (0: at every validation pass); a
            checkpoint is written at the first validation pass this long after the previous one.
        keep_checkpoint: also checkpoint the trained model after the last step (a run's
            ``--keep-checkpoints``), whatever the cadence.
        resume: continue from ``checkpoint_dir/last.ckpt`` when there is one; the result is the
            same as an uninterrupted run's (weights, optimiser, schedule, loops, validation
            curve, RNG and the position in the data stream are all restored); the CSV log keeps
            its rows up to the checkpoint and appends, and a W&B run that does not hold the curve
            so far (offline, or never uploaded) gets those rows first, so both hold it from step 0.
        timeout_s: stop the run (:class:`~harness.errors.TimedOut`) once it has run this long.
        devices, strategy: Lightning's, for one run over several devices (e.g. 2 and ``"ddp"``).
        progress: write ``run_dir/progress.json`` every few seconds while training
            (:mod:`harness.training.progress`); it is removed when the run ends.
    """

    target: Target | None = None
    wandb: dict[str, Any] | None = None
    callbacks: tuple[L.Callback, ...] = ()
    eval_split: str = "test"
    checkpoint_dir: Path | None = None
    checkpoint_every_s: float = 0.0
    keep_checkpoint: bool = False
    resume: bool = True
    timeout_s: float | None = None
    devices: int | str = 1
    strategy: str = "auto"
    progress: bool = True


@dataclass(frozen=True)
class RunResult:
    """A run that trained to its end: its numbers, validation curve, timings and what ran.

    ``flags`` (when raised): what makes the run's numbers suspect, by name
    (``train_below_held_out``: :func:`harness.training.scoring.train_gap_flag`).
    ``undefined_metrics`` (when some are): test metrics that are NaN because the logits at their
    length were not finite, each with why (:func:`harness.training.scoring.undefined_reason`).

    Timings (seconds, this attempt only for a resumed run): ``train_step_s`` inside training
    steps (:class:`~harness.training.callbacks.RunMonitor`; the metric ``train_tokens_per_s`` is
    tokens over it), ``fit_s`` the wall time of ``trainer.fit`` (steps, validation passes,
    checkpoint writes, data), ``test_s`` the evaluation at every length. The runner adds
    ``wall_time_s``, the whole attempt (task build, init probes, loggers, fit, test, final probes).
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

    def record_fields(self) -> dict[str, Any]:
        """The fields of the run's record (:class:`harness.store.record.Record`): every one but
        ``history`` (a file of its own), ``undefined_metrics`` and ``flags`` only when not empty."""
        out = {k: v for k, v in vars(self).items() if k not in ("history", "undefined_metrics", "flags")}
        return out | {k: v for k in ("undefined_metrics", "flags") if (v := getattr(self, k))}


def train(cfg: RunConfig, task: Task, seed: int, run_dir: Path, options: TrainOptions = TrainOptions()) -> RunResult:
    """Train one run and evaluate it at every length.

    Args:
        cfg: the validated run config (model, schedule, evaluation lengths, probes).
        task: a built task (``harness.tasks.build_task``).
        seed: the run seed, split into streams by :mod:`harness.seeding`.
        run_dir: the run's folder; the CSV log goes to ``run_dir/csv``, W&B to ``run_dir/wandb``.
        options: how it trains (:class:`TrainOptions`).

    Raises:
        RunError: the run stopped during training or evaluation (:class:`~harness.errors.Diverged`,
            :class:`~harness.errors.TimedOut`, or :class:`~harness.errors.RunFailed` of any other
            exception), with the metrics measured before (the probes at initialisation, when it
            stopped in ``trainer.fit``); the status is also the W&B run's summary. Building the
            model, its loggers or its trainer raises what they raise.
    """
    o = options
    torch.manual_seed(stream_seed(seed, "init", *salt_stream(cfg.train.seed_salt)))
    model = TransformerLM(transformer_config(cfg, task.vocab_size))
    torch.manual_seed(stream_seed(seed, "dropout", *salt_stream(cfg.train.seed_salt)))
    lit = LitLM(model, cfg, task.kind, o.target, pad_id=task.pad_id, token_bytes=task.token_bytes, log_every=LOG_EVERY)
    loggers: list[Any] = [L.loggers.CSVLogger(run_dir, name="csv", version="")]
    if o.wandb is not None:
        import wandb as wandb_lib

        # init the run ourselves and hand it to Lightning: WandbLogger's own init passes the
        # deprecated `anonymous` setting, which W&B 0.31 warns about on every run
        loggers.append(L.loggers.WandbLogger(experiment=wandb_lib.init(dir=str(run_dir), **o.wandb)))
    start, ckpt = resume_point(o.checkpoint_dir, o.resume)
    kept = _continue_csv(loggers[0], ckpt)
    if o.wandb is not None and not loggers[1].experiment.resumed:  # a W&B run resumed online has its curve
        _replay(loggers[1], kept)
    monitor = RunMonitor(o.checkpoint_dir, o.checkpoint_every_s, o.timeout_s, run_dir if o.progress else None)
    trainer = L.Trainer(
        max_steps=cfg.train.steps,
        accelerator="auto",
        devices=o.devices,
        strategy=o.strategy,
        **prec.trainer_kwargs(cfg.train.precision),
        logger=loggers,
        enable_checkpointing=False,  # RunMonitor writes the checkpoints, at its own cadence
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[monitor, *o.callbacks],
        val_check_interval=min(cfg.train.val_every, cfg.train.steps),
        check_val_every_n_epoch=None,
        num_sanity_val_steps=0,
        gradient_clip_val=cfg.train.grad_clip or None,
        log_every_n_steps=lit.log_every,
    )
    data = TaskData(task, cfg, seed, o.eval_split, start_step=start)
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
            except Exception as exc:  # noqa: BLE001  the init probes are outcomes too (e.g. of a run that diverges)
                err = run_error(exc)
                err.metrics = probes
                raise err from err.__cause__
            fit_s = time.perf_counter() - t0
            lit.steps.read_back()
            monitor.write_progress(trainer, lit)
            if o.keep_checkpoint:
                monitor.save(trainer)
            trainer.test(lit, datamodule=data, verbose=False)
            test_s = time.perf_counter() - t0 - fit_s
            probes |= measure(lit.model, cfg, task, seed, plugin.forward_context, device, "final")
        metrics = dict(lit.test_metrics) | probes | lit.grad_metrics()
        if device.type == "cuda":
            metrics["peak_mem_mb"] = torch.cuda.max_memory_allocated(device) / 2**20
        metrics["steps_to_target"] = float(lit.steps_to_target if lit.steps_to_target is not None else cfg.train.steps)
        metrics["target_reached"] = float(lit.steps_to_target is not None)
        last = lit.steps.last_finite
        metrics["train_loss_final"] = float(last) if last is not None else float("nan")
        metrics["train_tokens_per_s"] = monitor.tokens_per_s()  # training steps only, this attempt's
        if o.wandb is not None:  # under the store's names (record.json "metrics" and "status")
            loggers[1].experiment.summary.update({**metrics, "status": "ok"})
        return RunResult(
            metrics=metrics,
            history=lit.history,
            train_step_s=monitor.seconds,
            fit_s=fit_s,
            test_s=test_s,
            n_params=model.num_parameters(),
            device=str(trainer.strategy.root_device),
            precision=lit.precision_ran or str(trainer.precision),
            precision_requested=cfg.train.precision,
            adam_eps=prec.adam_eps(cfg.train.precision),
            kernel_backend=",".join(model.kernel_backends()),
            wandb_id=loggers[1].experiment.id if o.wandb else None,
            resumed_from_step=start or None,
            devices=o.devices,
            strategy=o.strategy,
            undefined_metrics=lit.undefined,
            flags=_flags(metrics, lit.history, cfg, task),
        )
    except Exception as exc:  # noqa: BLE001  how the run ended, as its record and its W&B summary hold it
        err = run_error(exc)
        if o.wandb is not None:
            loggers[1].experiment.summary.update({**err.fields().get("metrics", {}), "status": err.status})
        raise err from err.__cause__
    finally:
        if o.progress:
            remove_progress(run_dir)
        if o.wandb is not None:
            import wandb as wandb_lib

            wandb_lib.finish()
