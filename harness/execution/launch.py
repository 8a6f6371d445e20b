"""How ``ablate run`` launches a grid.

:func:`check_options` checks the execution options of the command line
(:class:`~harness.run_options.RunOptions`: executor, GPUs, resume, checkpoints, time limits, retries)
before anything runs (:class:`~harness.errors.AblateError`, exit code 2); :func:`select` picks the runs
to execute, :func:`place_runs` the workers and GPUs of the local pool. Nothing here changes a run's
numbers or its id.

Runs executed: every run of the grid without a finished record (never started, or interrupted:
those resume), and with ``--retry STATUSES`` the finished runs of those statuses (their record
archived as ``record.attempt-N.json``).

Reuse of identical runs that other ablations finished: :mod:`harness.store.reuse`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.errors import AblateError, RunStatus
from harness.execution.attempt import tidy_finished
from harness.execution.gpus import Placement, check_threads, place, visible_gpus
from harness.execution.local import check_engine, on_this_machine
from harness.execution.locks import LEASE_HEARTBEAT_S
from harness.experiment import ablation as ablation_mod
from harness.experiment.grid import RunSpec
from harness.registry import did_you_mean
from harness.run_options import RunOptions
from harness.store.record import Record
from harness.store.reuse import adopt, find_reusable
from harness.store.runs import load_record, run_dir
from harness.threshold import Threshold
from harness.training.model_and_devices import check_devices

_URL = re.compile(r"^[a-z][a-z0-9+.\-]+:/", re.IGNORECASE)  # s3://b/x arrives as the Path s3:/b/x
FAILURES = (*(s for s in RunStatus if s.failure), "crashed")
"""Outcomes that make ``ablate run`` exit with 1: a :attr:`~harness.errors.RunStatus.failure`, or a worker that died."""
RETRYABLE = tuple(s.value for s in RunStatus if s is not RunStatus.OK)
REUSED_AS = ("ablation", "profile", "variant", "variant_label", "design")
"""The fields a reused run's record takes from the grid that reuses it."""


def parse_retry(text: str | None) -> tuple[str, ...]:
    """``"failed,diverged"`` -> ``("failed", "diverged")``.

    Raises:
        AblateError: an empty list or a status that cannot be retried (with the closest one).
    """
    statuses = tuple(dict.fromkeys(s.strip() for s in text.split(",") if s.strip())) if text is not None else ()
    if text is not None and not statuses:
        raise AblateError(f"--retry needs statuses, e.g. --retry {','.join(RETRYABLE)}")
    for s in statuses:
        if s not in RETRYABLE:
            raise AblateError(
                f"--retry: {s!r} is not a status that can be retried{did_you_mean(s, RETRYABLE)}; "
                f"choose among {', '.join(RETRYABLE)}"
            )
    return statuses


@dataclass
class Selected:
    """What :func:`select` found.

    Runs to execute, ``{run_id: attempt}`` of finished attempts to retry, the records of runs copied
    from identical runs of other ablations, and those of runs that did not finish (failed, timeout)
    and are not retried (a rerun without ``--retry`` says so and exits 1, as the run that made them
    did).
    """

    todo: list[RunSpec] = field(default_factory=list)
    retry: dict[str, int] = field(default_factory=dict)
    reused: list[Record] = field(default_factory=list)
    failed_before: list[Record] = field(default_factory=list)


def check_options(options: RunOptions, results: Path, workers: int | None = None, threads: int = 1) -> tuple[str, ...]:
    """Validate every execution option before any run; returns the statuses to retry.

    Raises:
        AblateError: a bad option, a missing engine, GPUs that are not there, a results location
            that is a URL.
    """
    if _URL.match(str(results)):
        scheme = str(results).split(":", 1)[0]  # Path folded its // (s3://b/x arrives as s3:/b/x)
        raise AblateError(
            f"--results-dir {scheme}://... is a URL; the store is a folder (local or on a shared "
            f"filesystem every worker sees), e.g. --results-dir /shared/ablate-results"
        )
    o = options
    for flag, hint in (
        ("--run-timeout", "leave the option out for no time limit"),
        ("--checkpoint-every", "e.g. 120 (the default); 0 checkpoints at every validation pass"),
        ("--lease-timeout", "e.g. 600 (the default)"),
    ):
        value = getattr(o, flag[2:].replace("-", "_"))  # --run-timeout: o.run_timeout
        if value is not None and not math.isfinite(value):  # nan slips through every comparison below
            raise AblateError(f"{flag} must be a finite number of seconds, got {value:g}; {hint}")
    if o.run_timeout is not None and o.run_timeout <= 0:
        raise AblateError(f"--run-timeout must be a positive number of seconds, got {o.run_timeout:g}")
    if o.checkpoint_every < 0:
        raise AblateError(
            f"--checkpoint-every must be 0 (a checkpoint at every validation pass) or a positive number "
            f"of seconds, got {o.checkpoint_every:g}"
        )
    if o.lease_timeout < 2 * LEASE_HEARTBEAT_S:
        raise AblateError(
            f"--lease-timeout must be at least {2 * LEASE_HEARTBEAT_S:g} s (a running lease is "
            f"refreshed every {LEASE_HEARTBEAT_S:g} s), got {o.lease_timeout:g}"
        )
    if o.gpus_per_run is not None and o.gpus_per_run < 0:
        raise AblateError(f"--gpus-per-run must be 0 (CPU) or more, got {o.gpus_per_run}")
    check_engine(o)
    if o.executor == "local" and (str(o.devices), o.strategy) != ("1", "auto"):
        check_devices(o.devices, o.strategy)
    statuses = parse_retry(o.retry)
    if on_this_machine(o):  # a Ray cluster connected to, or SLURM: CPUs on other machines
        check_threads(threads)
    place_runs(o, workers, 1, threads)
    return statuses


def select(
    options: RunOptions,
    specs: list[RunSpec],
    results: Path,
    statuses: tuple[str, ...],
    targets: Mapping[str, Threshold | None] | None = None,
) -> Selected:
    """The runs to execute, the finished attempts to retry, and the runs another ablation made.

    The last are the runs without a record that another ablation made with the same id and
    convergence target (``targets``, per task; None: no reuse), copied
    instead of trained (:func:`harness.store.reuse.adopt`).
    """
    out = Selected()
    for spec in specs:
        own = run_dir(results, spec.ablation, spec.profile, spec.run_id)
        rec = load_record(own)[0]
        if rec is None:
            target = (targets or {}).get(spec.task)
            fresh = targets is not None and not spec.tuned_params and not (own / "checkpoints").exists()
            if fresh and (source := find_reusable(results, spec.run_id, own, target, declared_target)) is not None:
                # the copy is made under the design its profile declares now, as a run trained here would be
                out.reused.append(adopt(source, own, target, **{k: getattr(spec, k) for k in REUSED_AS}))
            else:
                out.todo.append(spec)
        elif rec.status in statuses:
            out.todo.append(spec)
            out.retry[spec.run_id] = rec.attempt
        else:
            if rec.status in FAILURES:
                out.failed_before.append(rec)
            # kept as it is: a kill between its record and its clean-up left a lease and checkpoints
            tidy_finished(own, options.keep_checkpoints, options.lease_timeout)
    return out


def place_runs(
    options: RunOptions, workers: int | None, todo: int, threads: int, estimates: Sequence[float] | None = None
) -> Placement:
    """Workers and GPU slots of the local pool (Ray and SLURM place runs themselves).

    ``estimates``: expected seconds of each run (:func:`harness.execution.gpus.estimate_seconds`),
    from which the default number of CPU workers is decided.
    """
    if options.executor != "local":
        return Placement(workers or todo or 1, reason=f"{options.executor} places the runs")
    gpus = [] if options.gpus_per_run == 0 else visible_gpus()
    return place(workers, todo, threads, gpus, options.gpus_per_run, estimates=estimates)


def declared_target(rec: Record) -> Threshold | None | str:
    """The convergence target the ablation of ``rec`` declares today for its task; ``"unknown"`` when it cannot be told.

    What a run's target was for a record made before records held it (:func:`harness.store.reuse.find_reusable`).
    """
    try:
        entry = ablation_mod.load(rec.ablation).tasks.get(rec.task)
    except Exception:  # noqa: BLE001  a source ablation that no longer loads is simply not reused
        return "unknown"
    return entry.target if entry is not None else "unknown"
