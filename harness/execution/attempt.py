"""One run of a grid (a :class:`~harness.experiment.grid.RunSpec`): :func:`execute` claims its
folder, trains it (:func:`harness.training.loop.train`) and writes its record; a run that diverges
or raises is recorded with its status and reason, never raised to the grid. Also the machine and commit a record carries, and the run's
W&B arguments.
"""

from __future__ import annotations

import csv
import hashlib
import importlib.metadata as md
import os
import platform
import socket
import subprocess
import time
import traceback
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from harness import __version__
from harness.errors import run_error
from harness.execution import run_folder as attempts
from harness.execution.locks import append_event, holder, try_claim
from harness.execution.reuse import target_of
from harness.execution.run_folder import CHECKPOINTS, Progress, RunOptions, archived_attempts
from harness.experiment import plugins
from harness.experiment.ablation import Ablation
from harness.experiment.grid import RunSpec
from harness.redact import redact
from harness.store.record import Record
from harness.store.runs import read_record, run_dir, write_record


def environment() -> dict[str, Any]:
    """Library versions, host, device and threads: what explains a difference between machines."""
    import torch

    versions = {"python": platform.python_version(), "ablate": __version__}
    for pkg in ("torch", "lightning", "numpy", "wandb"):
        try:
            versions[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            versions[pkg] = None
    return {
        "versions": versions,
        "host": socket.gethostname(),
        "platform": platform.platform(),
        "torch_threads": torch.get_num_threads(),
        "cuda": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        "cpu_count": os.cpu_count(),
    }


def git_commit(src: Path | None = None) -> str | None:
    """The commit of the harness source (default: this checkout), if known. A tree with uncommitted
    changes to tracked files gives ``SHA+dirty.HASH``: HASH is the first 8 hex digits of the SHA-256
    of ``git diff HEAD``, so that two runs made from different uncommitted edits of one commit do not
    read as made by the same code."""
    src = src or Path(__file__).resolve().parents[2]
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=src, capture_output=True, text=True, timeout=5)
        if sha.returncode:
            return None
        diff = subprocess.run(
            ["git", "diff", "HEAD", "--binary", "--no-ext-diff"], cwd=src, capture_output=True, timeout=10
        ).stdout
        return sha.stdout.strip() + (f"+dirty.{hashlib.sha256(diff).hexdigest()[:8]}" if diff else "")
    except (OSError, subprocess.SubprocessError):
        return None


def execute(
    spec: RunSpec,
    results: Path,
    wandb_mode: str = "off",
    data_dir: Path | None = None,
    abl: Ablation | None = None,
    commit: str | None = None,
    options: RunOptions | None = None,
) -> Progress:
    """Claim one spec, train it and write its record; returns the record. Never raises for a bad
    run: one that diverges, times out or raises is recorded with its status and reason
    (:class:`harness.errors.RunError`; a ``failed`` one with ``traceback.txt`` beside it).

    A finished run is returned as stored, unless ``options.retry`` names that very attempt (it
    is then archived as ``record.attempt-N.json`` and run again). A run another live process
    has claimed is not touched: the returned entry (a dict) has status ``claimed`` and is not stored.
    An interrupted attempt resumes from its last checkpoint (``options.resume``).
    """
    from harness.tasks import build_task
    from harness.training.loop import TrainOptions, train

    opts = options or RunOptions()
    folder = run_dir(results, spec.ablation, spec.profile, spec.run_id)
    if (done := read_record(folder)) is not None and not opts.wants_retry(done):
        attempts.tidy_finished(folder, opts.keep_checkpoints, opts.claim_timeout)  # a kill after its record
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
        started = {
            "started_at": datetime.now(timezone.utc).isoformat(),
            "commit": commit,
            "plugins": plugins.record(),
            **environment(),
            "attempt": archived_attempts(folder) + 1,
        }
        t0 = time.perf_counter()
        try:
            task = build_task(spec.task, spec.task_params, data_dir=data_dir)
            how = TrainOptions(
                target=abl.tasks[spec.task].target if abl is not None else None,
                wandb=_wandb_kwargs(spec, wandb_mode, results, started["attempt"]),
                checkpoint_dir=folder / CHECKPOINTS,
                checkpoint_every_s=opts.checkpoint_every,
                keep_checkpoint=opts.keep_checkpoints,
                resume=opts.resume,
                timeout_s=opts.run_timeout,
                devices=opts.devices,
                strategy=opts.strategy,
            )
            result = train(spec.config, task, spec.seed, folder, how)
            _write_history(folder, result.history)
            if result.resumed_from_step:
                append_event(folder, "resume", step=result.resumed_from_step)
            ended = {"status": "ok", "reason": None, **result.record_fields()}
        except Exception as exc:  # noqa: BLE001  a bad run is data: record it and let the grid go on
            err = run_error(exc)
            if err.status == "failed":
                (folder / "traceback.txt").write_text(redact(traceback.format_exc()))
            ended = err.fields()
        record = spec_record(
            spec,
            abl,
            **started,
            **ended,
            wall_time_s=time.perf_counter() - t0,
            finished_at=datetime.now(timezone.utc).isoformat(),
            **({"took_over": claim.took_over} if claim.took_over else {}),
        )
        write_record(folder, record)
        append_event(folder, "finish", status=record.status, attempt=record.attempt)
        attempts.finish(folder, opts.keep_checkpoints)
    return record


def spec_record(spec: RunSpec, abl: Ablation | None = None, **fields: Any) -> Record:
    """The record of ``spec``'s run: what ran (from the spec; the task's convergence target when
    the ablation ``abl`` is given) and ``fields`` (how it ended, its numbers, timings, provenance).

    Raises:
        pydantic.ValidationError: ``fields`` that do not make a record (:class:`Record`).
    """
    return Record.model_validate(
        {
            "run_id": spec.run_id,
            "ablation": spec.ablation,
            "profile": spec.profile,
            "task": spec.task,
            "task_params": spec.task_params,
            "task_version": spec.task_version,
            "variant": spec.variant,
            "variant_label": spec.variant_label,
            "seed": spec.seed,
            "config": spec.config.model_dump(mode="json"),
            "code_versions": spec.code_versions,
            **({"tuned_params": spec.tuned_params} if spec.tuned_params else {}),
            **({"target": target_of(abl.tasks[spec.task].target)} if abl is not None else {}),
            **fields,
        }
    )


def _write_history(folder: Path, history: list[dict[str, float]]) -> None:
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
    return {
        "project": os.environ.get("WANDB_PROJECT", "ablate"),
        "mode": mode,
        "group": f"{spec.ablation}/{spec.profile}",
        "name": f"{spec.variant_label}-s{spec.seed}",
        "job_type": spec.task,
        "tags": wandb_tags(spec),
        "config": {
            **spec.payload(),
            "config": spec.config.model_dump(mode="json"),
            "ablation": spec.ablation,
            "profile": spec.profile,
            "variant": spec.variant,
            "variant_label": spec.variant_label,
            "run_id": spec.run_id,
        },
        "reinit": "finish_previous",
        "id": wandb_run_id(spec.run_id, attempt),
        "resume": "allow",
    }


def wandb_tags(spec: RunSpec) -> list[str]:
    """Variant, ``seed:N``, task and profile. W&B refuses a tag over 64 characters at init (which
    would fail the run): a longer variant label is tagged as one ``key=value`` tag per axis."""
    variant = (
        [spec.variant_label]
        if len(spec.variant_label) <= 64
        else [f"{k.rsplit('.', 1)[-1]}={v}"[:64] for k, v in spec.variant.items()]
    )
    return [*variant, f"seed:{spec.seed}", spec.task[:64], spec.profile[:64]]
