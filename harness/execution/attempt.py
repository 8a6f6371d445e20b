"""One run of a grid (a :class:`~harness.experiment.grid.RunSpec`), wherever it executes.

:func:`execute` takes the lease on its run folder, trains it and writes its record (docs/INTERFACES.md,
"execution"); a run that diverges, raises or stalls (trained to its end, learned nothing) is
recorded with its status and reason, never raised to the grid. Also the machine and commit a record
carries, the run's W&B arguments, and the progress entries of runs that are not stored (``leased``
elsewhere, ``crashed``). The files of a run folder: docs/execution.md, "The store never loses a
run".
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import importlib.metadata as md
import io
import os
import platform
import shutil
import socket
import subprocess
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import partial
from pathlib import Path
from typing import Any, Literal

from harness import __version__
from harness.errors import RunStatus, run_error, storage_error
from harness.execution.locks import LEASE, TAKEOVER, clear_stale, holder, take_lease
from harness.experiment import plugins as plugin_loader
from harness.experiment.ablation import Ablation
from harness.experiment.grid import RunSpec
from harness.files import write_atomic
from harness.redact import redact
from harness.run_options import RunOptions
from harness.store.record import Record
from harness.store.runs import EVENTS, HISTORY, RECORD, append_event, denied, load_record, run_dir, write_record

CHECKPOINTS = "checkpoints"


def archive(folder: Path, record: Record) -> None:
    """Move the finished record (and its traceback and history) to ``*.attempt-N.*``."""
    for stem in ("record", "traceback", "history"):
        for path in folder.glob(f"{stem}.*"):
            if ".attempt-" not in path.name and not path.name.startswith("."):
                os.replace(path, folder / f"{stem}.attempt-{record.attempt}{path.suffix}")


def prepare(folder: Path, resume: bool) -> None:
    """Clear what an interrupted attempt left in the run folder ``folder``.

    Everything goes but every archived attempt, the event log and the lease (and the checkpoints and
    logs when resuming from a checkpoint: ``resume``). A ``record.json`` still here is not a usable
    record (the caller found none): it is kept as ``record.unreadable-N.json``.
    """
    if (folder / RECORD).exists():
        n = len(list(folder.glob("record.unreadable-*.json"))) + 1
        os.replace(folder / RECORD, folder / f"record.unreadable-{n}.json")
        append_event(folder, "unreadable_record", kept_as=f"record.unreadable-{n}.json")
    kept = {RECORD, EVENTS, LEASE, TAKEOVER} | ({CHECKPOINTS} if resume else set())
    if resume and (folder / CHECKPOINTS / "last.ckpt").is_file():
        kept |= {"csv", "wandb"}  # the loggers' folders, continued
    for path in folder.iterdir():
        if path.name in kept or ".attempt-" in path.name or ".unreadable-" in path.name:
            continue
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)


def tidy_finished(folder: Path, keep_checkpoints: bool, stale_after: float) -> None:
    """Clean what a process killed between a finished run's record and its clean-up left.

    That is its lease, once stale (logged as a takeover), and the checkpoints (unless kept:
    ``keep_checkpoints``). A lease that still holds (a live process) is left alone, with the
    checkpoints.
    """
    clear_stale(folder, stale_after)
    if not (folder / LEASE).exists() and not keep_checkpoints:
        shutil.rmtree(folder / CHECKPOINTS, ignore_errors=True)


def unfinished_state(folder: Path) -> tuple[str, str]:
    """The state of a run without a record, and what it is doing or how it will start.

    ``("running", who)`` while a live lease holds a run without a record, else
    ``("pending", how it will start)``.
    """
    held = holder(folder)
    if held is not None and "token" in held and held["stale"] is None:
        return "running", f"leased by {held.get('owner')} since {held.get('leased_at')}"
    if (folder / CHECKPOINTS / "last.ckpt").is_file():
        return "pending", "interrupted; resumes from its last checkpoint"
    return "pending", "interrupted; starts afresh" if folder.is_dir() else "not started"


def grid_attempt(
    results: Path, wandb_mode: str, data_dir: Path | None, abl: Ablation, options: RunOptions, absolute: bool = False
) -> Callable[[RunSpec], Progress]:
    """:func:`execute` with the arguments every run of one grid shares (pickled to each worker once).

    They are the store, W&B mode, data folder, ablation and run options, the planning process's commit,
    and the plugins it has loaded, loaded again where the run executes (a spawned worker, a Ray task, a
    SLURM job). ``absolute``: paths made absolute, for a worker that starts in another folder.
    """
    if absolute:
        results, data_dir = Path(results).resolve(), Path(data_dir).resolve() if data_dir else None
        abl = abl.model_copy(update={"source": str(Path(abl.source).resolve())}) if abl.source else abl
    return partial(
        execute,
        results=results,
        wandb_mode=wandb_mode,
        data_dir=data_dir,
        abl=abl,
        commit=git_commit(),
        options=options,
        plugins=plugin_loader.refs(),
    )


def run_with_threads(spec: RunSpec, attempt: Callable[[RunSpec], Progress], threads: int) -> Progress:
    """What one Ray task or SLURM job runs: ``attempt`` (:func:`grid_attempt`) with ``threads`` torch threads."""
    import torch

    torch.set_num_threads(threads)
    return attempt(spec)


@dataclass(frozen=True)
class Unstored:
    """The progress entry, never stored, of a run ``leased`` by another live process or ``crashed``.

    ``crashed``: its process died or its executor failed. The entry has the attributes of a
    :class:`~harness.store.record.Record` that progress and outcome lines read, the rest empty.
    """

    run_id: str
    task: str
    variant_label: str
    seed: int
    status: Literal["leased", "crashed"]
    reason: str
    profile: None = None
    metrics: None = None
    wall_time_s: float = 0.0
    resumed_from_step: None = None
    took_over: None = None
    attempt: int = 1


Progress = Record | Unstored  # what a run came to: its stored record, or an entry never stored
Finished = Callable[[RunSpec, Callable[[], Progress]], None]  # a run and its result (or its crash)


def unstored(spec: RunSpec, status: Literal["leased", "crashed"], reason: str) -> Unstored:
    """The :class:`Unstored` entry of ``spec``'s run, with its ``status`` and the ``reason`` shown for it."""
    return Unstored(spec.run_id, spec.task, spec.variant_label, spec.seed, status, reason)


def run_environment() -> dict[str, Any]:
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
    """The commit of the harness source ``src`` (default: this checkout), if known.

    ``SHA+dirty.HASH`` for a tree with uncommitted changes to tracked files (HASH: 8 hex digits of
    the SHA-256 of ``git diff HEAD``, so runs of different uncommitted edits of one commit do not
    read as the same code). None when git cannot tell (not a checkout, no git, a timeout).
    """
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
    options: RunOptions = RunOptions(),
    plugins: tuple[plugin_loader.PluginRef, ...] | None = None,
) -> Progress:
    """Take the lease on one spec's run folder, train the run and write its record.

    Loads ``plugins`` first (once per process). Returns the record, or a ``leased`` entry (not
    stored) when another live process holds the run, or a ``crashed`` one (not stored) when the
    record is another user's or a storage error stopped the run. Never raises for a bad run (a
    ``failed`` one has ``traceback.txt`` beside it). A finished run is returned as stored, unless
    ``options.retry_attempts`` names that very attempt: it is then archived and run again.

    Raises:
        AblateError: one of ``plugins`` cannot be loaded here.
    """
    from harness.tasks import build_task
    from harness.training.loop import TrainOptions, train

    if plugins is not None:
        plugin_loader.load_refs(plugins)
    folder = run_dir(results, spec.ablation, spec.profile, spec.run_id)
    done, problem = load_record(folder)
    if denied(problem):  # another user's record, not a damaged one: never moved aside nor trained again
        return unstored(spec, "crashed", f"{folder / RECORD}: {problem}")
    if done is not None and options.retry_attempts.get(done.run_id) != done.attempt:
        tidy_finished(folder, options.keep_checkpoints, options.lease_timeout)  # a kill after its record
        return done
    lease = take_lease(folder, options.lease_timeout)
    if lease is None:
        who = (holder(folder) or {}).get("owner", "another process")
        return unstored(spec, "leased", f"running elsewhere ({who})")
    with lease:
        done, problem = load_record(folder)
        if denied(problem):
            return unstored(spec, "crashed", f"{folder / RECORD}: {problem}")
        if done is not None and options.retry_attempts.get(done.run_id) != done.attempt:
            return done  # finished by another process since we looked
        if done is not None:
            archive(folder, done)
        prepare(folder, options.resume)
        started = {
            "started_at": datetime.now(timezone.utc).isoformat(),
            "commit": commit,
            "plugins": plugin_loader.record(),
            **run_environment(),
            "attempt": len(list(folder.glob("record.attempt-*.json"))) + 1,
        }
        t0 = time.perf_counter()
        try:
            task = build_task(spec.task, spec.task_params, data_dir=data_dir, near=abl.folder if abl else None)
            how = TrainOptions(
                run=options,
                target=abl.tasks[spec.task].target if abl is not None else None,
                wandb=_wandb_kwargs(spec, wandb_mode, started["attempt"]),
                checkpoint_dir=folder / CHECKPOINTS,
            )
            result = train(spec.config, task, spec.seed, folder, how)
            if result.history:
                text = io.StringIO(newline="")
                writer = csv.DictWriter(text, fieldnames=list(result.history[0]))
                writer.writeheader()
                writer.writerows(result.history)
                write_atomic(folder / HISTORY, text.getvalue().encode("utf-8"))
            if result.resumed_from_step:
                append_event(folder, "resume", step=result.resumed_from_step)
            ended = result.record_fields()  # ok, or stalled (trained to its end, learned nothing)
        except Exception as exc:  # noqa: BLE001  a bad run is data: record it and let the grid go on
            if (full := storage_error(exc)) is not None:  # not the run's fault: no record, checkpoints kept
                return stopped_by_storage(spec, folder, full)
            err = run_error(exc)
            if err.status == RunStatus.FAILED:
                write_atomic(folder / "traceback.txt", redact(traceback.format_exc()).encode("utf-8"))
            ended = err.fields()
        ended |= {"wall_time_s": time.perf_counter() - t0, "finished_at": datetime.now(timezone.utc).isoformat()}
        took_over = {"took_over": lease.took_over} if lease.took_over else {}
        record = spec_record(spec, abl, **started, **ended, **took_over)
        write_record(folder, record)
        append_event(folder, "finish", status=record.status, attempt=record.attempt)
        if not options.keep_checkpoints:
            shutil.rmtree(folder / CHECKPOINTS, ignore_errors=True)
    return record


def stopped_by_storage(spec: RunSpec, folder: Path, exc: OSError) -> Unstored:
    """The ``crashed`` entry of a run stopped by a storage error (a full disk, a quota, a permission).

    It gets no record, so ``ablate run`` resumes it from its checkpoint once there is room.
    """
    with contextlib.suppress(OSError):  # the event log may be on the full disk too
        append_event(folder, "storage_error", errno=exc.errno, reason=f"{exc.strerror}: {exc.filename}")
    where = f" ({exc.filename})" if exc.filename else ""
    return unstored(spec, "crashed", f"storage error: {exc.strerror}{where}; free space or fix rights, then run again")


def spec_record(spec: RunSpec, abl: Ablation | None = None, **fields: Any) -> Record:
    """The record of ``spec``'s run.

    It holds what ran (from the spec; the task's convergence target when the ablation ``abl`` is
    given) and ``fields`` (how it ended, its numbers, timings, provenance).

    Raises:
        pydantic.ValidationError: ``fields`` that do not make a record (:class:`Record`).
    """
    keys = ("run_id", "ablation", "profile", "task", "task_params", "task_version", "variant", "variant_label", "seed")
    what = {k: getattr(spec, k) for k in (*keys, "code_versions")} | {"config": spec.config.model_dump(mode="json")}
    what |= {k: getattr(spec, k) for k in ("tuned_params", "design") if getattr(spec, k)}
    if abl is not None:
        what["target"] = abl.tasks[spec.task].target
    return Record.model_validate(what | fields)


def wandb_run_id(run_id: str, attempt: int) -> str:
    """The W&B run id of one attempt at a run.

    Its resumes log into the same W&B run (``resume="allow"``); a ``--retry`` is a new attempt and a
    new W&B run.
    """
    return f"{run_id}-a{attempt}"


def _wandb_kwargs(spec: RunSpec, mode: str, attempt: int) -> dict[str, Any] | None:
    if mode == "off":
        return None
    os.environ.setdefault("WANDB_SILENT", "true")
    # W&B refuses a tag over 64 characters at init: a longer variant label is one tag per axis
    label = spec.variant_label
    tags = [label] if len(label) <= 64 else [f"{k.rsplit('.', 1)[-1]}={v}"[:64] for k, v in spec.variant.items()]
    names = ("ablation", "profile", "variant", "variant_label", "run_id")
    # the full config (as in record.json), not the hashed one, which drops keys at their defaults
    config = spec.payload() | {"config": spec.config.model_dump(mode="json")} | {k: getattr(spec, k) for k in names}
    return {
        "project": os.environ.get("WANDB_PROJECT", "ablate"),
        "mode": mode,
        "group": f"{spec.ablation}/{spec.profile}",
        "name": f"{label}-s{spec.seed}",
        "job_type": spec.task,
        "tags": [*tags, f"seed:{spec.seed}", spec.task[:64], spec.profile[:64]],
        "config": config,
        "reinit": "finish_previous",
        "id": wandb_run_id(spec.run_id, attempt),
        "resume": "allow",
    }
