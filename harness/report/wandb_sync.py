"""Offline W&B runs under the run store: find them and upload them (``ablate sync``).

Every training run logs to ``<results>/<ablation>/<profile>/<run id>/wandb/offline-run-*/`` and
every summary run (:mod:`harness.report.wandb_summary`) to ``<results>/<ablation>/<profile>/
.wandb-summary/wandb/offline-run-*/``. Uploading is W&B's own ``wandb sync`` on those folders; it
needs W&B credentials (``WANDB_API_KEY`` or ``wandb login``) and network, and marks each uploaded run with a ``.wandb.synced`` file
next to its ``.wandb`` log, so a second ``ablate sync`` uploads only what is new.

An attempt killed and resumed leaves two folders of one W&B run id: the killed attempt's log holds
what W&B had written of it when it died (nothing but the log's header if it died within its first
block, 32 KiB), and the resumed attempt's log holds the whole curve (it logs the rows kept up to
its checkpoint first: :func:`harness.training.loop.train`). ``ablate sync`` uploads
the latest folder of each W&B run alone, and never a folder that holds nothing: the killed
attempt's folder, uploaded too, would give W&B its steps twice.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness.credentials import has_wandb_credentials
from harness.errors import AblateError

EMPTY_LOG_BYTES = 7
"""Size of a ``.wandb`` log that holds no record: W&B's header alone (``:W&B``, the key ``0xBEE1``,
a version byte). W&B writes its log a block at a time, so a process killed before the first block
was full leaves this much."""


def _wandb_cli(*args: str) -> list[str]:
    """The ``wandb`` command line of this interpreter's W&B (not whatever ``wandb`` is on PATH)."""
    return [sys.executable, "-m", "wandb", *args]


def offline_runs(results: Path) -> list[Path]:
    """Every offline W&B run folder (``offline-run-*`` holding a ``.wandb`` log) under ``results``."""
    return sorted(p for p in Path(results).rglob("offline-run-*") if p.is_dir() and any(p.glob("*.wandb")))


def is_synced(run: Path) -> bool:
    """Whether ``wandb sync`` has uploaded this run folder (its ``.wandb.synced`` marker)."""
    return all(f.with_suffix(".wandb.synced").exists() for f in run.glob("*.wandb"))


def is_empty(run: Path) -> bool:
    """Whether the run folder's ``.wandb`` logs hold no record (:data:`EMPTY_LOG_BYTES`)."""
    return all(f.stat().st_size <= EMPTY_LOG_BYTES for f in run.glob("*.wandb"))


def wandb_id(run: Path) -> str:
    """The W&B run id of an ``offline-run-<date>_<time>-<id>`` folder."""
    return run.name.split("-", 3)[-1]


@dataclass(frozen=True)
class Waiting:
    """The offline runs of a store not uploaded yet, sorted out: ``upload`` what ``ablate sync``
    uploads; ``empty`` folders that hold nothing; ``superseded`` earlier folders of a W&B run
    that a later folder of it holds whole (an attempt killed, then resumed)."""

    upload: list[Path]
    empty: list[Path]
    superseded: list[Path]


def waiting_runs(results: Path) -> Waiting:
    """Offline runs under ``results`` not uploaded yet, sorted out (:class:`Waiting`). An earlier
    folder is superseded only when the latest folder of its W&B run holds the replayed curve
    (:data:`REPLAYED`); a store resumed before replays existed keeps every folder to upload."""
    runs = offline_runs(results)
    empty = {p for p in runs if is_empty(p)}
    latest = {wandb_id(p): p for p in sorted(set(runs) - empty, key=lambda p: p.name)}  # names sort by date, time
    pending = [p for p in runs if not is_synced(p) and p not in empty]

    def superseded(p: Path) -> bool:
        last = latest[wandb_id(p)]
        return last != p and (last / REPLAYED).is_file()

    return Waiting(
        upload=[p for p in pending if not superseded(p)],
        empty=[p for p in runs if not is_synced(p) and p in empty],
        superseded=[p for p in pending if superseded(p)],
    )


REPLAYED = "ablate-replayed.json"
"""Written by the training loop into the offline folder of a resumed attempt that replayed the
earlier attempts' curve (``harness.training.loop.REPLAYED``: the same name)."""


def sync(results: Path, dry_run: bool = False, echo: Callable[[str], None] = print) -> int:
    """Upload the offline W&B runs under ``results`` with ``wandb sync``; returns an exit code.

    ``dry_run``: list what would be uploaded, upload nothing (no key needed). Folders that hold
    nothing and folders superseded by a later one of their W&B run (:class:`Waiting`) are not
    uploaded, and said so in one line each. Returns 0 when there is nothing to do or everything
    uploaded, 1 when ``wandb sync`` failed.

    Raises:
        AblateError: ``results`` is not a folder, or no W&B credentials (``WANDB_API_KEY`` or
            ``wandb login``'s ``.netrc`` entry: :func:`harness.credentials.wandb_credentials`).
    """
    results = Path(results)
    if not results.is_dir():
        raise AblateError(f"--results-dir {results} is not a folder; pass the run store the runs were written to")
    waiting = waiting_runs(results)
    if waiting.empty:
        echo(
            f"skipped {len(waiting.empty)} empty offline W&B folder(s), e.g. {waiting.empty[0].relative_to(results)}: "
            "an attempt killed before W&B wrote a record (its resumed attempt logs the whole curve)"
        )
    if waiting.superseded:
        echo(
            f"skipped {len(waiting.superseded)} offline W&B folder(s) of killed attempts, e.g. "
            f"{waiting.superseded[0].relative_to(results)}: the resumed attempt's folder of the same W&B run "
            "holds their curve"
        )
    runs = waiting.upload
    if not runs:
        echo(f"no offline W&B runs wait under {results}")
        return 0
    if dry_run:
        for run in runs:
            echo(str(run.relative_to(results)))
        echo(f"{len(runs)} offline W&B run(s) would be uploaded from {results}")
        return 0
    if not has_wandb_credentials():
        raise AblateError(
            f"uploading needs W&B credentials, WANDB_API_KEY or `wandb login` (and network): {len(runs)} "
            f"offline W&B run(s) wait under {results}; set one and run `ablate sync` again (--dry-run lists them)"
        )
    env = {k: v for k, v in os.environ.items() if k != "WANDB_MODE"}  # an exported offline mode must not block it
    echo(f"uploading {len(runs)} offline W&B run(s) from {results}")
    done = subprocess.run(_wandb_cli("sync", "--yes", *map(str, runs)), env=env)
    return 0 if done.returncode == 0 else 1
