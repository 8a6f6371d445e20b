"""The run store: one folder per run, written atomically, read back as one tidy DataFrame.

Layout: ``<results>/<ablation>/<profile>/<run_id>/`` holding ``record.json`` (the run's config,
status, metrics, timings, versions and commit), ``history.csv`` (validation curve) and the
loggers' folders (``csv/``, ``wandb/``). A run is finished exactly when ``record.json`` exists
and parses: it is written to a temporary file and moved into place with ``os.replace``, so a
killed process never leaves a half-written record that reads as finished. A finished run is
never overwritten; a folder without a record is an interrupted attempt and is started afresh.
"""
from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

STATUSES = ("ok", "diverged", "failed")
RECORD = "record.json"


def run_dir(results: Path, ablation: str, profile: str, run_id: str) -> Path:
    return Path(results) / ablation / profile / run_id


def write_json_atomic(path: Path, payload: Any) -> None:
    """Write JSON to ``path`` through a temporary file in the same folder and ``os.replace``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump(payload, fh, indent=2, sort_keys=True, default=str, allow_nan=True)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_record(folder: Path) -> dict[str, Any] | None:
    """The finished record of a run folder, or None when there is none (or it is unreadable)."""
    try:
        rec = json.loads((folder / RECORD).read_text())
    except (OSError, ValueError):
        return None
    return rec if isinstance(rec, dict) and rec.get("status") in STATUSES else None


@dataclass
class StoreScan:
    """Records found under one ablation/profile, and paths that could not be read as runs."""

    records: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    incomplete: list[Path] = field(default_factory=list)


def scan(results: Path, ablation: str, profile: str) -> StoreScan:
    """Read every run folder of one ablation/profile; never raises on bad content."""
    out = StoreScan()
    root = Path(results) / ablation / profile
    if not root.is_dir():
        return out
    for folder in sorted(root.iterdir()):
        if folder.name.startswith("."):
            continue
        if not folder.is_dir():
            out.problems.append(f"{folder}: not a run folder")
            continue
        rec = read_record(folder)
        if rec is not None:
            out.records.append(rec)
        elif (folder / RECORD).exists():
            out.problems.append(f"{folder / RECORD}: unreadable or incomplete record")
        else:
            out.incomplete.append(folder)
    return out


def tidy(records: list[dict[str, Any]]):
    """One row per (run, metric): the table every statistic and report is a group-by over.

    Columns: ablation, profile, run_id, variant, seed, task, task_version, metric, value,
    status, n_params, wall_time_s, config_hash, commit. Failed and diverged runs appear with
    metric ``status`` and a NaN value, so they are rows too.
    """
    import pandas as pd

    rows = []
    for rec in records:
        base = {k: rec.get(k) for k in ("ablation", "profile", "run_id", "seed", "task", "task_version",
                                         "status", "n_params", "wall_time_s", "commit")}
        base["variant"] = rec.get("variant_label")
        base["config_hash"] = rec.get("run_id")
        metrics = rec.get("metrics") or {}
        if not metrics:
            rows.append({**base, "metric": "status", "value": float("nan")})
        for name, value in metrics.items():
            rows.append({**base, "metric": name, "value": float("nan") if value is None else float(value)})
    cols = ["ablation", "profile", "run_id", "variant", "seed", "task", "task_version", "metric", "value",
            "status", "n_params", "wall_time_s", "config_hash", "commit"]
    return pd.DataFrame(rows, columns=cols)
