"""``ablate report``: one ablation's markdown report (and its W&B summary run), or with ``--all``
every registered ablation's reports and their index."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from pathlib import Path

from rich.markup import escape

from harness.analysis.comparisons import analyse
from harness.analysis.guards import declared_guards, guards_of
from harness.cli import output
from harness.errors import AblateError
from harness.experiment import ablation as ablation_mod
from harness.report.guards import UNKNOWN
from harness.report.index import report_all as write_all
from harness.report.markdown import report_path, write_report
from harness.report.source import load_source
from harness.report.tuning import TuningInputs, tuned_analysis
from harness.report.tuning_data import copy_figures
from harness.report.wandb_summary import log_report
from harness.store import archive
from harness.tune.storage import open_storage, sqlite_exists


def report(
    name: str | None,
    profile: str | None,
    results: Path,
    out: Path,
    storage: str | None = None,
    overrides: list[str] | tuple[str, ...] = (),
    wandb: str = "off",
    source: Path | None = None,
) -> Path:
    """Write the markdown report and its figures; returns the markdown path. ``storage``: the
    Optuna storage of the tuning section (default ``<results>/optuna.db`` when it exists).
    ``wandb`` (off | offline | online): also log the W&B summary run of the ablation and profile
    (:mod:`harness.report.wandb_summary`); a W&B failure is a warning, the report stands. ``source``: a
    report's data file read instead of the store (:mod:`harness.store.archive`): the same report, no
    data file and no W&B run written (a ``wandb`` mode other than off is refused). Its Tuning
    section comes from the tuned runs and studies' summary the file holds, never from the Optuna
    storage or the store; the studies' figures are not drawn again but copied from the report
    folder the file lies in (``reports/`` for ``reports/data/FILE``) when ``out`` is another
    folder; one found in neither is named in a warning and linked all the same. Its Speed section
    (kernel ablations) shows the bench files the file holds, not the store's."""
    if name is None:
        raise AblateError("name the ablation to report (`ablate report NAME`), or pass --all for every registered one")
    if source is not None and wandb != "off":
        raise AblateError(
            f"--from writes no W&B summary run (--wandb {wandb}): a data file is not a store; drop --wandb, "
            "or log one from the store with `ablate report NAME --wandb MODE`"
        )
    abl = ablation_mod.load(name)
    data = found = None
    if source is not None:
        data, sel = load_source(
            source, abl, profile, lambda prof: output.selection(abl, prof, overrides, storage=storage, typed=name)
        )
        found, results = data.scan, data.store
        sel = dataclasses.replace(sel, results=results)
    else:
        sel = output.selection(abl, profile, overrides, results, storage, typed=name)
        output.check_results_readable(results)
        output.check_store_exists(sel, data_file=archive.existing(report_path(abl, sel.profile, out)))
    if out.exists() and not out.is_dir():
        raise AblateError(f"--out {out} exists and is not a folder; pass a folder for the report and its figures")
    check_out_parent(out)
    check_storage(storage)
    result = analyse(sel, results, found=found)  # the report and the W&B summary share it
    tuning = None  # from the store and the Optuna storage
    if data is not None:  # the file's tuned runs and studies; the studies' figures copied, not drawn
        tuning = TuningInputs(data.tuning, tuned_analysis(sel, results, found=data.tuned))
    if data is None:  # evaluated once from the store, for the report and the W&B summary
        guards = guards_of(list(abl.claims), results)
    else:  # the controls' outcomes kept beside the data file; without that file, unknown
        guards = data.guards if data.guards is not None else declared_guards(list(abl.claims), UNKNOWN)
    with _writing(out):
        path = write_report(
            sel,
            results,
            out,
            storage=storage,
            result=result,
            data=found is None,
            tuning=tuning,
            guards=guards,
            bench=data.bench if data is not None else None,
        )
    output.console.print(f"wrote {path}")
    if data is not None and data.tuning is not None:
        missing = copy_figures(data.tuning, Path(source).parent.parent, out)
        for fig in missing:
            output.console.print(
                f"[yellow]warning: {escape(fig)} not found; the Tuning section links it all the same[/]"
            )
    if wandb != "off":  # never with --from (refused above)
        try:
            run_dir = log_report(sel, results, out, mode=wandb, analysis=result, guards=guards)
            output.console.print(f"W&B summary run ({wandb}): {run_dir}")
        except Exception as exc:  # noqa: BLE001 - the report is written; W&B is a mirror of it
            output.console.print(f"[yellow]warning: the W&B summary run was not logged: {type(exc).__name__}: {exc}[/]")
    return path


@contextlib.contextmanager
def _writing(out: Path) -> Iterator[None]:
    """An OS error while writing under ``--out`` (a folder the system will not create, e.g. under
    /proc; a full disk; no permission) as one line, not a traceback."""
    try:
        yield
    except OSError as exc:
        where = f" ({exc.filename})" if exc.filename else ""
        raise AblateError(
            f"cannot write the report under --out {out}: {exc.strerror or exc}{where}; pass a folder you can write to"
        ) from None


def check_out_parent(out: Path) -> None:
    """``--out`` that cannot be created: a file on its path (checked without creating anything)."""
    blocker = next((p for p in Path(out).absolute().parents if p.exists()), None)
    if blocker is not None and not blocker.is_dir():
        raise AblateError(f"cannot create --out {out}: {blocker} is a file, not a folder; pass a folder path")


def check_storage(storage: str | None) -> None:
    """An Optuna ``--storage`` given to a report: opened now, so that a bad URL, a missing driver
    or an unreachable database is refused before any figure is written."""
    if storage is None:
        return
    if not storage.strip():
        raise AblateError(
            "--storage is empty; pass a database URL (e.g. sqlite:///results/optuna.db) or leave it "
            "out for RESULTS/optuna.db"
        )
    if sqlite_exists(storage):  # a SQLite file that does not exist: no tuning section, nothing to open
        open_storage(storage)


def report_all(
    results: Path,
    out: Path,
    storage: str | None = None,
    *,
    name: str | None = None,
    profile: str | None = None,
    source: Path | None = None,
    wandb: str = "off",
) -> Path:
    """``ablate report --all``: the report of every registered ablation for each profile with
    runs, and ``out/README.md``, their index (:mod:`harness.report.index`); returns the index's path.
    ``name``, ``profile``, ``source`` (--from) and a ``wandb`` mode other than ``off`` are refused: --all
    means every ablation and every profile, from the store, without W&B summary runs."""
    if name is not None:
        raise AblateError(f"--all reports every registered ablation; drop {name!r} (or drop --all to report only it)")
    if profile is not None:
        raise AblateError("--all reports every profile with runs; drop --profile")
    if source is not None:
        raise AblateError("--from regenerates one report from its data file; drop --all (or --from)")
    if wandb != "off":
        raise AblateError("--all writes no W&B summary runs; log one with `ablate report NAME --wandb MODE`")
    output.check_results_readable(results)
    if out.exists() and not out.is_dir():
        raise AblateError(f"--out {out} exists and is not a folder; pass a folder for the reports and their figures")
    check_out_parent(out)
    check_storage(storage)
    with _writing(out):
        path = write_all(
            results,
            out,
            data_dir=output.data_dir(),
            storage=storage,
            echo=lambda line: output.console.print(escape(line)),
        )
    output.console.print(f"wrote {path}")
    return path
