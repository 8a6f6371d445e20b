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
(:mod:`harness.execution.run_folder`). A record that does not parse or lacks the fields every reader relies
on is not a finished run: :func:`scan` reports it with its path, and nothing that reads the
store raises on it.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.encode import dumps, number

STATUSES = ("ok", "diverged", "failed", "timeout")
RECORD = "record.json"


def run_dir(results: Path, ablation: str, profile: str, run_id: str) -> Path:
    return Path(results) / ablation / profile / run_id


def write_json_atomic(path: Path, payload: Any) -> None:
    """Write JSON to ``path`` through a temporary file in the same folder and ``os.replace``.

    Strict JSON: NaN is written as null and +/-inf as ``"Infinity"`` / ``"-Infinity"``
    (:mod:`harness.encode`); :func:`load_record` turns a record's metrics back into floats."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(dumps(payload, indent=2, sort_keys=True, default=str))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_record(folder: Path) -> dict[str, Any] | None:
    """The finished record of a run folder, or None when there is none (or it is unreadable)."""
    return load_record(folder)[0]


_FIELDS = {
    "run_id": str,
    "ablation": str,
    "profile": str,
    "task": str,
    "variant_label": str,
    "seed": int,
    "config": dict,
}
_CONFIG = {
    "model": ("d_model", "n_heads", "n_layers"),
    "train": ("steps", "batch_size", "seq_len"),
    "eval": ("length_multipliers",),
    "ffn": (),
    "block": (),
    "attention": (),
}


def load_record(folder: Path) -> tuple[dict[str, Any] | None, str | None]:
    """``(record, None)`` for a finished run; ``(None, why)`` when ``record.json`` exists but is
    not a usable record; ``(None, None)`` when there is none."""
    try:
        rec = json.loads((folder / RECORD).read_text())
    except FileNotFoundError:
        return None, None
    except (OSError, ValueError) as exc:
        return None, f"unreadable record ({type(exc).__name__}: {exc})"
    _decode_metrics(rec)
    problem = record_problem(rec, folder.name)
    return (None, problem) if problem else (rec, None)


def _decode_metrics(rec: Any) -> None:
    """Metrics as floats again: null -> NaN, "Infinity" / "-Infinity" -> +/-inf (records written
    before the strict encoding hold bare NaN / Infinity, which ``json.loads`` already reads).
    A value that is no number is left for :func:`record_problem` to report."""
    metrics = rec.get("metrics") if isinstance(rec, dict) else None
    if not isinstance(metrics, dict):
        return
    for key, value in metrics.items():
        try:
            metrics[key] = number(value)
        except (TypeError, ValueError):
            pass


def record_problem(rec: Any, folder_name: str | None = None) -> str | None:
    """Why ``rec`` is not a finished record of this harness (the fields readers rely on), or None."""
    if not isinstance(rec, dict):
        return f"not a record (a JSON {type(rec).__name__}, expected an object)"
    if rec.get("status") not in STATUSES:
        return f"status {rec.get('status')!r} is not one of {', '.join(STATUSES)}"
    for key, typ in _FIELDS.items():
        value = rec.get(key)
        if not isinstance(value, typ) or isinstance(value, bool):
            return f"field {key!r} missing or not a {typ.__name__}"
    if folder_name is not None and rec["run_id"] != folder_name:
        return f"run_id {rec['run_id']!r} does not match its folder {folder_name!r}"
    for section, keys in _CONFIG.items():
        sub = rec["config"].get(section)
        if not isinstance(sub, dict) or any(k not in sub for k in keys):
            return f"config.{section} missing or incomplete"
    metrics = rec.get("metrics")
    if rec["status"] == "ok" and not isinstance(metrics, dict):
        return "an ok record without metrics"
    if isinstance(metrics, dict) and any(
        v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))) for v in metrics.values()
    ):
        return "metrics must map names to numbers"
    return None


@dataclass
class StoreScan:
    """Records found under one ablation/profile, and paths that could not be read as runs."""

    records: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    incomplete: list[Path] = field(default_factory=list)
    history: dict[str, Any] | None = None  # run id -> validation history, when read from a report's data file


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
        if rec is not None and (rec["ablation"], rec["profile"]) != (ablation, profile):
            rec, problem = None, f"a record of {rec['ablation']}/{rec['profile']}, not of {ablation}/{profile}"
        if rec is not None:
            out.records.append(rec)
        elif problem is not None:
            out.problems.append(f"{folder / RECORD}: {problem}")
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
        base = {
            k: rec.get(k)
            for k in (
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
        }
        base["variant"] = rec.get("variant_label")
        base["config_hash"] = rec.get("run_id")
        metrics = rec.get("metrics") or {}
        if not metrics:
            rows.append({**base, "metric": "status", "value": float("nan")})
        for name, value in metrics.items():
            rows.append({**base, "metric": name, "value": float("nan") if value is None else float(value)})
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
