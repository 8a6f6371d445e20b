"""``ablate report``: reports from the store or a data file.

One ablation's markdown report (and its W&B summary run), or with ``--all`` every registered ablation's reports and
their index (docs/reports.md), from the store or a data file (``--from``): the options checked here, the report
computed and written by :mod:`harness.report.build`. The statistics and the report's sections (pandas, scipy,
statsmodels) are imported as a report runs, never with this module.
"""

from __future__ import annotations

import contextlib
import shlex
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer
from rich.markup import escape

from harness.cli import options as o
from harness.cli import output
from harness.errors import AblateError
from harness.hints import DEFAULT_REPORTS, DEFAULT_RESULTS, results_option
from harness.training.wandb_upload import log_summary_run, summary_dir
from harness.tune.storage import open_storage, sqlite_exists
from harness.tuned import tuned_profile

if TYPE_CHECKING:
    from harness.analysis.comparisons import Analysis
    from harness.experiment.selection import Selection
    from harness.report.controls import Controls


@o.guard(
    "interrupted: the report may be incomplete and no run in the store changed; run the same command again to write it"
)
def report(
    name: Annotated[Optional[str], typer.Argument(help="ablation name or YAML path (not with --all)")] = None,
    profile: o.ProfileOpt = None,
    results: o.ResultsOpt = DEFAULT_RESULTS,
    out: Annotated[
        Path,
        typer.Option(
            parser=o.given("--out", "pass a folder, or leave the option out for reports"),
            help="folder for the markdown and figures",
        ),
    ] = DEFAULT_REPORTS,
    storage: o.StorageOpt = None,
    overrides: o.MadeWithArg = None,
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
    ] = "auto",
    source: o.FromOpt = None,
    plugin: o.PluginOpt = None,
) -> Path:
    """Write reports/NAME.md and its PNG figures.

    NAME.PROFILE.md for a non-default profile; NAME[.PROFILE].with-HASH.md for runs made with key=value overrides;
    --all: every registered ablation, and reports/README.md, their index.
    """
    # returns the report's path (--all: the index's). --wandb: also the W&B summary run (a failure is a warning);
    # --from: a data file read instead of the store (no data file nor W&B run written; the studies' figures copied
    # from the report folder the file lies in). --all and --from log no W&B run; nor, unless asked (--wandb
    # offline), does a report without credentials: its offline summary run would be written into the store it reads
    from harness.experiment import ablation as ablation_mod
    from harness.report import build
    from harness.report.markdown import report_path
    from harness.report.source import load_source
    from harness.report.tuning import copy_figures
    from harness.store import archive

    wandb = o.wandb_mode(wandb, logs=not every and source is None, offline=False)
    if every:
        if name is not None:
            raise AblateError(
                f"--all reports every registered ablation; drop {name!r} (or drop --all to report only it)"
            )
        if profile is not None:
            raise AblateError("--all reports every profile with runs; drop --profile")
        if source is not None:
            raise AblateError("--from regenerates one report from its data file; drop --all (or --from)")
        if wandb != "off":
            raise AblateError("--all writes no W&B summary runs; log one with `ablate report NAME --wandb MODE`")
        return report_all(results, out, storage)
    if name is None:
        raise AblateError("name the ablation to report (`ablate report NAME`), or pass --all for every registered one")
    if source is not None and wandb != "off":
        raise AblateError(
            f"--from writes no W&B summary run (--wandb {wandb}): a data file is not a store; drop --wandb, "
            "or log one from the store with `ablate report NAME --wandb MODE`"
        )
    output.check_wandb(wandb)  # before the report, as `ablate run` refuses before its runs
    abl = ablation_mod.load(name)
    data = None
    if source is not None:
        data, sel = load_source(
            source, abl, profile, lambda prof: output.selection(abl, prof, overrides, storage=storage, typed=name)
        )
        results = data.store
    else:
        sel = output.selection(abl, profile, overrides, results, storage, typed=name)
        output.check_results_readable(results)
        output.check_store_exists(sel, data_file=archive.existing(report_path(abl, sel.profile, out, sel.overrides)))
        check_not_all_in_flight(sel)
    _check_out(out, "report and its figures", storage)
    controls = build.report_controls(abl, results, data)
    with _writing(out):
        path, result, _ = build.write_report(sel, results, out, controls, storage, data)
    output.console.print(f"wrote {path}")
    if data is not None and data.tuning is not None:
        for fig in copy_figures(data.tuning, Path(source).parent.parent, out):
            output.console.print(
                f"[yellow]warning: {escape(fig)} not found; the Tuning section links it all the same[/]"
            )
    if wandb != "off":  # never with --from (refused above)
        try:
            figures = sorted((Path(out) / "figures").glob(f"{path.stem}-*.png"))
            run_dir = log_summary(result, controls, figures, wandb, sel.overrides)
            output.console.print(f"W&B summary run ({wandb}): {run_dir}")
        except Exception as exc:  # noqa: BLE001 - the report is written; W&B is a mirror of it
            output.console.print(f"[yellow]warning: the W&B summary run was not logged: {type(exc).__name__}: {exc}[/]")
    return path


def check_not_all_in_flight(sel: Selection) -> None:
    """Raise AblateError when the store holds runs in flight but no finished run of the selection.

    Nor a finished run of its tuned profile: a report of them would be empty, and its data file one that ``restore``
    refuses.
    """
    from harness.execution.attempt import unfinished_state
    from harness.store.runs import scan

    results, name, profile = sel.results, sel.name, sel.profile
    if scan(results, name, profile).records or scan(results, name, tuned_profile(profile)).records:
        return
    try:
        folders = sorted(p for p in (results / name / profile).iterdir() if p.is_dir() and not p.name.startswith("."))
    except OSError:
        return
    running = [(p.name, state[1]) for p in folders if (state := unfinished_state(p))[0] == "running"]
    if running:
        raise AblateError(
            f"no run of {name} / {profile} in {results} has finished yet: {len(running)} in flight "
            f"(e.g. {running[0][0]}, {running[0][1]}); report them once they finish "
            f"(`{sel.command('status')}` shows their progress)"
        )


def log_summary(
    analysis: Analysis, controls: Controls, figures: list[Path], mode: str, overrides: Sequence[str] = ()
) -> Path:
    """Log the W&B summary run of a report (:func:`harness.report.build.summary`) with its ``figures``.

    For runs made with ``overrides``, it is in a folder of their own (as their report's file), so that it never
    replaces the declared grid's summary run.
    """
    from harness.report.build import summary

    run = summary(analysis, controls, overrides)
    folder = summary_dir(analysis.results, analysis.ablation.name, run.profile)
    if run.tag:
        folder = folder.with_name(f"{folder.name}.{run.tag}")
    group = f"{analysis.ablation.name}/{run.profile}"
    return log_summary_run(folder, group, run.config, run.tables, figures, run.claims, mode)


@contextlib.contextmanager
def _writing(out: Path) -> Iterator[None]:
    """An OS error while writing under ``--out`` (a full disk, no permission) as one line."""
    try:
        yield
    except OSError as exc:
        where = f" ({exc.filename})" if exc.filename else ""
        raise AblateError(
            f"cannot write the report under --out {out}: {exc.strerror or exc}{where}; pass a folder you can write to"
        ) from None


def _check_out(out: Path, what: str, storage: str | None) -> None:
    """Refuse, before any figure is written, a bad ``--out`` and an Optuna ``--storage`` that cannot be opened."""
    output.check_out(out, what)
    if storage is not None and sqlite_exists(storage):  # a SQLite file that does not exist: no tuning section
        open_storage(storage)


def report_all(results: Path, out: Path, storage: str | None = None) -> Path:
    """``ablate report --all``: every registered ablation's reports, the positive controls' page and their index.

    A report per profile with runs of its declared grid (:func:`harness.report.build.write_all`); the index is
    ``out/README.md``; returns the index's path.
    """
    from harness.experiment import ablation as ablation_mod
    from harness.report.build import write_all
    from harness.store import archive

    output.check_results_readable(results)
    _check_out(out, "reports and their figures", storage)
    if not any(
        (Path(results) / n).is_dir() and any(p.is_dir() for p in (Path(results) / n).iterdir())
        for n in ablation_mod.available()
    ):
        restore = ""
        if any((Path(out) / "data").glob(f"*{archive.SUFFIX}")):
            files = shlex.join(["ablate", "restore", str(Path(out) / "data"), *results_option(results)])
            restore = f"; or `{files}` to rebuild it from the data files of the reports in {out}"
        raise AblateError(
            f"no runs of any registered ablation in {results}; run "
            f"`{shlex.join(['ablate', 'run', 'NAME', *results_option(results)])}` first or pass the "
            f"--results-dir it wrote to{restore}"
        )
    with _writing(out):
        path = write_all(results, out, storage, output.plain)
    output.console.print(f"wrote {path}")
    return path
