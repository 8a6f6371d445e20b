"""``ablate restore``: a run store rebuilt from reports' data files (:mod:`harness.report.restore`),
so that a clone of the repository, without the store the reports were made from, can regenerate
every report, the reproductions page and the index (``ablate report --all``), and finish or
extend a grid (``ablate run NAME`` trains only the runs the store lacks)."""

from __future__ import annotations

from pathlib import Path

from harness.cli import output
from harness.encode import count
from harness.errors import AblateError
from harness.report.restore import restore as restore_file
from harness.report.tuning_data import studies_path


def restore(files: list[Path], results: Path, declaration: str | None = None) -> int:
    """Restore each data file into ``results``; one line per file, then what to run next.
    Returns the exit status: 0, or 1 when a run already in the store differs from the file's.

    Raises:
        AblateError: no file; a file :func:`harness.report.restore.restore` refuses (the files before it
            are restored, and said).
    """
    if not files:
        raise AblateError("name the data files to restore, e.g. `ablate restore reports/data/*.csv.gz`")
    output.check_results_readable(results)
    differ = 0
    names: list[str] = []
    for path in files:
        done = restore_file(path, results, declaration, output.data_dir())
        parts = [f"{count(len(done.written), 'run')} written ({done.histories} with a validation history)"]
        if done.kept:
            parts.append(f"{count(len(done.kept), 'run')} already in the store, kept")
        if done.differ:
            parts.append(
                f"[red]{len(done.differ)} of them differ from the file's (metrics or status), e.g. {done.differ[0]}[/]"
            )
        if done.problems:
            parts.append(f"{count(done.problems, 'unreadable store entry')} it lists not restored (not runs)")
        if studies_path(Path(path)).is_file():
            parts.append("its Optuna studies are not (their summary feeds `ablate report --from` only)")
        output.console.print(f"{path}: {done.ablation} / {done.profile}: " + "; ".join(parts))
        differ += len(done.differ)
        names.append(f"{declaration or done.ablation} --profile {done.profile}")
    flag = "" if Path(results) == Path("results") else f" --results-dir {results}"
    output.console.print(
        f"the store {results} holds them as finished runs: `ablate report --all{flag}` regenerates every report "
        f"and the index; `ablate run {names[0]}{flag}` trains only the runs it lacks"
    )
    return 1 if differ else 0
