"""``ablate restore``: a report's data files back into the run store, one line a file, then what to run next.

The files are checked before anything is written (harness.store.archive).
"""

from __future__ import annotations

import shlex
from pathlib import Path

from rich.markup import escape

from harness.analysis.claims import NEGATIVE
from harness.cli import output
from harness.encode import count
from harness.errors import AblateError
from harness.experiment import ablation as ablation_mod
from harness.experiment.claims import load_registry
from harness.hints import command, results_option
from harness.report.source import plan
from harness.report.tuning import copy_figures
from harness.store import archive
from harness.tuned import TUNED


def restore(files: list[Path], results: Path) -> int:
    """Check every data file, then restore each into ``results``, one line each, then what to run next.

    Returns 1 when a run already in the store differs from the file's (kept), else 0.

    Raises:
        AblateError: no file, a refused file (nothing written), a store that cannot be written.
    """
    if not files:
        raise AblateError("name the data files to restore, e.g. `ablate restore reports/data`")
    output.check_results_readable(results)
    todo = plan(files)
    for why in dict.fromkeys(why for _, why in todo.skipped):
        paths = [str(p) for p, w in todo.skipped if w == why]
        shown = ", ".join(paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
        output.console.print(f"skipped {escape(shown)} ({why})")
    done: list[archive.Restored] = []
    try:
        for path, arc, studies, guards in todo.files:
            done.append(d := archive.unpack(arc, results))
            d.guards = guards
            if studies is not None and d.studies is not None:  # from reports/ for reports/data/FILE
                d.missing_figures = copy_figures(studies, path.parent.parent, d.studies.parent)
            output.console.print(_line(d))
    except OSError as exc:
        raise AblateError(
            f"cannot write the store under --results-dir {results} ({exc.strerror or exc}); what was "
            "written before it stays (the same command again completes the rest); pass a folder you can "
            "write to"
        ) from None
    if bench := sorted({b for d in done for b in d.bench}):
        output.console.print(escape(f"bench files into {results / 'bench'}: {', '.join(bench)}"))
    differ = sum(len(d.differ) for d in done)
    _missing_controls(done, results)
    _next_steps(done, results, differ)
    return 1 if differ else 0


def _missing_controls(done: list[archive.Restored], results: Path) -> None:
    """The controls the restored claims rest on whose grids the store lacks (their verdicts wait)."""
    entries = {e.id: e for e in load_registry()}
    missing = []
    for kind, gid, profile in sorted({g for d in done for g in d.guards}, key=str):
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
    output.console.print(escape(head + "; " + "; ".join(lines)))
