"""The declarations of ``ablate run``, ``reproduce`` and ``tune``: the commands that train.

:mod:`harness.cli.run` runs them.
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from harness.bounds import INT_MAX
from harness.cli import options as o
from harness.hints import DEFAULT_RESULTS
from harness.tuned import TUNED

Executor = o.choices("Executor", "local", "ray", "slurm")


def run(
    name: o.NameArg,
    overrides: o.OverridesArg = None,
    profile: o.ProfileOpt = None,
    results_dir: o.ResultsOpt = DEFAULT_RESULTS,
    workers: o.WorkersOpt = None,
    threads: o.ThreadsOpt = 1,
    wandb: o.WandbOpt = o.WandbMode.auto,
    tuned: Annotated[
        bool,
        typer.Option(
            "--tuned", help=f"each variant at its study's best parameters (ablate tune); stored as profile P{TUNED}"
        ),
    ] = False,
    storage: o.StorageOpt = None,
    executor: Annotated[
        Executor,
        typer.Option(help="local: this machine (--workers); ray: a Ray cluster; slurm: SLURM jobs through submitit"),
    ] = Executor.local,
    address: Annotated[
        Optional[str],
        typer.Option(help="Ray cluster to connect to (auto, HOST:PORT, ray://HOST:10001); default: a local instance"),
    ] = None,
    gpus_per_run: Annotated[
        Optional[int],
        typer.Option(help="GPUs per run; default 1 when GPUs are visible (one worker per GPU), 0: CPU only"),
    ] = None,
    devices: Annotated[str, typer.Option(help="Lightning devices for one run (e.g. 2, with --strategy ddp)")] = "1",
    strategy: Annotated[str, typer.Option(help="Lightning strategy for one run")] = "auto",
    resume: Annotated[
        bool, typer.Option("--resume/--no-resume", help="continue interrupted runs from their last checkpoint")
    ] = True,
    keep_checkpoints: Annotated[
        bool, typer.Option("--keep-checkpoints", help="keep checkpoints of finished runs")
    ] = False,
    checkpoint_every: Annotated[
        float,
        typer.Option(help="seconds between two checkpoints of a run, written at validation passes (0: at every pass)"),
    ] = 120.0,
    run_timeout: o.RunTimeoutOpt = None,
    retry: Annotated[
        Optional[str], typer.Option(help="also rerun finished runs with these statuses, e.g. failed,diverged,timeout")
    ] = None,
    claim_timeout: Annotated[
        float,
        typer.Option(help="seconds without a heartbeat after which another process's claim on a run is taken over"),
    ] = 600.0,
    slurm_partition: Annotated[Optional[str], typer.Option(help="SLURM partition (--executor slurm)")] = None,
    slurm_time: Annotated[
        Optional[int], typer.Option(min=1, max=INT_MAX, help="SLURM time limit per run, minutes (default 60)")
    ] = None,
    submitit_cluster: Annotated[
        str, typer.Option(help="slurm; or local / debug: the same submitit jobs without SLURM")
    ] = "slurm",
    plugin: o.PluginOpt = None,
) -> None:
    """Train every run of the grid not yet in the store, then print the comparison table."""
    from harness.cli import run as run_cmd
    from harness.config import RunOptions
    from harness.execution.launch import Launch
    from harness.execution.local import Engine

    launch = Launch(
        options=RunOptions(
            resume=resume,
            keep_checkpoints=keep_checkpoints,
            checkpoint_every=checkpoint_every,
            run_timeout=run_timeout,
            claim_timeout=claim_timeout,
            devices=int(devices) if devices.isdigit() else devices,
            strategy=strategy,
        ),
        engine=Engine(
            executor.value, address=address, partition=slurm_partition, time_min=slurm_time, cluster=submitit_cluster
        ),
        gpus_per_run=gpus_per_run,
        retry=retry,
    )
    o.guard(
        run_cmd.run,
        name,
        profile,
        overrides or [],
        results_dir,
        workers=workers or None,
        threads=threads,
        wandb=o.wandb_mode(wandb),
        tuned=tuned,
        storage=storage,
        launch=launch,
        plugins=plugin or [],
        on_interrupt=o.INTERRUPTED_RUNS,
    )


def reproduce(
    rid: Annotated[
        str | None,
        typer.Argument(metavar="ID", help="one entry of harness/experiment/reproductions.yaml (default: every one)"),
    ] = None,
    results_dir: o.ResultsOpt = DEFAULT_RESULTS,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="list the grids and the runs missing; run nothing")
    ] = False,
    workers: o.WorkersOpt = None,
    threads: o.ThreadsOpt = 1,
    wandb: o.WandbOpt = o.WandbMode.auto,
    run_timeout: o.RunTimeoutOpt = None,
    plugin: o.PluginOpt = None,
) -> None:
    """Positive controls: run what the published results of harness/experiment/reproductions.yaml need.

    Run them as `ablate run` does, and print pass / fail / inconclusive per entry.
    """
    from harness.cli import run as run_cmd
    from harness.config import RunOptions
    from harness.execution.launch import Launch

    o.guard(
        run_cmd.reproduce,
        rid,
        results_dir,
        dry_run=dry_run,
        workers=workers,
        threads=threads,
        wandb=o.wandb_mode(wandb),
        launch=Launch(options=RunOptions(run_timeout=run_timeout)),
        plugins=plugin or [],
        on_interrupt=o.INTERRUPTED_RUNS,
    )


Pruner = o.choices("Pruner", "median", "hyperband", "none")


def tune(
    name: o.NameArg,
    overrides: o.OverridesArg = None,
    profile: o.ProfileOpt = None,
    trials: Annotated[
        int,
        typer.Option(
            min=1, max=INT_MAX, help="finished trials (complete + pruned + failed; not one stopped by Ctrl-C) per study"
        ),
    ] = 20,
    variant: Annotated[
        Optional[list[str]], typer.Option(help="only variants with this axis value, e.g. position=rope (repeatable)")
    ] = None,
    task: Annotated[Optional[list[str]], typer.Option(help="only this task (repeatable)")] = None,
    storage: o.StorageOpt = None,
    results_dir: o.ResultsOpt = DEFAULT_RESULTS,
    pruner: Annotated[Pruner, typer.Option(help="Optuna pruner on the validation metric at L")] = Pruner.median,
    threads: Annotated[int, typer.Option(min=1, max=INT_MAX, help="torch threads for this worker")] = 1,
    heartbeat: Annotated[
        Optional[int],
        typer.Option(
            min=1, max=INT_MAX, help="seconds between heartbeats; a trial silent 3x as long is failed (default 10)"
        ),
    ] = None,
    plugin: o.PluginOpt = None,
) -> None:
    """Optuna search per (task, variant), resumable; run several at once on one --storage for many workers."""
    from harness.cli import run as run_cmd

    o.guard(
        run_cmd.tune,
        name,
        profile,
        overrides or [],
        results_dir,
        trials=trials,
        tasks=task or None,
        variants=variant or None,
        storage=storage,
        pruner=pruner.value,
        threads=threads,
        heartbeat=heartbeat,
        plugins=plugin or [],
        on_interrupt=(
            "interrupted: finished trials are in the storage (the interrupted one is not counted); run the "
            "same command again to continue"
        ),
    )
