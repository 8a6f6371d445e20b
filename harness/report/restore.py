"""Runs rebuilt from reports' data files into a run store (``ablate restore FILE ... --results-dir R``).

A report's data file (:mod:`harness.report.data`) holds the fields of the records its report reads
(ids, status, metrics, config, versions, timings, hardware; not e.g. the per-step timings or the
host), their validation histories and its tuned runs; :mod:`harness.report.source` reads them
back, checked against the registered grid. Written into a store, they are finished runs again:
``ablate report --all`` makes the index and the reproductions page from them, ``ablate status``
counts them, and ``ablate run NAME`` trains only the runs they lack (more seeds, a grid left
unfinished) instead of all of them. What a data file does not hold is not restored: checkpoints,
the loggers' folders (``csv/``, ``wandb/``), the events of each run folder, and the Optuna studies
(their summaries, kept beside the file, feed ``ablate report NAME --from FILE`` only).

A finished run is never overwritten (:mod:`harness.store.runs`): a run whose folder already holds a
``record.json`` is kept as it is, and said when its metrics differ from the file's. The history is
written before the record, and the record atomically, so a restore that is killed leaves only
unfinished folders, which the next restore (or run) completes.
"""

from __future__ import annotations

import csv
import gzip
import io
import math
from dataclasses import dataclass, field
from pathlib import Path

from harness.errors import AblateError
from harness.experiment import ablation as ablation_mod
from harness.experiment.selection import select
from harness.report.source import load_source
from harness.store.record import Record
from harness.store.runs import RECORD, load_record, run_dir, write_record


@dataclass
class Restored:
    """What one data file gave the store: the runs written, those already there (kept), those
    kept whose stored metrics differ from the file's (run ids), and the store problems the file
    lists (unreadable entries of the store it was made from: not runs, nothing to restore)."""

    path: Path
    ablation: str
    profile: str
    written: list[Record] = field(default_factory=list)
    kept: list[Record] = field(default_factory=list)
    differ: list[str] = field(default_factory=list)
    problems: int = 0
    histories: int = 0


def ablation_of(path: Path) -> str:
    """The ablation a data file's runs belong to (its first row that names one).

    Raises:
        AblateError: a file that cannot be read, or has no row naming an ablation.
    """
    path = Path(path)
    if not path.is_file():
        what = "a folder" if path.is_dir() else "no such file"
        raise AblateError(f"{path}: {what}; pass reports' data files (reports/data/NAME[.PROFILE].csv[.gz])")
    try:
        raw = path.read_bytes()
        text = (gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw).decode("utf-8-sig")
        if not text.strip():
            raise AblateError(f"{path}: empty (0 bytes of data); pass a report's data file")
        for row in csv.DictReader(io.StringIO(text)):
            if row.get("ablation"):
                return row["ablation"]
    except (OSError, EOFError, UnicodeDecodeError, gzip.BadGzipFile, csv.Error) as exc:
        raise AblateError(f"{path}: unreadable ({type(exc).__name__}: {exc}); pass a report's data file") from None
    raise AblateError(
        f"{path}: no row names an ablation: not a report's data file (reports/data/NAME[.PROFILE].csv[.gz])"
    )


def _same_metrics(a: dict[str, float] | None, b: dict[str, float] | None) -> bool:
    a, b = a or {}, b or {}
    return a.keys() == b.keys() and all(
        a[k] == b[k] or (isinstance(a[k], float) and isinstance(b[k], float) and math.isnan(a[k]) and math.isnan(b[k]))
        for k in a
    )


def restore(path: Path, results: Path, declaration: str | None = None, data_dir: Path | None = None) -> Restored:
    """Write the runs of the data file ``path`` into the store ``results``. ``declaration``: the
    ablation's YAML file (or registered name) when the file's runs are not of the registered
    ablation its rows name (an ablation of one's own).

    The file is read as ``ablate report NAME --from FILE`` reads it (:func:`harness.report.source.load_source`):
    its runs must be runs of the registered grid of its ablation and profile, made without
    key=value overrides, so that they are found again under their ids.

    Raises:
        AblateError: a file that :func:`harness.report.source.load_source` refuses, of an ablation that
            is not registered (without ``declaration``) or that ``declaration`` does not declare; a
            store path that is not a folder.
    """
    name = ablation_of(path)
    abl = ablation_mod.load(declaration or name)
    if abl.name != name:
        raise AblateError(
            f"{path}: holds runs of {name}, and {declaration} declares {abl.name}; pass the declaration of {name}"
        )
    data, _ = load_source(path, abl, None, lambda prof: select(abl, prof, (), data_dir, check_data=False))
    results = Path(results)
    if results.exists() and not results.is_dir():
        raise AblateError(f"--results-dir {results} is not a folder; pass the run store's folder")
    out = Restored(Path(path), abl.name, data.profile, problems=len(data.scan.problems))
    for rec in [*data.scan.records, *data.tuned.records]:
        folder = run_dir(results, rec.ablation, rec.profile, rec.run_id)
        held, problem = load_record(folder)
        if held is not None or problem is not None or (folder / RECORD).exists():
            if held is None or not _same_metrics(held.metrics, rec.metrics) or held.status != rec.status:
                out.differ.append(rec.run_id)
            out.kept.append(rec)
            continue
        folder.mkdir(parents=True, exist_ok=True)
        history = data.scan.history.get(rec.run_id) if data.scan.history else None
        if history is not None and not isinstance(history, str):  # a str: the history was unreadable there too
            history.to_csv(folder / "history.csv", index=False)
            out.histories += 1
        write_record(folder, rec)
        out.written.append(rec)
    return out
