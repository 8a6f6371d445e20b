"""The run store: ``<results>/<ablation>/<profile>/<run_id>/`` per run, read back as one tidy DataFrame.

Each run's ``record.json`` is written atomically (a run is finished exactly when it parses). The layout and the files
beside the record: docs/execution.md (the store never loses a run). A record that does not parse is not a finished
run: :func:`scan` reports it, nothing that reads the store raises.
"""

from __future__ import annotations

import io
import json
import os
import socket
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.encode import dumps
from harness.errors import first_line
from harness.files import write_atomic
from harness.store.record import Record, parse_record

if TYPE_CHECKING:
    import pandas as pd

RECORD = "record.json"
HISTORY = "history.csv"
EVENTS = "events.jsonl"
COLUMNS = ("ablation", "profile", "run_id", "variant", "seed", "task", "task_version", "metric", "value", "status")
COLUMNS += ("n_params", "wall_time_s", "config_hash", "commit")
"""The columns of :func:`tidy`."""


DAMAGED_HISTORY = ": unreadable validation history"
"""What follows a damaged ``history.csv``'s path in its problem line (:func:`run_history`)."""
DENIED = "cannot be read"
"""How :func:`load_record` begins the problem of a record this user may not read: not damaged, never
replaced (:func:`denied`)."""


def denied(problem: str | None) -> bool:
    """Whether a record's ``problem`` (:func:`load_record`) is that this user may not read it."""
    return problem is not None and problem.startswith(DENIED)


def unreadable(exc: Exception) -> str:
    """The problem of a ``record.json`` that could not be read or is not JSON (``exc``), in the store or a data file."""
    return f"unreadable record ({type(exc).__name__}: {exc})"


def run_dir(results: Path, ablation: str, profile: str, run_id: str) -> Path:
    """The folder of one run in the store ``results``: ``<results>/<ablation>/<profile>/<run_id>``."""
    return Path(results) / ablation / profile / run_id


def write_json_atomic(path: Path, payload: Any) -> None:
    """Strict JSON (:mod:`harness.encode`: NaN as null, +/-inf as ``"Infinity"``), atomically."""
    write_atomic(path, dumps(payload, indent=2, sort_keys=True, default=str).encode())


def write_record(folder: Path, record: Record) -> None:
    """Write ``record`` as the ``record.json`` of the run folder ``folder``, atomically (:func:`write_json_atomic`)."""
    write_json_atomic(folder / RECORD, record.to_json())


def append_event(folder: Path, event: str, **data: Any) -> None:
    """Append one JSON line to the run's ``events.jsonl`` (a single ``O_APPEND`` write)."""
    at = datetime.now(timezone.utc).isoformat()
    line = dumps({"event": event, "at": at, "pid": os.getpid(), "host": socket.gethostname(), **data}, default=str)
    with open(folder / EVENTS, "ab", buffering=0) as fh:  # unbuffered: one write, appended whole
        fh.write(f"{line}\n".encode())


def load_record(folder: Path) -> tuple[Record | None, str | None]:
    """``(record, None)`` for a finished run, ``(None, why)`` for a bad record, ``(None, None)`` for none.

    ``(None, why)`` when ``record.json`` is not a usable record (:func:`harness.store.record.parse_record`) or may not
    be read (:func:`denied`); ``(None, None)`` when there is none.
    """
    try:
        raw = json.loads((folder / RECORD).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None, None
    except PermissionError as exc:
        return None, f"{DENIED} ({exc.strerror}): another user's run? make the store group-readable (chmod -R g+rX)"
    except (OSError, ValueError) as exc:
        return None, unreadable(exc)
    return parse_record(raw, folder.name)


@dataclass
class StoreScan:
    """Records found under one ablation/profile, and paths that could not be read as runs."""

    records: list[Record] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
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
        elif problem is not None:  # else a run not finished (yet)
            out.problems.append(f"{folder / RECORD}: {problem}")
    return out


def parse_history(source: Path | bytes) -> pd.DataFrame:
    """A validation history (``history.csv``, a path or its bytes) as a frame of numbers.

    Raises:
        OSError: the file cannot be read.
        ValueError: it is not CSV, or a column holds anything but numbers (text, NUL bytes).
    """
    import pandas as pd

    frame = pd.read_csv(io.BytesIO(source) if isinstance(source, bytes) else source)
    if text := [str(c) for c in frame.columns if not pd.api.types.is_numeric_dtype(frame[c])]:
        raise ValueError(f"column {text[0]!r} holds text, not numbers")
    return frame


def run_history(scan: StoreScan, results: Path, rec: Record) -> pd.DataFrame | str | None:
    """A finished run's validation history (``scan.history`` when the scan holds them).

    Returns its frame, the problem line when the file is unreadable or damaged (:func:`parse_history`), None when there
    is none or it lacks step and loss.
    """
    if scan.history is not None:
        return scan.history.get(rec.run_id)
    f = run_dir(results, rec.ablation, rec.profile, rec.run_id) / HISTORY
    try:
        frame = parse_history(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        return f"{f}{DAMAGED_HISTORY} ({type(exc).__name__}: {first_line(exc)})"
    return frame if {"step", "loss"} <= set(frame.columns) else None


def readable_history(folder: Path) -> bool:
    """Whether ``folder/history.csv`` is there and parses (:func:`parse_history`) with a ``step`` column."""
    try:
        return "step" in parse_history(folder / HISTORY).columns
    except (OSError, ValueError):
        return False


def tidy(records: list[Record]) -> pd.DataFrame:
    """One row per (run, metric), columns :data:`COLUMNS`.

    It is the table every statistic and report is a group-by over. A run without metrics (failed, diverged) is one row
    of metric ``status``, value NaN.
    """
    import pandas as pd

    same = (
        "ablation",
        "profile",
        "run_id",
        "seed",
        "task",
        "task_version",
        "status",
        "n_params",
        "wall_time_s",
        "commit",
    )
    rows = []
    for rec in records:
        base = {k: getattr(rec, k) for k in same} | {"variant": rec.variant_label, "config_hash": rec.run_id}
        metrics = rec.metrics or {"status": float("nan")}
        rows += [{**base, "metric": name, "value": value} for name, value in metrics.items()]
    return pd.DataFrame(rows, columns=COLUMNS)
