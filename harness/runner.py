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
from harness.config import RunConfig, apply_overrides, build_config, config_hash, parse_override
from harness.errors import AblateError
from harness.store import read_record, run_dir, write_json_atomic


@dataclass(frozen=True)
class RunSpec:
    """One run of a grid: a resolved config, a task and a seed."""

    ablation: str
    profile: str
    task: str
    task_params: dict[str, Any]
    task_version: str
    variant: dict[str, Any]
    variant_label: str
    seed: int
    config: RunConfig

    def payload(self) -> dict[str, Any]:
        """What the run id hashes: everything that determines the run's numbers."""
        return {"task": self.task, "task_version": self.task_version, "task_params": self.task_params,
                "config": self.config.model_dump(mode="json"), "seed": self.seed}

    @property
    def run_id(self) -> str:
        return config_hash(self.payload())


def _build_task(name: str, params: dict[str, Any], data_dir: Path | None) -> Any:
    from tasks import DataUnavailableError, build_task

    try:
        task = build_task(name, params, data_dir=data_dir)
        if hasattr(task, "check_available"):
            task.check_available()
        return task
    except DataUnavailableError as exc:
        raise AblateError(str(exc)) from None
    except (KeyError, ValueError) as exc:
        raise AblateError(f"task {name!r}: {exc}") from None


def transformer_config(cfg: RunConfig, vocab_size: int):
    """The pure-torch model config of a run (``harness.modules.TransformerConfig``)."""
    from harness.modules import TransformerConfig

    m = cfg.model
    return TransformerConfig(
        vocab_size=vocab_size, d_model=m.d_model, n_heads=m.n_heads, n_layers=m.n_layers,
        d_ff=cfg.ffn.d_ff, max_len=m.max_len, position=m.position, kernel=cfg.attention.kernel,
        norm=cfg.block.norm, norm_position=cfg.block.norm_position, activation=cfg.ffn.activation,
        dropout=m.dropout, learned_init_std=m.learned_init_std, tie_embeddings=m.tie_embeddings,
    )


def _check_variant(cfg: RunConfig, task: Any, where: str) -> None:
    """Model names, shapes and every evaluation length, checked before any run starts."""
    from harness.modules import POSITIONAL

    try:
        mcfg = transformer_config(cfg, task.vocab_size)
    except (KeyError, ValueError) as exc:
        raise AblateError(f"{where}: {exc}") from None
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


def plan(abl: Ablation, profile: str | None, overrides: list[str] | tuple[str, ...] = (),
         data_dir: Path | None = None) -> tuple[str, list[RunSpec]]:
    """Expand an ablation's grid for one profile into validated run specs.

    Order: seed, then task, then variant, so that finished seeds form complete pairs early.

    Raises:
        AblateError: any bad input (see module docstring), before any run starts.
    """
    profile, prof = abl.profile(profile)
    cli = dict(parse_override(o) for o in overrides)
    if clash := set(cli) & set(abl.axes):
        raise AblateError(f"{sorted(clash)} is an axis of {abl.name}; a run override may not change it")
    per_task: dict[str, list[tuple[dict[str, Any], RunConfig]]] = {}
    tasks: dict[str, Any] = {}
    for tname, entry in abl.tasks.items():
        tasks[tname] = task = _build_task(tname, entry.params, data_dir)
        per_task[tname] = []
        for variant in abl.variants():
            layers = [abl.base, entry.config, prof.overrides, prof.tasks.get(tname, {}), cli, variant]
            data = apply_overrides({}, {k: v for layer in layers for k, v in layer.items()})
            where = f"variant {abl.label(variant)!r} on task {tname!r}"
            cfg = build_config(data, where)
            if cfg.model.max_len is None:
                cfg = cfg.model_copy(update={"model": cfg.model.model_copy(update={"max_len": max(cfg.eval_lengths())})})
            _check_variant(cfg, task, where)
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
            abl: Ablation | None = None, commit: str | None = None) -> dict[str, Any]:
    """Run one spec and write its record; returns the record. Never raises for a bad run."""
    import shutil

    from tasks import build_task

    from harness.training import Diverged, train_and_evaluate

    folder = run_dir(results, spec.ablation, spec.profile, spec.run_id)
    if (done := read_record(folder)) is not None:
        return done
    if folder.exists():  # an interrupted attempt: start afresh, nothing in it was finished
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    record: dict[str, Any] = {
        "run_id": spec.run_id, "ablation": spec.ablation, "profile": spec.profile, "task": spec.task,
        "task_params": spec.task_params, "task_version": spec.task_version, "variant": spec.variant,
        "variant_label": spec.variant_label, "seed": spec.seed, "config": spec.config.model_dump(mode="json"),
        "started_at": datetime.now(timezone.utc).isoformat(), "commit": commit, **environment(),
    }
    t0 = time.perf_counter()
    try:
        task = build_task(spec.task, spec.task_params, data_dir=data_dir)
        target = abl.tasks[spec.task].target if abl is not None else None
        out = train_and_evaluate(transformer_config(spec.config, task.vocab_size), spec.config, task, spec.seed,
                                 folder, target=target, wandb=_wandb_kwargs(spec, wandb_mode, results))
        history = out.pop("history")
        record.update(status="ok", reason=None, **out)
        _write_history(folder, history)
    except Diverged as exc:
        record.update(status="diverged", reason=str(exc), diverged_step=exc.step, last_finite_loss=exc.last_finite)
    except Exception as exc:  # a bad run is data: record it and let the grid go on
        (folder / "traceback.txt").write_text(traceback.format_exc())
        record.update(status="failed", reason=f"{type(exc).__name__}: {exc}")
    record["wall_time_s"] = time.perf_counter() - t0
    record["finished_at"] = datetime.now(timezone.utc).isoformat()
    write_json_atomic(folder / "record.json", record)
    return record


def _write_history(folder: Path, history: list[dict[str, float]]) -> None:
    import csv

    if not history:
        return
    with open(folder / "history.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(history[0]))
        writer.writeheader()
        writer.writerows(history)


def _wandb_kwargs(spec: RunSpec, mode: str, results: Path) -> dict[str, Any] | None:
    if mode == "off":
        return None
    os.environ.setdefault("WANDB_SILENT", "true")
    return {"project": os.environ.get("WANDB_PROJECT", "ablate"), "mode": mode,
            "group": f"{spec.ablation}/{spec.profile}", "name": f"{spec.variant_label}-s{spec.seed}",
            "job_type": spec.task, "tags": [spec.variant_label, f"seed:{spec.seed}", spec.task, spec.profile],
            "config": {**spec.payload(), "ablation": spec.ablation, "profile": spec.profile,
                       "variant": spec.variant, "run_id": spec.run_id},
            "reinit": "finish_previous"}
