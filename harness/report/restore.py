"""Runs rebuilt from reports' data files into a run store (``ablate restore FILE ... --results-dir R``).

A report's data file (:mod:`harness.report.data`) holds the fields of the records its report reads
(ids, status, metrics, config, versions, timings, hardware; not e.g. the per-step timings or the
host), their validation histories and its tuned runs; :mod:`harness.report.source` reads them
back. Written into a store, they are finished runs again: ``ablate report --all`` makes every
report, the index and the reproductions page from them, ``ablate status`` counts them, and
``ablate run NAME`` trains only the runs they lack (more seeds, a grid left unfinished). The files
kept beside a data file come too: the summary of the Optuna studies its Tuning section lists, with
their figures (``<results>/restored/``, which a report made from the store shows when the Optuna
storage holds no study of its grid: :func:`harness.report.tuning.read_tuning`), and the
``ablate bench attention`` files of a kernel ablation (``<results>/bench/``). What no data file
holds is not restored: checkpoints, the loggers' folders, each run's events, and the Optuna
studies themselves (``ablate run --tuned`` needs ``ablate tune`` again).

Each run is checked against its own id (a hash of its task, config, seed and code versions:
:func:`harness.experiment.grid.record_id`), so a run whose seed, config or task was edited is
refused; its status and metrics are not in the id, and git shows their edits in a committed file.
Every file is read and checked before anything is written. A finished run is never overwritten
(:mod:`harness.store.runs`): a run whose folder holds a readable ``record.json`` is kept, and said
when its status or metrics differ from the file's; an unreadable ``record.json`` (not a finished
run) is replaced. The history is written before the record, and the record atomically, so a
restore that is killed leaves only unfinished folders, which the next restore (or run) completes.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from harness.errors import AblateError
from harness.experiment import ablation as ablation_mod
from harness.experiment.ablation import Ablation
from harness.experiment.grid import record_id
from harness.experiment.versions import run_versions
from harness.report.guards import Guards, read_guards
from harness.report.source import DataFile, read_data, same_value
from harness.report.tuning_data import copy_figures, restored_studies_path, studies_path
from harness.store.record import Record
from harness.store.runs import load_record, run_dir, write_record


@dataclass
class Restored:
    """What one data file gave the store: the runs written (``tuned`` of them tuned runs), those
    already there (kept), those kept whose status or metrics differ from the file's (run id, how),
    unreadable records replaced, the store problems the file lists (unreadable entries of the store
    it was made from: not runs), and the files beside it that came too."""

    path: Path
    ablation: str
    profile: str
    written: list[Record] = field(default_factory=list)
    kept: list[Record] = field(default_factory=list)
    differ: list[tuple[str, str]] = field(default_factory=list)  # (run id, how)
    replaced: list[str] = field(default_factory=list)
    histories: int = 0
    problems: int = 0
    tuned: int = 0
    studies: Path | None = None  # the studies' summary restored
    missing_figures: list[str] = field(default_factory=list)  # the summary's figures found nowhere
    no_studies: bool = False  # tuned runs, but no studies' summary beside the file: no Tuning section
    refilled: int = 0  # kept runs whose lost or unreadable history.csv the file's took the place of
    bench: list[str] = field(default_factory=list)  # the bench files restored
    guards: list[tuple[str, str, str | None]] = field(default_factory=list)  # (kind, id, profile) of its controls


@dataclass
class Plan:
    """The files a restore reads (each with its table), and those it passes over, with why."""

    files: list[tuple[Path, DataFile]] = field(default_factory=list)
    skipped: list[tuple[Path, str]] = field(default_factory=list)


def _with_versions(data: DataFile) -> None:
    """Give each run of a file written before data files kept code versions (format 1) the
    versions its id was checked with (:func:`_check_ids`: this code's, which hash to its id), so
    that a report does not read them as version 1 of everything and warn of code mixed with the
    runs made since (a version only grows: one above 1 now and 1 then would not give the id)."""
    for scan in (data.scan, data.tuned):
        scan.records = [
            r if r.code_versions is not None else r.model_copy(update={"code_versions": run_versions(r.config)})
            for r in scan.records
        ]


def _check_ids(path: Path, data: DataFile, abl: Ablation | None) -> None:
    """Every run is the run its id names, and its variant the one its config holds (and, for a
    registered ablation ``abl``, named as the ablation names it).

    Raises:
        AblateError: a run whose fields hash to another id (its seed, task or config edited), or
            whose variant disagrees with its config or its label.
    """
    for rec in [*data.scan.records, *data.tuned.records]:
        for key, value in (rec.variant or {}).items():
            section, _, name = key.partition(".")
            if (rec.config.get(section) or {}).get(name) != value:
                raise AblateError(
                    f"{path}: run {rec.run_id} has variant {key}={value!r}, where its config has "
                    f"{(rec.config.get(section) or {}).get(name)!r}: the file was edited; a data file is written by "
                    "`ablate report NAME`, not edited"
                )
        variant = rec.variant or {}
        ordered = {k: variant[k] for k in [*abl.axes, *variant] if k in variant} if abl is not None else variant
        if abl is not None and abl.label(ordered) != rec.variant_label:  # a record keeps its keys sorted
            raise AblateError(
                f"{path}: run {rec.run_id} is labelled {rec.variant_label!r}, where {abl.name} names its variant "
                f"{abl.label(ordered)!r}: the file was edited; a data file is written by "
                "`ablate report NAME`, not edited"
            )
        try:
            rid = record_id(
                rec.task,
                rec.task_version,
                rec.task_params or {},
                rec.config,
                rec.seed,
                rec.tuned_params,
                rec.code_versions,
            )
        except Exception as exc:  # noqa: BLE001 - a config or component this code cannot read: one line
            raise AblateError(f"{path}: run {rec.run_id} cannot be checked against its id ({exc})") from None
        if rid != rec.run_id:
            raise AblateError(
                f"{path}: run {rec.run_id} is not the run its id names (its task, seed or config hash to {rid}): "
                "the file was edited; a data file is written by `ablate report NAME`, not edited"
            )


def data_files(paths: list[Path]) -> list[Path]:
    """``paths`` with each folder (``reports/data``) replaced by the data files it holds
    (``*.csv``, ``*.csv.gz``), but a ``bench`` folder, which :func:`plan` passes over.

    Raises:
        AblateError: a folder that holds no data file.
    """
    out = []
    for path in map(Path, paths):
        if path.is_dir() and path.name != "bench":
            found = sorted(p for p in path.iterdir() if p.is_file() and p.name.endswith((".csv", ".csv.gz")))
            if not found:
                raise AblateError(
                    f"{path}: a folder that holds no data file (NAME[.PROFILE].csv[.gz]); pass the folder of a "
                    "report's data files (reports/data) or the files"
                )
            out += found
        else:
            out.append(path)
    return out


def plan(paths: list[Path]) -> Plan:
    """Read and check every file before anything is written: a folder stands for the data files it
    holds (:func:`data_files`). The files kept beside data files (``*.tuning.json``,
    ``*.guards.json``, a ``bench`` folder: what ``reports/data/*`` also matches) are passed over,
    as is a file named twice.

    Raises:
        AblateError: no data file among ``paths``; a folder without one; a file :func:`read_data`
            refuses; a run that is not the run its id names.
    """
    out = Plan()
    seen: set[Path] = set()
    registered = ablation_mod.available()
    for path in data_files(paths):
        if path.name.endswith(".tuning.json"):
            out.skipped.append((path, "a studies' summary: restored with the data file beside it"))
            continue
        if path.name.endswith(".guards.json"):
            out.skipped.append((path, "a controls' file: in a store, the controls' own runs decide"))
            continue
        if path.is_dir() and path.name == "bench":
            out.skipped.append((path, "the bench files beside the data files: restored with them"))
            continue
        key = path.resolve()
        if key in seen:
            out.skipped.append((path, "named twice"))
            continue
        seen.add(key)
        try:
            data = read_data(path, None, None, controls=False, at=str(path))
            name = data.ablation
            _check_ids(path, data, ablation_mod.load(name) if name in registered else None)
            _with_versions(data)
        except AblateError as exc:
            raise AblateError(f"{exc} (a committed file: `git checkout -- {path}` gives it back as written)") from None
        data.guards = _controls(path, name, data.profile)
        out.files.append((path, data))
    if not out.files:
        raise AblateError(
            "no data file among the paths given (reports/data/NAME[.PROFILE].csv[.gz]), e.g. "
            "`ablate restore reports/data`"
        )
    return out


def _controls(path: Path, ablation: str, profile: str) -> Guards | None:
    """The controls' file beside the data file, for the line that names the controls' grids; an
    unreadable one is no reason to refuse the runs (a store's own control runs decide)."""
    try:
        return read_guards(path, ablation, profile)
    except AblateError:
        return None


MACHINE = ("train_tokens_per_s", "peak_mem_mb")
"""Metrics of the machine a run ran on, not of the run: never the same twice, so not compared."""


def difference(held: Record, rec: Record) -> str | None:
    """How the store's record of a run differs from the file's: its status, or the first metric
    (but those of :data:`MACHINE`) that is missing from one or has another value; None when none does."""
    if held.status != rec.status:
        return f"status {held.status} here, {rec.status} in the file"
    x, y = held.metrics or {}, rec.metrics or {}
    for k in sorted((x.keys() | y.keys()) - set(MACHINE)):
        a, b = x.get(k), y.get(k)
        if same_value(a, b):
            continue
        return f"{k} {a!r} here, {b!r} in the file"
    return None


def restore(path: Path, data: DataFile, results: Path) -> Restored:
    """Write the runs of one checked data file (:func:`plan`) into the store ``results``, with the
    files kept beside it.

    Raises:
        OSError: the store cannot be written (the caller says so).
    """
    out = Restored(Path(path), data.ablation, data.profile, problems=len(data.scan.problems))
    out.guards = sorted({(g.kind, g.id, g.profile) for gs in (data.guards or {}).values() for g in gs}, key=str)
    tuned = {r.run_id for r in data.tuned.records}
    for rec in [*data.scan.records, *data.tuned.records]:
        folder = run_dir(results, rec.ablation, rec.profile, rec.run_id)
        held, problem = load_record(folder)
        history = (data.scan.history or {}).get(rec.run_id)
        if isinstance(history, str):  # the history was unreadable in the store the file was made from too
            history = None
        if held is not None:
            if (how := difference(held, rec)) is not None:
                out.differ.append((rec.run_id, how))
            elif history is not None and not _readable_history(folder):
                history.to_csv(folder / "history.csv", index=False)  # the same run: its lost curve comes back
                out.refilled += 1
            out.kept.append(rec)
            continue
        if problem is not None:  # an unreadable record is not a finished run: the file's takes its place
            out.replaced.append(rec.run_id)
        folder.mkdir(parents=True, exist_ok=True)
        if history is not None:
            history.to_csv(folder / "history.csv", index=False)
            out.histories += 1
        write_record(folder, rec)
        out.written.append(rec)
        out.tuned += rec.run_id in tuned
    out.studies, out.missing_figures = _restore_studies(Path(path), data, Path(results))
    out.no_studies = bool(data.tuned.records) and data.tuning is None
    out.bench = _restore_bench(Path(path), Path(results))
    return out


def _readable_history(folder: Path) -> bool:
    try:
        return "step" in (folder / "history.csv").read_text().partition("\n")[0].split(",")
    except (OSError, UnicodeDecodeError):
        return False


def _restore_studies(path: Path, data: DataFile, results: Path) -> tuple[Path | None, list[str]]:
    """Copy the studies' summary beside the data file, and the figures it lists (from the report
    folder the file lies in), under ``<results>/restored/``; returns its path and the figures found
    nowhere (the report links them all the same)."""
    if data.tuning is None:
        return None, []
    target = restored_studies_path(results, data.tuning.ablation, data.tuning.profile)
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(studies_path(path), target)
    return target, copy_figures(data.tuning, path.parent.parent, target.parent)  # reports/ for reports/data/FILE


def _restore_bench(path: Path, results: Path) -> list[str]:
    """Copy the bench files kept beside the data file (``data/bench/``) into ``<results>/bench/``,
    where the store has none of that name (a store's own measurement is kept)."""
    done = []
    for src in sorted((path.parent / "bench").glob("attention-*.json")):
        dst = results / "bench" / src.name
        if not dst.exists():
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dst)
            done.append(src.name)
    return done
