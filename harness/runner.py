"""Grid expansion into run specs, validation before any run, and execution of one run.

:func:`plan` turns (ablation, profile, overrides) into a list of :class:`RunSpec`, each with its
resolved config and a content hash as run id, and checks everything that could fail mid-grid
(unknown names, bad overrides, d_model vs heads, an evaluation length a variant cannot
represent, a missing data file) so that bad input fails at once with exit code 2.
:func:`execute` runs one spec and writes its record; a run that diverges or raises is recorded
with its status and reason, never raised to the grid.
"""
from __future__ import annotations

import os
import platform
import socket
import subprocess
import time
import traceback
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from harness import __version__
from harness.ablation import Ablation
from harness.attempts import RunOptions
from harness.config import RunConfig, apply_overrides, build_config, config_hash, parse_override
from harness.errors import AblateError
from harness.store import read_record, run_dir, write_json_atomic
from harness.versions import hashed_versions, run_versions


@dataclass(frozen=True)
class RunSpec:
    """One run of a grid: a resolved config, a task and a seed.

    ``tuned_params`` (``ablate run --tuned``): the Optuna study's best parameters, already merged
    into ``config``; such runs are stored under profile ``<profile>+tuned`` (harness/tune.py).
    """

    ablation: str
    profile: str
    task: str
    task_params: dict[str, Any]
    task_version: str
    variant: dict[str, Any]
    variant_label: str
    seed: int
    config: RunConfig
    tuned_params: dict[str, Any] | None = None

    def payload(self) -> dict[str, Any]:
        """What the run id hashes: everything that determines the run's numbers, the code included
        (the versions above 1 of the code the config uses: :mod:`harness.versions`)."""
        out = {"task": self.task, "task_version": self.task_version, "task_params": self.task_params,
               "config": self.config.hash_dump(), "seed": self.seed}
        if self.tuned_params:  # absent for untuned runs, so their ids stay as they were
            out["tuned_params"] = self.tuned_params
        if code := hashed_versions(self.code_versions):  # absent while all are 1: ids as before versions
            out["code_versions"] = code
        return out

    @property
    def code_versions(self) -> dict[str, int]:
        """Every code version this run uses (``{"model": 1, "position:rope": 2, ...}``)."""
        return run_versions(self.config.model_dump(mode="json"))

    @property
    def run_id(self) -> str:
        return config_hash(self.payload())


def _build_task(name: str, params: dict[str, Any], data_dir: Path | None, check_data: bool = True) -> Any:
    from tasks import DataUnavailableError, build_task

    try:
        task = build_task(name, params, data_dir=data_dir)
        if check_data and hasattr(task, "check_available"):
            task.check_available()
        return task
    except DataUnavailableError as exc:
        raise AblateError(str(exc)) from None
    except (KeyError, ValueError) as exc:
        raise AblateError(f"task {name!r}: {exc}") from None


def transformer_config(cfg: RunConfig, vocab_size: int):
    """The pure-torch model config of a run (``harness.modules.TransformerConfig``)."""
    from harness.modules import TransformerConfig

    m, a = cfg.model, cfg.attention
    return TransformerConfig(
        vocab_size=vocab_size, d_model=m.d_model, n_heads=m.n_heads, n_layers=m.n_layers,
        d_ff=cfg.ffn.width(m.d_model), max_len=m.max_len, position=m.position, kernel=a.kernel,
        qkv=a.qkv, scale=a.scale, mask_fill=a.mask_fill, head_split=a.head_split,
        norm=cfg.block.norm, norm_position=cfg.block.norm_position, activation=cfg.ffn.activation,
        dropout=m.dropout, learned_init_std=m.learned_init_std, tie_embeddings=m.tie_embeddings,
    )


def _check_kernel_available(cfg: RunConfig, mcfg: Any, task: Any, where: str) -> None:
    """The attention kernel can run where this process would train (e.g. ``flash``: never a
    silent fallback to another backend), with the run's dtype and masks."""
    from harness.modules import KERNELS, POSITIONAL
    from harness.precision import compute_dtype, run_device

    with_mask = POSITIONAL.get(mcfg.position).adds_bias() or getattr(task, "pad_id", None) is not None
    try:
        KERNELS.get(mcfg.kernel).check_available(run_device(), compute_dtype(cfg.train.precision),
                                                 with_mask=with_mask, dropout=mcfg.dropout)
    except ValueError as exc:
        raise AblateError(f"{where}: {exc}") from None


def _check_variant(cfg: RunConfig, task: Any, where: str) -> None:
    """Model names, shapes and every evaluation length, checked before any run starts."""
    from harness.modules import POSITIONAL

    try:
        mcfg = transformer_config(cfg, task.vocab_size)
    except (KeyError, ValueError) as exc:
        raise AblateError(f"{where}: {exc}") from None
    _check_kernel_available(cfg, mcfg, task, where)
    longest = max(cfg.eval_lengths())
    capacity = POSITIONAL.get(mcfg.position).max_positions(mcfg)
    if capacity is not None and longest > capacity:
        raise AblateError(
            f"{where}: model.position={cfg.model.position} can represent {capacity} positions "
            f"(model.max_len={cfg.model.max_len}) but the ablation evaluates at {longest} tokens "
            f"({max(cfg.eval.length_multipliers)} x train.seq_len={cfg.train.seq_len}); raise "
            f"model.max_len to at least {longest} or leave it unset (it then covers the longest evaluation)")
    shortest = min(cfg.train.seq_len, *cfg.eval_lengths())
    if shortest < getattr(task, "min_seq_len", 1):
        raise AblateError(f"{where}: task {task.name!r} needs seq_len >= {task.min_seq_len}, got {shortest}")
    _check_longest(cfg, task, where)


LENGTH_USES = {"train": ("train", "val"), "eval": ("test", "val")}
"""Splits each length is drawn from: ``train.seq_len`` trains and validates (and probes) on the
train and val splits; every evaluation length is drawn from test (``run``) and val (``tune``)."""


def _check_longest(cfg: RunConfig, task: Any, where: str) -> None:
    """``train.seq_len`` and every evaluation length must fit what the task can provide
    (:meth:`tasks.base.Task.max_seq_len`), before any run starts."""
    seq_len = cfg.train.seq_len
    for split in LENGTH_USES["train"]:
        if (longest := task.max_seq_len(split)) is not None and seq_len > longest:
            raise AblateError(
                f"{where}: train.seq_len={seq_len} but task {task.name!r} provides rows of at most {longest} "
                f"tokens from its {split} split; lower train.seq_len to at most {longest}")
    for split in LENGTH_USES["eval"]:
        longest = task.max_seq_len(split)
        if longest is None:
            continue
        for mult, length in zip(cfg.eval.length_multipliers, cfg.eval_lengths()):
            if length > longest:
                raise AblateError(
                    f"{where}: evaluation length {length} tokens ({mult} x train.seq_len={seq_len}) is longer than "
                    f"task {task.name!r} provides from its {split} split ({longest} tokens); keep "
                    f"eval.length_multipliers at most {longest // seq_len} or lower train.seq_len")


METRICS = {"synthetic": ("acc", "exact", "loss"), "lm": ("loss", "ppl")}
RUN_METRICS = ("steps_to_target", "target_reached", "train_loss_final", "train_tokens_per_s")


def _check_metrics(entry: Any, cfg: RunConfig, task: Any, tname: str) -> None:
    """The primary and gate metrics must be ones the task produces at the evaluated lengths
    (``acc@x4`` needs multiplier 4), the target one the validation pass logs (``acc``, ``loss``)."""
    from harness.registry import did_you_mean

    bases = METRICS.get(task.kind, ("loss",))
    produced = [f"{b}@x{m}" for b in bases for m in cfg.eval.length_multipliers] + list(RUN_METRICS)
    named = [("primary", entry.primary.metric)] + ([("gate", entry.gate.metric)] if entry.gate else [])
    for role, metric in named:
        if metric not in produced and not metric.startswith(("init_", "final_", "grad_", "leak", "masked", "peak_")):
            raise AblateError(f"task {tname!r}: {role} metric {metric!r} is not produced by this task at the "
                              f"evaluated lengths{did_you_mean(metric, produced)}; it produces: {', '.join(produced)}")
    if entry.target is not None and entry.target.metric not in bases:
        raise AblateError(f"task {tname!r}: target metric {entry.target.metric!r} is not a validation metric"
                          f"{did_you_mean(entry.target.metric, list(bases))}; choose one of: {', '.join(bases)}")


def plan(abl: Ablation, profile: str | None, overrides: list[str] | tuple[str, ...] = (),
         data_dir: Path | None = None, check_data: bool = True) -> tuple[str, list[RunSpec]]:
    """Expand an ablation's grid for one profile into validated run specs.

    Order: seed, then task, then variant, so that finished seeds form complete pairs early.
    ``check_data=False`` (read-only commands: status, compare, report) skips finding, checking
    or downloading data files: run ids depend only on configs, never on the data.

    Raises:
        AblateError: any bad input (see module docstring), before any run starts.
    """
    profile, prof = abl.profile(profile)
    abl = abl.for_profile(profile)
    cli = dict(parse_override(o) for o in overrides)
    if clash := set(cli) & set(abl.axes):
        raise AblateError(f"{sorted(clash)} is an axis of {abl.name}; a run override may not change it")
    per_task: dict[str, list[tuple[dict[str, Any], RunConfig]]] = {}
    tasks: dict[str, Any] = {}
    for tname, entry in abl.tasks.items():
        tasks[tname] = task = _build_task(tname, entry.params, data_dir, check_data)
        per_task[tname] = []
        for variant in abl.variants():
            layers = [abl.base, entry.config, prof.overrides, prof.tasks.get(tname, {}), cli, variant]
            data = apply_overrides({}, {k: v for layer in layers for k, v in layer.items()})
            where = f"variant {abl.label(variant)!r} on task {tname!r}"
            cfg = build_config(data, where)
            if cfg.model.max_len is None:
                cfg = cfg.model_copy(update={"model": cfg.model.model_copy(update={"max_len": max(cfg.eval_lengths())})})
            _check_variant(cfg, task, where)
            _check_metrics(entry, cfg, task, tname)
            per_task[tname].append((variant, cfg))
    specs = [
        RunSpec(abl.name, profile, tname, dict(abl.tasks[tname].params), str(tasks[tname].version),
                variant, abl.label(variant), seed, cfg)
        for seed in prof.seeds for tname in abl.tasks for variant, cfg in per_task[tname]
    ]
    return profile, specs


def environment() -> dict[str, Any]:
    """Library versions, host, device and threads: what explains a difference between machines."""
    import importlib.metadata as md

    import torch

    versions = {"python": platform.python_version(), "ablate": __version__}
    for pkg in ("torch", "lightning", "numpy", "wandb"):
        try:
            versions[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            versions[pkg] = None
    return {"versions": versions, "host": socket.gethostname(), "platform": platform.platform(),
            "torch_threads": torch.get_num_threads(),
            "cuda": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
            "cpu_count": os.cpu_count()}


def git_commit() -> str | None:
    """The commit of the harness source (with ``+dirty`` when the tree has changes), if known."""
    src = Path(__file__).resolve().parent.parent
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=src, capture_output=True, text=True, timeout=5)
        if sha.returncode:
            return None
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=src,
                               capture_output=True, text=True, timeout=5).stdout.strip()
        return sha.stdout.strip() + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return None


def execute(spec: RunSpec, results: Path, wandb_mode: str = "off", data_dir: Path | None = None,
            abl: Ablation | None = None, commit: str | None = None,
            options: RunOptions | None = None) -> dict[str, Any]:
    """Claim one spec, run it and write its record; returns the record. Never raises for a bad run.

    A finished run is returned as stored, unless ``options.retry`` names that very attempt (it
    is then archived as ``record.attempt-N.json`` and run again). A run another live process
    has claimed is not touched: the returned entry has status ``claimed`` and is not stored.
    An interrupted attempt resumes from its last checkpoint (``options.resume``).
    """
    from harness import attempts
    from harness.locks import append_event, holder, try_claim

    opts = options or RunOptions()
    folder = run_dir(results, spec.ablation, spec.profile, spec.run_id)
    if (done := read_record(folder)) is not None and not opts.wants_retry(done):
        return done
    claim = try_claim(folder, opts.claim_timeout)
    if claim is None:
        return attempts.claimed_elsewhere(spec, holder(folder))
    with claim:
        if (done := read_record(folder)) is not None and not opts.wants_retry(done):
            return done  # finished by another process since we looked
        if done is not None:
            attempts.archive(folder, done)
        attempts.prepare(folder, opts.resume)
        record = _attempt(spec, folder, results, wandb_mode, data_dir, abl, commit, opts)
        if claim.took_over:
            record["took_over"] = claim.took_over
        write_json_atomic(folder / "record.json", record)
        append_event(folder, "finish", status=record["status"], attempt=record["attempt"])
        attempts.finish(folder, opts.keep_checkpoints)
    return record


def _attempt(spec: RunSpec, folder: Path, results: Path, wandb_mode: str, data_dir: Path | None,
             abl: Ablation | None, commit: str | None, opts: RunOptions) -> dict[str, Any]:
    """Train and evaluate one claimed run; the record of the outcome (ok, diverged, failed, timeout)."""
    from tasks import build_task

    from harness.attempts import CHECKPOINTS, archived_attempts
    from harness.locks import append_event
    from harness.redact import redact
    from harness.callbacks import TimedOut
    from harness.training import Diverged, train_and_evaluate

    record: dict[str, Any] = {
        "run_id": spec.run_id, "ablation": spec.ablation, "profile": spec.profile, "task": spec.task,
        "task_params": spec.task_params, "task_version": spec.task_version, "variant": spec.variant,
        "variant_label": spec.variant_label, "seed": spec.seed, "config": spec.config.model_dump(mode="json"),
        "code_versions": spec.code_versions,
        **({"tuned_params": spec.tuned_params} if spec.tuned_params else {}),
        "started_at": datetime.now(timezone.utc).isoformat(), "commit": commit, **environment(),
        "attempt": archived_attempts(folder) + 1,
    }
    t0 = time.perf_counter()
    try:
        task = build_task(spec.task, spec.task_params, data_dir=data_dir)
        target = abl.tasks[spec.task].target if abl is not None else None
        out = train_and_evaluate(transformer_config(spec.config, task.vocab_size), spec.config, task, spec.seed,
                                 folder, target=target, wandb=_wandb_kwargs(spec, wandb_mode, results, record["attempt"]),
                                 checkpoint_dir=folder / CHECKPOINTS, resume=opts.resume, timeout_s=opts.run_timeout,
                                 devices=opts.devices, strategy=opts.strategy)
        history = out.pop("history")
        record.update(status="ok", reason=None, **out)
        _write_history(folder, history)
        if out.get("resumed_from_step"):
            append_event(folder, "resume", step=out["resumed_from_step"])
    except Diverged as exc:
        record.update(status="diverged", reason=str(exc), diverged_step=exc.step, last_finite_loss=exc.last_finite,
                      metrics=getattr(exc, "partial_metrics", {}))  # probes measured before training
    except TimedOut as exc:
        record.update(status="timeout", reason=str(exc), timeout_step=exc.step, run_timeout_s=exc.limit)
    except Exception as exc:  # a bad run is data: record it and let the grid go on
        (folder / "traceback.txt").write_text(redact(traceback.format_exc()))
        record.update(status="failed", reason=redact(f"{type(exc).__name__}: {exc}"),
                      metrics=getattr(exc, "partial_metrics", {}))
    record["wall_time_s"] = time.perf_counter() - t0
    record["finished_at"] = datetime.now(timezone.utc).isoformat()
    return record


def _write_history(folder: Path, history: list[dict[str, float]]) -> None:
    import csv

    if not history:
        return
    with open(folder / "history.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(history[0]))
        writer.writeheader()
        writer.writerows(history)


def wandb_run_id(run_id: str, attempt: int) -> str:
    """The W&B run id of one attempt at a run: stable across resumes of that attempt (they log
    into the same W&B run, ``resume="allow"``); a ``--retry`` is a new attempt and a new W&B run."""
    return f"{run_id}-a{attempt}"


def _wandb_kwargs(spec: RunSpec, mode: str, results: Path, attempt: int = 1) -> dict[str, Any] | None:
    if mode == "off":
        return None
    os.environ.setdefault("WANDB_SILENT", "true")
    # the full config (as in record.json), not the hashed one, which drops keys at their defaults
    return {"project": os.environ.get("WANDB_PROJECT", "ablate"), "mode": mode,
            "group": f"{spec.ablation}/{spec.profile}", "name": f"{spec.variant_label}-s{spec.seed}",
            "job_type": spec.task, "tags": wandb_tags(spec),
            "config": {**spec.payload(), "config": spec.config.model_dump(mode="json"), "ablation": spec.ablation,
                       "profile": spec.profile, "variant": spec.variant, "variant_label": spec.variant_label,
                       "run_id": spec.run_id},
            "reinit": "finish_previous", "id": wandb_run_id(spec.run_id, attempt), "resume": "allow"}


def wandb_tags(spec: RunSpec) -> list[str]:
    """Variant, ``seed:N``, task and profile. W&B refuses a tag over 64 characters at init (which
    would fail the run): a longer variant label is tagged as one ``key=value`` tag per axis."""
    variant = [spec.variant_label] if len(spec.variant_label) <= 64 else [
        f"{k.rsplit('.', 1)[-1]}={v}"[:64] for k, v in spec.variant.items()]
    return [*variant, f"seed:{spec.seed}", spec.task[:64], spec.profile[:64]]
