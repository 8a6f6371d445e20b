"""The declarations of ``ablate status``, ``compare``, ``report``, ``plan``, ``restore`` and ``sync``.

They are the commands that read the store (:mod:`harness.cli.inspect`, :mod:`harness.cli.compare`,
:mod:`harness.cli.report` and :mod:`harness.training.wandb_upload` run them).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from harness.cli import options as o
from harness.hints import DEFAULT_REPORTS, DEFAULT_RESULTS


def status(
    name: o.NameArg,
    overrides: o.MadeWithArg = None,
    profile: o.ProfileOpt = None,
    results_dir: o.ResultsOpt = DEFAULT_RESULTS,
    plugin: o.PluginOpt = None,
) -> None:
    """Done / failed / diverged / pending, per variant and task."""
    from harness.cli import inspect as inspect_cmd

    o.guard(inspect_cmd.status, name, profile, results_dir, overrides or [], plugins=plugin or [])


def compare(
    name: o.NameArg,
    overrides: o.MadeWithArg = None,
    profile: o.ProfileOpt = None,
    results_dir: o.ResultsOpt = DEFAULT_RESULTS,
    metric: Annotated[Optional[str], typer.Option(help="one metric (default: every primary)")] = None,
    fmt: o.FormatOpt = o.Format.table,
    tuned: Annotated[bool, typer.Option("--tuned", help="the runs of `ablate run --tuned`")] = False,
    source: o.FromOpt = None,
    plugin: o.PluginOpt = None,
) -> None:
    """The statistical comparison table, from the store (or a report's data file, --from)."""
    from harness.cli import compare as compare_cmd

    o.guard(
        compare_cmd.compare,
        name,
        profile,
        results_dir,
        metric=metric,
        fmt=fmt.value,
        tuned=tuned,
        overrides=overrides or [],
        source=source,
        plugins=plugin or [],
    )


def report(
    name: Annotated[Optional[str], typer.Argument(help="ablation name or YAML path (not with --all)")] = None,
    overrides: o.MadeWithArg = None,
    profile: o.ProfileOpt = None,
    results_dir: o.ResultsOpt = DEFAULT_RESULTS,
    out: Annotated[
        Path,
        typer.Option(
            parser=o.given("--out", "pass a folder, or leave the option out for reports"),
            help="folder for the markdown and figures",
        ),
    ] = DEFAULT_REPORTS,
    storage: o.StorageOpt = None,
    every: Annotated[
        bool,
        typer.Option("--all", help="every registered ablation, each profile with runs, and OUT/README.md, their index"),
    ] = False,
    wandb: Annotated[
        o.WandbMode,
        typer.Option(
            help="the summary run (comparison tables, figures, verdicts); auto: online when W&B credentials are set "
            "(WANDB_API_KEY or `wandb login`), else off (offline writes it into the store, for `ablate sync`)"
        ),
    ] = o.WandbMode.auto,
    source: o.FromOpt = None,
    plugin: o.PluginOpt = None,
) -> None:
    """Write reports/NAME.md and its PNG figures.

    NAME.PROFILE.md for a non-default profile; NAME[.PROFILE].with-HASH.md for runs made with key=value overrides;
    --all: every registered ablation, and reports/README.md, their index.
    """
    from harness.cli import report as report_cmd

    common = {"storage": storage, "source": source, "plugins": plugin or [], "on_interrupt": o.INTERRUPTED_REPORT}
    # --all and --from log no W&B run; nor, unless asked (--wandb offline), does a report without credentials:
    # its offline summary run would be written into the store it reads
    mode = o.wandb_mode(wandb, logs=not every and source is None, offline=False)
    if every:
        o.guard(report_cmd.report_all, results_dir, out, name=name, profile=profile, wandb=mode, **common)
    else:
        o.guard(report_cmd.report, name, profile, results_dir, out, overrides=overrides or [], wandb=mode, **common)


def plan_cmd(
    name: o.NameArg,
    overrides: o.MadeWithArg = None,
    profile: Annotated[
        Optional[str],
        typer.Option("--profile", "-p", help="the confirmatory profile to plan (default: the ablation's default)"),
    ] = None,
    pilot: Annotated[
        Optional[str],
        typer.Option(
            "--from", help="the profile whose runs give the spread (default: the first pilot profile with runs)"
        ),
    ] = None,
    results_dir: o.ResultsOpt = DEFAULT_RESULTS,
    power: Annotated[float, typer.Option(help="target power of each primary comparison")] = 0.8,
    alpha: Annotated[
        float, typer.Option(help="family-wise level of the primary comparisons (divided by their number)")
    ] = 0.05,
    fmt: o.FormatOpt = o.Format.table,
    plugin: o.PluginOpt = None,
) -> None:
    """Seeds the confirmatory profile needs to detect each task's smallest effect of interest, from a pilot's spread."""
    from harness.cli import compare as compare_cmd

    o.guard(
        compare_cmd.plan_seeds,
        name,
        profile,
        pilot,
        results_dir,
        power=power,
        alpha=alpha,
        fmt=fmt.value,
        overrides=overrides or [],
        plugins=plugin or [],
    )


def restore(
    files: Annotated[
        Optional[list[Path]],
        typer.Argument(
            help="reports' data files (reports/data/NAME[.PROFILE].tar.gz), or a folder of them: reports/data"
        ),
    ] = None,
    results_dir: o.ResultsOpt = DEFAULT_RESULTS,
) -> None:
    """Rebuild the run store from reports' data files.

    Their runs, validation histories and tuned runs become finished runs again, with the studies' summaries and bench
    files they hold (not checkpoints, logger folders or the Optuna studies); runs already in the store are kept. Then
    `ablate report --all` makes every report and the index, and `ablate run NAME` trains only the runs the store lacks.
    """
    from harness.cli.restore import restore as restore_files

    o.guard(
        restore_files,
        files or [],
        results_dir,
        on_interrupt=(
            "interrupted: the runs restored so far are in the store; the same command again restores the "
            "rest (a run folder left without record.json is completed)"
        ),
    )


def sync(
    results_dir: o.ResultsOpt = DEFAULT_RESULTS,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="list the offline runs that wait; upload nothing")] = False,
) -> None:
    """Upload the offline W&B runs of the store (`wandb sync`).

    Needs W&B credentials (WANDB_API_KEY or `wandb login`) and network.
    """
    from harness.training import wandb_upload

    o.guard(wandb_upload.sync, results_dir, dry_run=dry_run, echo=typer.echo)
