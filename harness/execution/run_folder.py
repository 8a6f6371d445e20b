"""A run folder's life cycle around its one finished record (``record.json``):

- an interrupted attempt (killed before its record) leaves logs and, once it validated,
  ``checkpoints/last.ckpt``; :func:`prepare` keeps the checkpoint and the logs (``csv/``,
  ``wandb/``) when resuming from it, so the resumed attempt continues the same curve (the CSV up
  to the checkpoint, the same W&B run id), and removes them otherwise;
- ``--retry`` moves a finished record to ``record.attempt-N.json`` (with its ``traceback`` and
  ``history`` files) before the new attempt (:func:`archive`): no record is silently overwritten;
- a finished run keeps what reports need: :func:`finish` drops the checkpoints unless ``--keep-checkpoints``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from harness.config import RunOptions
from harness.execution.locks import CLAIM, EVENTS, TAKEOVER, append_event, clear_stale, holder, stale_reason
from harness.store.record import Record
from harness.store.runs import RECORD

Progress = Record | dict[str, Any]
"""What a grid reports for each run: its stored :class:`Record`, or a plain entry that is never
stored (``claimed``, ``crashed``: :mod:`harness.execution.attempt`); both are read by key."""
CHECKPOINTS = "checkpoints"
_ALWAYS_KEPT = {RECORD, EVENTS, CLAIM, TAKEOVER}


def archive(folder: Path, record: Record) -> None:
    """Move the finished record (and its traceback and history) to ``*.attempt-N.*``."""
    for stem in ("record", "traceback", "history"):
        for path in folder.glob(f"{stem}.*"):
            if ".attempt-" not in path.name and not path.name.startswith("."):
                os.replace(path, folder / f"{stem}.attempt-{record.attempt}{path.suffix}")


def prepare(folder: Path, resume: bool) -> None:
    """Clear what an interrupted attempt left but every archived attempt, the event log and the
    claim (and the checkpoints and logs when resuming from a checkpoint). A ``record.json`` still
    here is not a usable record (the caller found none): it is kept as ``record.unreadable-N.json``."""
    if (folder / RECORD).exists():
        n = len(list(folder.glob("record.unreadable-*.json"))) + 1
        os.replace(folder / RECORD, folder / f"record.unreadable-{n}.json")
        append_event(folder, "unreadable_record", kept_as=f"record.unreadable-{n}.json")
    resuming = resume and (folder / CHECKPOINTS / "last.ckpt").is_file()
    for path in folder.iterdir():
        if (
            path.name in _ALWAYS_KEPT
            or ".attempt-" in path.name
            or ".unreadable-" in path.name
            or (resume and path.name == CHECKPOINTS)
            or (resuming and path.name in ("csv", "wandb"))  # the loggers' folders, continued
        ):
            continue
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)


def finish(folder: Path, keep_checkpoints: bool) -> None:
    """Drop the checkpoints of a finished run unless asked to keep them."""
    if not keep_checkpoints:
        shutil.rmtree(folder / CHECKPOINTS, ignore_errors=True)


def tidy_finished(folder: Path, keep_checkpoints: bool, stale_after: float) -> None:
    """Clean what a process killed between a finished run's record and its clean-up left: its
    claim, once stale (logged as a takeover), and the checkpoints :func:`finish` would drop. A claim
    that still holds (a live process) is left alone, with the checkpoints."""
    if (folder / CLAIM).exists():
        clear_stale(folder, stale_after)
        if (folder / CLAIM).exists():
            return
    finish(folder, keep_checkpoints)


def unfinished_state(folder: Path, stale_after: float = RunOptions.claim_timeout) -> tuple[str, str]:
    """``("running", who)`` while a live claim holds a run without a record, else
    ``("pending", how it will start)``."""
    held = holder(folder)
    if held is not None and "token" in held:
        raw = (folder / CLAIM).read_bytes() if (folder / CLAIM).exists() else b""
        if raw and stale_reason(raw, held["heartbeat_age_s"], stale_after) is None:
            return "running", f"claimed by {held.get('owner')} since {held.get('claimed_at')}"
    if (folder / CHECKPOINTS / "last.ckpt").is_file():
        return "pending", "interrupted; resumes from its last checkpoint"
    return "pending", "interrupted; starts afresh" if folder.is_dir() else "not started"
