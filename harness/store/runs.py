"""The run store: one folder per run, written atomically, read back as one tidy DataFrame.

Layout: ``<results>/<ablation>/<profile>/<run_id>/`` holding ``record.json`` (the run's config,
status, metrics, timings, versions and commit), ``history.csv`` (validation curve) and the
loggers' folders (``csv/``, ``wandb/``). A run is finished exactly when ``record.json`` exists
and parses: it is written to a temporary file and moved into place with ``os.replace``, so a
killed process never leaves a half-written record that reads as finished. A finished run is
never overwritten; a folder without a record is an interrupted attempt and is started afresh
(or resumed from ``checkpoints/last.ckpt``). Also in a run folder: ``claim.lock`` while a
process owns the run (:mod:`harness.execution.locks`), ``events.jsonl`` (claims, takeovers, resumes,
finishes) and ``record.attempt-N.json`` for attempts replaced by ``--retry``
(:mod:`harness.execution.attempt`). A record that does not parse or lacks the fields every reader relies
on is not a finished run: :func:`scan` reports it with its path, and nothing that reads the
store raises on it.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.encode import dumps
from harness.store.record import Record, parse_record

if TYPE_CHECKING:
    import pandas as pd

RECORD = "record.json"
HISTORY = "history.csv"


def run_dir(results: Path, ablation: str, profile: str, run_id: str) -> Path:
    return Path(results) / ablation / profile / run_id


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder and ``os.replace``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json_atomic(path: Path, payload: Any) -> None:
    """Write JSON to ``path`` atomically (:func:`write_atomic`).

    Strict JSON: NaN is written as null and +/-inf as ``"Infinity"`` / ``"-Infinity"``
    (:mod:`harness.encode`); :func:`load_record` turns a record's metrics back into floats."""
    write_atomic(path, dumps(payload, indent=2, sort_keys=True, default=str).encode())


def write_record(folder: Path, record: Record) -> None:
    """Write ``record`` as ``folder/record.json``, atomically (:func:`write_json_atomic`)."""
    write_json_atomic(folder / RECORD, record.to_json())


def read_record(folder: Path) -> Record | None:
    """The finished record of a run folder, or None when there is none (or it is unreadable)."""
    return load_record(folder)[0]


def load_record(folder: Path) -> tuple[Record | None, str | None]:
    """``(record, None)`` for a finished run; ``(None, why)`` when ``record.json`` exists but is
    not a usable record (:func:`harness.store.record.parse_record`); ``(None, None)`` when there is none."""
    try:
        raw = json.loads((folder / RECORD).read_text())
    except FileNotFoundError:
        return None, None
    except (OSError, ValueError) as exc:
        return None, f"unreadable record ({type(exc).__name__}: {exc})"
    return parse_record(raw, folder.name)


@dataclass
class StoreScan:
    """Records found under one ablation/profile, and paths that could not be read as runs."""

    records: list[Record] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    incomplete: list[Path] = field(default_factory=list)
    history: dict[str, Any] | None = None  # run id -> validation history, when read before (a report's data file)


def scan(results: Path, ablation: str, profile: str) -> StoreScan:
    """Read every run folder of one ablation/profile; never raises on bad content."""
    out = StoreScan()
    root = Path(results) / ablation / profile
    for level in (Path(results), Path(results) / ablation, root):
        if level.exists() and not level.is_dir():
            out.problems.append(f"{level}: not a folder (the store expects <results>/<ablation>/<profile>/<run id>/)")
            return out
    try:
        entries = sorted(root.iterdir()) if root.is_dir() else []
    except OSError as exc:
        out.problems.append(f"{root}: cannot be read ({exc.strerror or exc})")
        return out
    for folder in entries:
        if folder.name.startswith("."):
            continue
        if not folder.is_dir():
            out.problems.append(f"{folder}: not a run folder")
            continue
        rec, problem = load_record(folder)
        if rec is not None and (rec.ablation, rec.profile) != (ablation, profile):
            rec, problem = None, f"a record of {rec.ablation}/{rec.profile}, not of {ablation}/{profile}"
        if rec is not None:
            out.records.append(rec)
        elif problem is not None:
            out.problems.append(f"{folder / RECORD}: {problem}")
        else:
            out.incomplete.append(folder)
    return out


def run_history(scan: StoreScan, results: Path, rec: Record) -> pd.DataFrame | str | None:
    """A finished run's validation history as the report draws it: the frame of its
    ``history.csv`` (``scan.history`` when the scan holds them), the problem
    line when that file is unreadable, None when there is none (or it lacks ``step`` and ``loss``)."""
    import pandas as pd

    if scan.history is not None:
        return scan.history.get(rec.run_id)
    f = run_dir(results, rec.ablation, rec.profile, rec.run_id) / HISTORY
    try:
        frame = pd.read_csv(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        return f"{f}: unreadable validation history ({type(exc).__name__})"
    return frame if {"step", "loss"} <= set(frame.columns) else None


def readable_history(folder: Path) -> bool:
    """Whether ``folder/history.csv`` is there and its header names ``step``."""
    try:
        return "step" in (folder / HISTORY).read_text().partition("\n")[0].split(",")
    except (OSError, UnicodeDecodeError):
        return False


def history_of(scan: StoreScan, results: Path) -> dict[str, pd.DataFrame | str]:
    """:func:`run_history` of every ok run that has one, by run id."""
    out = {}
    for rec in scan.records:
        if rec.status == "ok" and (frame := run_history(scan, results, rec)) is not None:
            out[rec.run_id] = frame
    return out


def tidy(records: list[Record]):
    """One row per (run, metric): the table every statistic and report is a group-by over.

    Columns: ablation, profile, run_id, variant, seed, task, task_version, metric, value,
    status, n_params, wall_time_s, config_hash, commit. Failed and diverged runs appear with
    metric ``status`` and a NaN value, so they are rows too.
    """
    import pandas as pd

    rows = []
    for rec in records:
        base = {
            "ablation": rec.ablation,
            "profile": rec.profile,
            "run_id": rec.run_id,
            "variant": rec.variant_label,
            "seed": rec.seed,
            "task": rec.task,
            "task_version": rec.task_version,
            "status": rec.status,
            "n_params": rec.n_params,
            "wall_time_s": rec.wall_time_s,
            "config_hash": rec.run_id,
            "commit": rec.commit,
        }
        if not rec.metrics:
            rows.append({**base, "metric": "status", "value": float("nan")})
        for name, value in (rec.metrics or {}).items():
            rows.append({**base, "metric": name, "value": value})
    cols = [
        "ablation",
        "profile",
        "run_id",
        "variant",
        "seed",
        "task",
        "task_version",
        "metric",
        "value",
        "status",
        "n_params",
        "wall_time_s",
        "config_hash",
        "commit",
    ]
    return pd.DataFrame(rows, columns=cols)
