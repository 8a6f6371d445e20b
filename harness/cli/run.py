"""The commands that train: ``ablate run``, ``ablate reproduce`` and ``ablate tune``.

``ablate run``: every unfinished run of a grid, with one progress line per finished run and the progress of the runs
in flight (:class:`harness.cli.progress.GridProgress`), then the comparison, whose statistics, scipy, statsmodels and
pandas, are imported only then: a process pool's parent never needs them before. ``ablate reproduce``: the positive
controls, published results reproduced at this scale. ``ablate tune``: one Optuna study per (task, variant) topped up,
then a summary.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal, Optional

import typer
from rich.markup import escape
from rich.table import Table as RichTable

from harness.bounds import INT_MAX
from harness.cli import options as o
from harness.cli import output
from harness.cli.compare import closing_lines, print_tables
from harness.encode import text
from harness.errors import RunStatus
from harness.execution.gpus import check_threads, estimate_seconds
from harness.hints import DEFAULT_RESULTS, command
from harness.run_options import RunOptions
from harness.tuned import TUNED, tuned_profile

if TYPE_CHECKING:
    from harness.experiment.grid import RunSpec

INTERRUPTED_RUNS = "interrupted: finished runs are in the store; run the same command again to continue"
Executor = Literal["local", "ray", "slurm"]


@o.guard(INTERRUPTED_RUNS)
def run_cmd(
    name: o.NameArg,
    overrides: o.OverridesArg = None,
    profile: o.ProfileOpt = None,
    results_dir: o.ResultsOpt = DEFAULT_RESULTS,
    workers: o.WorkersOpt = None,
    threads: o.ThreadsOpt = 1,
    wandb: o.WandbOpt = "auto",
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
    ] = "local",
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
    lease_timeout: Annotated[
        float,
        typer.Option(help="seconds without a heartbeat after which another process's lease on a run is taken over"),
    ] = 600.0,
    slurm_partition: Annotated[Optional[str], typer.Option(help="SLURM partition (--executor slurm)")] = None,
    slurm_time: Annotated[
        Optional[int], typer.Option(min=1, max=INT_MAX, help="SLURM time limit per run, minutes (default 60)")
    ] = None,
    submitit_cluster: Annotated[
        str, typer.Option(help="slurm; or local / debug: the same submitit jobs without SLURM")
    ] = "slurm",
    plugin: o.PluginOpt = None,
) -> int:
    """Train every run of the grid not yet in the store, then print the comparison table."""
    options = RunOptions(
        resume=resume,
        keep_checkpoints=keep_checkpoints,
        checkpoint_every=checkpoint_every,
        run_timeout=run_timeout,
        lease_timeout=lease_timeout,
        retry=retry,
        devices=int(devices) if devices.isdigit() else devices,
        strategy=strategy,
        executor=executor,
        address=address,
        gpus_per_run=gpus_per_run,
        partition=slurm_partition,
        slurm_time=slurm_time,
        cluster=submitit_cluster,
    )
    return run(
        name,
        profile,
        overrides or [],
        results_dir,
        workers=workers or None,
        threads=threads,
        wandb=o.wandb_mode(wandb),
        tuned=tuned,
        storage=storage,
        options=options,
    )


def run(
    name: str,
    profile: str | None,
    overrides: list[str],
    results: Path,
    *,
    workers: int | None = None,
    threads: int = 1,
    wandb: str = "off",
    tuned: bool = False,
    storage: str | None = None,
    options: RunOptions = RunOptions(),
) -> int:
    """Run every unfinished run of the grid; print progress and the comparison.

    Returns 1 when some runs failed, else 0. ``tuned``: at each study's best parameters, stored under
    ``<profile>+tuned`` (:mod:`harness.tune.studies`); a sequential profile runs its next look
    (:mod:`harness.analysis.looks`).
    """
    from harness.cli.grid_lines import describe, outcome_lines, progress_note
    from harness.cli.progress import GridProgress, clock
    from harness.execution import attempt, local
    from harness.execution.launch import check_options, place_runs, select
    from harness.experiment import ablation as ablation_mod
    from harness.store.runs import load_record, run_dir, scan
    from harness.tune.studies import tuned_specs

    abl = ablation_mod.load(name)

    def will_run(spec: RunSpec) -> bool:  # an ok record never runs again (--retry takes failures only)
        rec = load_record(run_dir(results, spec.ablation, spec.profile, spec.run_id))[0]
        return rec is None or rec.status != RunStatus.OK

    sel = output.selection(
        abl, profile, overrides, results, storage, typed=name, check_data=True, will_run=None if tuned else will_run
    )
    prof_name, specs = sel.profile, list(sel.specs)
    if sequential := sel.settings.sequential is not None:
        from harness.analysis import looks  # scipy: the decisions so far choose the runs

        looks.design_of(sel)  # a first look that could decide nothing is refused
    retry = check_options(options, results, workers, threads)
    output.check_results_dir(results, create=not tuned)  # --tuned with no study must leave nothing behind
    output.check_wandb(wandb)
    if tuned:  # a tuned grid has no looks: every seed, decided as a fixed design (docs/sequential.md)
        specs = tuned_specs(sel, specs, output.data_dir())
        output.check_results_dir(results)
        if sequential:
            output.console.print(
                f"{abl.name} / {prof_name}: tuned runs of a group-sequential profile run every seed "
                f"({len(sel.settings.seeds)}) and are decided as a fixed design"
            )
    elif sequential:
        st = looks.state(sel, scan(results, abl.name, prof_name).records if results.is_dir() else [])
        output.console.print(f"{abl.name} / {prof_name}: sequential design, {st.summary()}")
        specs = looks.next_specs(sel, st)
    targets = None if tuned else {task: entry.target for task, entry in abl.tasks.items()}
    chosen = select(options, specs, results, retry, targets=targets)
    todo, retried = chosen.todo, chosen.retry
    placement = place_runs(options, workers, len(todo), threads, [estimate_seconds(s.config, threads) for s in todo])
    again = f" ({len(retried)} again: --retry {','.join(retry)})" if retried else ""
    sources = dict.fromkeys((rec.reused_from or "").rsplit("/", 1)[0] for rec in chosen.reused)  # e.g. NAME/confirm
    copied = f" ({len(chosen.reused)} copied from identical runs of {', '.join(sources)})" if sources else ""
    output.console.print(
        f"{abl.name} / {tuned_profile(prof_name) if tuned else prof_name}: {len(specs)} runs, "
        f"{len(specs) - len(todo) + len(retried)} already in {results}{copied}, {len(todo)} to run{again}"
        + (f" ({describe(options, placement, threads)}, W&B {wandb})" if todo else "")  # no pool, no W&B run: none
    )

    # the columns of a progress line as wide as this grid's longest task and variant: 80 columns hold it
    task_w = max((len(s.task) for s in todo), default=0)
    variant_w = max((len(s.variant_label) for s in todo), default=0)
    with GridProgress(output.console, todo, results, placement.workers) as progress:

        def on_done(rec: attempt.Progress, done: int, total: int, eta: float) -> None:
            metric = abl.tasks[rec.task].primary.metric
            value = (rec.metrics or {}).get(metric)
            shown = f"{metric}={text(value, '.4f')}" if isinstance(value, float) else rec.reason or ""
            output.console.print(
                f"\\[{done:>{len(str(total))}}/{total}] {rec.status:8s} {rec.task:{task_w}s} "
                f"{rec.variant_label:{variant_w}s} "
                f"seed {rec.seed} {shown} ({rec.wall_time_s or 0:.0f}s; ETA {clock(eta)}){progress_note(rec)}"
            )
            progress.finished(rec.run_id)

        records = todo and local.run_grid(  # nothing to run: no pool, no torch
            todo,
            results,
            abl,
            workers=placement.workers,
            threads=threads,
            wandb_mode=wandb,
            data_dir=output.data_dir(),
            on_done=on_done,
            options=dataclasses.replace(options, retry_attempts=retried),
            slots=placement.slots,
        )
    print_tables(sel, results, tuned=tuned, brief=True)
    for line in closing_lines(abl, prof_name, results, sel):
        output.plain(line)
    lines, code = outcome_lines([*chosen.failed_before, *records], sel, tuned)
    for line in lines:  # last: runs that did not finish come before any next step
        output.console.print(line)
    return code


@o.guard(INTERRUPTED_RUNS)
def reproduce_cmd(
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
    wandb: o.WandbOpt = "auto",
    run_timeout: o.RunTimeoutOpt = None,
    plugin: o.PluginOpt = None,
) -> int:
    """Positive controls: run what the published results of harness/experiment/reproductions.yaml need.

    Run them as `ablate run` does, and print pass / fail / inconclusive per entry.
    """
    # exit 1 when some run failed, else 0: a failed reproduction is a finding, not an error
    from harness.analysis import controls  # the statistics (scipy): the summary of each entry
    from harness.execution.launch import check_options
    from harness.report.controls import summary_lines

    options = RunOptions(run_timeout=run_timeout)
    mode = o.wandb_mode(wandb)
    check_options(options, results_dir, workers, threads)
    output.check_wandb(mode)  # the dry run too: its runs would all fail on wandb.init
    output.check_results_readable(results_dir)  # without dry_run, the runner also checks it is writable
    entries = controls.load_checked(rid)
    grids = controls.grids(entries, results_dir)
    for ablation, profile, planned, missing in grids:
        hint = f" (`{command('run', ablation, profile, results=results_dir)}`)" if missing else ""
        output.plain(f"{ablation} / {profile}: {planned} runs, {missing} missing{hint}")
    codes = [
        run(ablation, profile, [], results_dir, workers=workers, threads=threads, wandb=mode, options=options)
        for ablation, profile, _, missing in grids
        if missing and not dry_run
    ]
    if dry_run and (missing := sum(g[3] for g in grids)):
        output.plain(f"dry run: {missing} runs would run; nothing ran")
    for line in summary_lines([controls.evaluate(e, results_dir) for e in entries]):
        output.plain(line)
    return max(codes, default=0)


Pruner = Literal["median", "hyperband", "none"]


@o.guard(
    "interrupted: finished trials are in the storage (the interrupted one is not counted); run the same command "
    "again to continue"
)
def tune(
    name: o.NameArg,
    profile: o.ProfileOpt = None,
    overrides: o.OverridesArg = None,
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
    results: o.ResultsOpt = DEFAULT_RESULTS,
    pruner: Annotated[Pruner, typer.Option(help="Optuna pruner on the validation metric at L")] = "median",
    threads: Annotated[int, typer.Option(min=1, max=INT_MAX, help="torch threads for this worker")] = 1,
    heartbeat: Annotated[
        Optional[int],
        typer.Option(
            min=1, max=INT_MAX, help="seconds between heartbeats; a trial silent 3x as long is failed (default 10)"
        ),
    ] = None,
    plugin: o.PluginOpt = None,
) -> int:
    """Optuna search per (task, variant), resumable; run several at once on one --storage for many workers."""
    # each study topped up to ``trials`` finished trials, then a summary; exit 1 when some study has no complete trial
    # (its line says why)
    import torch

    from harness.experiment import ablation as ablation_mod
    from harness.tune import search
    from harness.tune.studies import TRIAL_HEARTBEAT_S, plan_studies

    check_threads(threads)
    abl, overrides = ablation_mod.load(name), overrides or []
    prof_name, plans = plan_studies(abl, profile, overrides, task or None, variant or None, output.data_dir())
    if storage is None:  # the default storage lives in the results directory
        output.check_results_dir(results)
    torch.set_num_threads(threads)
    done = search.tune(
        abl,
        prof_name,
        plans,
        results,
        trials=trials,
        overrides=overrides,
        storage=storage,
        data_dir=output.data_dir(),
        pruner=pruner,
        heartbeat=heartbeat or TRIAL_HEARTBEAT_S,
        echo=output.plain,
    )
    columns = ("study", "complete", "pruned", "failed (diverged)", "best value", "best parameters")
    table = RichTable(*columns, title="tuning (objective on the validation split)")
    for study_plan, c in done:
        params = (f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in (c["best_params"] or {}).items())
        counts = (str(c["complete"]), str(c["pruned"]), f"{c['failed']} ({c['diverged']})")
        table.add_row(study_plan.name, *counts, text(c["best_value"]), ", ".join(params))  # –: none, ∞: infinite
    if done:
        output.console.print(table)
    empty = [(study_plan.name, c) for study_plan, c in done if c["best_value"] is None]
    rerun = command("run", name, prof_name, "--tuned", results=results, overrides=tuple(overrides), storage=storage)
    for study_name, c in empty:
        output.console.print(
            f"[red]no complete trial[/] in {study_name}: {c['pruned']} pruned, {c['failed']} failed"
            + (f" (last failure: {c['last_reason']})" if c["last_reason"] else "")
            + f"; `{escape(rerun)}` will refuse this variant"
        )
    return 1 if empty else 0
