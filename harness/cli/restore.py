"""``ablate restore`` and ``ablate sync``: the run store from reports' data files, and its offline W&B runs to W&B.

``ablate restore``: a report's data files back into the run store, one line a file, then what to run next; the files
are checked before anything is written (harness.store.archive). ``ablate sync``: the offline W&B runs of the store
uploaded (:mod:`harness.training.wandb_upload`).
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer
from rich.markup import escape

from harness.cli import options as o
from harness.cli import output
from harness.encode import count
from harness.errors import AblateError
from harness.hints import DEFAULT_RESULTS, command, results_option
from harness.training import wandb_upload
from harness.tuned import TUNED

if TYPE_CHECKING:
    from harness.store import archive


@o.guard(
    "interrupted: the runs restored so far are in the store; the same command again restores the rest (a run folder "
    "left without record.json is completed)"
)
def restore_cmd(
    files: Annotated[
        Optional[list[Path]],
        typer.Argument(
            help="reports' data files (reports/data/NAME[.PROFILE].tar.gz), or a folder of them: reports/data"
        ),
    ] = None,
    results_dir: o.ResultsOpt = DEFAULT_RESULTS,
) -> int:
    """Rebuild the run store from reports' data files.

    Their runs, validation histories and tuned runs become finished runs again, with the studies' summaries and bench
    files they hold (not checkpoints, logger folders or the Optuna studies); runs already in the store are kept. Then
    `ablate report --all` makes every report and the index, and `ablate run NAME` trains only the runs the store lacks.
    """
    # exit 1 when a run already in the store differs from the file's (kept); every file is checked before any is
    # restored (a refused file: nothing written)
    from harness.experiment.metrics import of_machine
    from harness.report.source import plan  # the statistics under it: pandas, scipy and statsmodels
    from harness.report.tuning import copy_figures
    from harness.store import archive

    if not files:
        raise AblateError("name the data files to restore, e.g. `ablate restore reports/data`")
    output.check_results_readable(results_dir)
    todo = plan(files)
    for why in dict.fromkeys(why for _, why in todo.skipped):
        paths = [str(p) for p, w in todo.skipped if w == why]
        shown = ", ".join(paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
        output.console.print(f"skipped {escape(shown)} ({why})")
    done: list[archive.Restored] = []
    try:
        for path, arc, studies, controls in todo.files:
            done.append(d := archive.unpack(arc, results_dir, of_machine))
            d.controls = controls
            if studies is not None and d.studies is not None:  # from reports/ for reports/data/FILE
                d.missing_figures = copy_figures(studies, path.parent.parent, d.studies.parent)
            output.console.print(_line(d))
    except OSError as exc:
        raise AblateError(
            f"cannot write the store under --results-dir {results_dir} ({exc.strerror or exc}); what was "
            "written before it stays (the same command again completes the rest); pass a folder you can "
            "write to"
        ) from None
    if bench := sorted({b for d in done for b in d.bench}):
        output.plain(f"bench files into {results_dir / 'bench'}: {', '.join(bench)}")
    differ = sum(len(d.differ) for d in done)
    _missing_controls(done, results_dir)
    _next_steps(done, results_dir, differ)
    return 1 if differ else 0


def _missing_controls(done: list[archive.Restored], results: Path) -> None:
    """The controls the restored claims rest on whose grids the store lacks (their verdicts wait)."""
    from harness.analysis.claims import NEGATIVE
    from harness.experiment.claims import load_registry

    entries = {e.id: e for e in load_registry()}
    missing = []
    for kind, gid, profile in sorted({g for d in done for g in d.controls}, key=str):
        if kind == NEGATIVE:
            grids = {(gid, profile or "confirm")}
        else:
            grids = {(c.ablation, c.profile) for c in entries[gid].comparisons} if gid in entries else set()
        if lacking := sorted(f"{a} / {p}" for a, p in grids if not (results / a / p).is_dir()):
            missing.append(f"{kind} {gid} ({', '.join(lacking)})")
    if missing:
        output.console.print(
            "[yellow]the claims of these reports rest on controls whose grids the store lacks: "
            f"{escape('; '.join(missing))}; restore their data files too, or their reports withhold those "
            "verdicts[/]"
        )


def _line(d: archive.Restored) -> str:
    parts = [
        f"{count(len(d.written), 'run')} written"
        + (f", {d.tuned} of them tuned runs" if d.tuned else "")
        + (f" ({d.histories} with a validation history)" if d.histories else ""),
        f"{len(d.replaced)} of them in place of an unreadable record.json" if d.replaced else "",
        f"{count(len(d.kept), 'run')} already in the store, kept" if d.kept else "",
        f"{len(d.differ)} of them differ{'s' if len(d.differ) == 1 else ''} from the file's (status or "
        f"metrics), e.g. {d.differ[0][0]} ({d.differ[0][1]}): the store's is kept"
        if d.differ
        else "",
        f"{count(d.problems, 'unreadable store entry')} it lists not restored (not runs)" if d.problems else "",
        f"the lost validation history of {count(d.refilled, 'kept run')} written again" if d.refilled else "",
        "the summary of its Optuna studies, which the report shows (not the studies: `run --tuned` needs "
        "`ablate tune` again)"
        if d.studies is not None
        else "",
    ]
    missing = d.missing_figures
    figures = f"; {count(len(missing), 'figure')} of the studies not found, e.g. {missing[0]}" if missing else ""
    return escape(f"{d.path}: {d.ablation} / {d.profile}: " + "; ".join(p for p in parts if p) + figures)


def _next_steps(done: list[archive.Restored], results: Path, differ: int) -> None:
    from harness.experiment import ablation as ablation_mod

    known = ablation_mod.available()  # a scan of the ablations folder: once
    registered = [d for d in done if d.ablation in known]
    lines = []
    if registered:
        d = registered[0]
        lines += [
            f"`{shlex.join(['ablate', 'report', '--all', *results_option(results)])}` makes every report "
            "and the index from them",
            f"`{command('run', d.ablation, d.profile.removesuffix(TUNED), results=results)}` trains only "
            "the runs the store lacks",
        ]
    if own := next((d for d in done if d not in registered), None):
        report = command("report", f"PATH/TO/{own.ablation}.yaml", own.profile, results=results)
        lines.append(f"{own.ablation} is not a registered ablation: `{report}` reports it")
    head = f"{count(sum(len(d.written) for d in done), 'run')} restored into {results}"
    if differ:
        head += f" ({count(differ, 'run')} kept that differ{'s' if differ == 1 else ''} from the files: exit 1)"
    output.plain(head + "; " + "; ".join(lines))


@o.guard()
def sync_cmd(
    results_dir: o.ResultsOpt = DEFAULT_RESULTS,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="list the offline runs that wait; upload nothing")] = False,
) -> int:
    """Upload the offline W&B runs of the store (`wandb sync`).

    Needs W&B credentials (WANDB_API_KEY or `wandb login`) and network.
    """
    return wandb_upload.sync(results_dir, dry_run=dry_run, echo=typer.echo)
