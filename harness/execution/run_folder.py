"""One attempt at a run: execution options and the run folder's life cycle.

A run folder holds at most one finished record (``record.json``). Around it:

- an interrupted attempt (killed before its record was written) leaves logs and, for runs long
  enough to have validated once, ``checkpoints/last.ckpt``; :func:`prepare` keeps the checkpoint
  and the logs (``csv/``, ``wandb/``) when resuming from it, so that the resumed attempt continues
  the same curve from step 0 (the CSV up to the checkpoint, the same W&B run id), and removes
  them otherwise;
- ``--retry`` moves a finished record of a retried status to ``record.attempt-N.json`` (with its
  ``traceback``/``history`` files) before the new attempt, so no record is silently overwritten;
- a finished run keeps only what reports need: :func:`finish` removes the checkpoints unless
  ``--keep-checkpoints``.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.errors import AblateError
from harness.execution.locks import (
    CLAIM,
    DEFAULT_STALE_S,
    EVENTS,
    TAKEOVER,
    append_event,
    clear_stale,
    holder,
    stale_reason,
)
from harness.registry import did_you_mean
from harness.store.record import STATUSES, Record
from harness.store.runs import RECORD

RETRYABLE = tuple(s for s in STATUSES if s != "ok")
Progress = Record | dict[str, Any]
"""What a grid reports for each run: its stored :class:`Record`, or a plain entry that is never
stored (``claimed``: :func:`claimed_elsewhere`; ``crashed``: :func:`harness.execution.worker.crashed`);
both are read by key."""
CHECKPOINT_EVERY_S = 120.0
"""Default of ``--checkpoint-every``: a checkpoint costs a full write of the weights and the
optimiser state, so a run writes one every few minutes at most, not at every validation pass."""
CHECKPOINTS = "checkpoints"
_ARCHIVED = ("record", "traceback", "history")
_ALWAYS_KEPT = {RECORD, EVENTS, CLAIM, TAKEOVER}
_RESUMED_LOGS = {"csv", "wandb"}  # the loggers' folders (harness.training), continued on resume


@dataclass(frozen=True)
class RunOptions:
    """How runs are executed; nothing here changes a run's numbers or its id.

    Attributes:
        resume: continue an interrupted run from its last checkpoint (else start afresh).
        keep_checkpoints: keep ``checkpoints/`` in finished runs (with the trained model's
            checkpoint, written after the last step).
        checkpoint_every: seconds between two checkpoints of a run, each written at the end of a
            validation pass (0: at every validation pass); a run interrupted loses at most this
            plus one validation interval, and a run shorter than it writes none.
        run_timeout: seconds after which a run is stopped and recorded as ``timeout``.
        claim_timeout: seconds without a heartbeat after which another owner's claim is stale.
        retry: ``{run_id: attempt}``: finished attempts to archive and run again.
        devices: Lightning ``devices`` for one run (``1``, ``2``, ``"auto"``).
        strategy: Lightning ``strategy`` for one run (``"auto"``, ``"ddp"``, ...).
    """

    resume: bool = True
    keep_checkpoints: bool = False
    checkpoint_every: float = CHECKPOINT_EVERY_S
    run_timeout: float | None = None
    claim_timeout: float = DEFAULT_STALE_S
    retry: Mapping[str, int] = field(default_factory=dict)
    devices: int | str = 1
    strategy: str = "auto"

    def wants_retry(self, record: Record) -> bool:
        """Whether ``record`` is the very attempt this invocation was asked to retry."""
        return self.retry.get(record.run_id) == record.attempt


def parse_retry(text: str | None) -> tuple[str, ...]:
    """``"failed,diverged"`` -> ``("failed", "diverged")``.

    Raises:
        AblateError: an empty list or a status that cannot be retried (with the closest one).
    """
    if text is None:
        return ()
    statuses = tuple(dict.fromkeys(s.strip() for s in text.split(",") if s.strip()))
    if not statuses:
        raise AblateError(f"--retry needs statuses, e.g. --retry {','.join(RETRYABLE)}")
    for s in statuses:
        if s not in RETRYABLE:
            raise AblateError(
                f"--retry: {s!r} is not a status that can be retried{did_you_mean(s, RETRYABLE)}; "
                f"choose among {', '.join(RETRYABLE)}"
            )
    return statuses


def archived_attempts(folder: Path) -> int:
    """How many earlier records of this run were archived by ``--retry``."""
    return len(list(folder.glob("record.attempt-*.json")))


def archive(folder: Path, record: Record) -> int:
    """Move the finished record (and its traceback and history) to ``*.attempt-N.*``; returns N."""
    n = record.attempt
    for stem in _ARCHIVED:
        for path in folder.glob(f"{stem}.*"):
            if ".attempt-" not in path.name and not path.name.startswith("."):
                os.replace(path, folder / f"{stem}.attempt-{n}{path.suffix}")
    return n


def prepare(folder: Path, resume: bool) -> None:
    """Clear what an interrupted attempt left, keeping the checkpoints and the logs when resuming
    from a checkpoint, and every archived attempt, the event log and the claim. A ``record.json`` still here is not a usable
    record (the caller found none): it is kept aside as ``record.unreadable-N.json``."""
    if (folder / RECORD).exists():
        n = len(list(folder.glob("record.unreadable-*.json"))) + 1
        os.replace(folder / RECORD, folder / f"record.unreadable-{n}.json")
        append_event(folder, "unreadable_record", kept_as=f"record.unreadable-{n}.json")
    resuming = resume and (folder / CHECKPOINTS / "last.ckpt").is_file()
    for path in folder.iterdir():
        keep = (
            path.name in _ALWAYS_KEPT
            or ".attempt-" in path.name
            or ".unreadable-" in path.name
            or (resume and path.name == CHECKPOINTS)
            or (resuming and path.name in _RESUMED_LOGS)
        )
        if keep:
            continue
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)


def finish(folder: Path, keep_checkpoints: bool) -> None:
    """Drop the checkpoints of a finished run unless asked to keep them."""
    if not keep_checkpoints:
        shutil.rmtree(folder / CHECKPOINTS, ignore_errors=True)


def tidy_finished(folder: Path, keep_checkpoints: bool, stale_after: float = DEFAULT_STALE_S) -> None:
    """Clean what a process killed between writing a finished run's record and cleaning up left
    behind: its claim, once stale (logged as a takeover), and the checkpoints :func:`finish`
    would have dropped. A claim that still holds (a live process) is left alone, with the
    checkpoints."""
    if (folder / CLAIM).exists():
        clear_stale(folder, stale_after)
        if (folder / CLAIM).exists():
            return
    finish(folder, keep_checkpoints)


def claimed_elsewhere(spec: Any, holder: Mapping[str, Any] | None) -> dict[str, Any]:
    """A progress entry (never stored) for a run that another live process is executing."""
    who = (holder or {}).get("owner", "another process")
    return {
        "run_id": spec.run_id,
        "task": spec.task,
        "variant_label": spec.variant_label,
        "seed": spec.seed,
        "status": "claimed",
        "reason": f"running elsewhere ({who})",
        "wall_time_s": 0.0,
        "stored": False,
    }


def unfinished_state(folder: Path, stale_after: float = DEFAULT_STALE_S) -> tuple[str, str]:
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
