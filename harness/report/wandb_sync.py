"""Offline W&B runs under the run store: find them and upload them (``ablate sync``).

Every training run logs to ``<results>/<ablation>/<profile>/<run id>/wandb/offline-run-*/`` and
every summary run (:mod:`harness.report.wandb_summary`) to ``<results>/<ablation>/<profile>/
.wandb-summary/wandb/offline-run-*/``. Uploading is W&B's own ``wandb sync`` on those folders; it
needs W&B credentials (``WANDB_API_KEY`` or ``wandb login``) and network, and marks each uploaded run with a ``.wandb.synced`` file
next to its ``.wandb`` log, so a second ``ablate sync`` uploads only what is new.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from harness.credentials import has_wandb_credentials
from harness.errors import AblateError


def _wandb_cli(*args: str) -> list[str]:
    """The ``wandb`` command line of this interpreter's W&B (not whatever ``wandb`` is on PATH)."""
    return [sys.executable, "-m", "wandb", *args]


def offline_runs(results: Path) -> list[Path]:
    """Every offline W&B run folder (``offline-run-*`` holding a ``.wandb`` log) under ``results``."""
    return sorted(p for p in Path(results).rglob("offline-run-*") if p.is_dir() and any(p.glob("*.wandb")))


def is_synced(run: Path) -> bool:
    """Whether ``wandb sync`` has uploaded this run folder (its ``.wandb.synced`` marker)."""
    return all(f.with_suffix(".wandb.synced").exists() for f in run.glob("*.wandb"))


def pending_runs(results: Path) -> list[Path]:
    """Offline runs under ``results`` not uploaded yet."""
    return [p for p in offline_runs(results) if not is_synced(p)]


def sync(results: Path, dry_run: bool = False, echo: Callable[[str], None] = print) -> int:
    """Upload the offline W&B runs under ``results`` with ``wandb sync``; returns an exit code.

    ``dry_run``: list what would be uploaded, upload nothing (no key needed). Returns 0 when
    there is nothing to do or everything uploaded, 1 when ``wandb sync`` failed.

    Raises:
        AblateError: ``results`` is not a folder, or no W&B credentials (``WANDB_API_KEY`` or
            ``wandb login``'s ``.netrc`` entry: :func:`harness.credentials.wandb_credentials`).
    """
    results = Path(results)
    if not results.is_dir():
        raise AblateError(f"--results-dir {results} is not a folder; pass the run store the runs were written to")
    runs = pending_runs(results)
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
