"""Offline W&B runs under the run store: the summary run of a report, and their upload (``ablate sync``).

Training runs log to ``<results>/<ablation>/<profile>/<run id>/wandb/offline-run-*/``, a report's
summary run to ``<results>/<ablation>/<profile>/.wandb-summary/wandb/offline-run-*/``. Uploading is
W&B's own ``wandb sync`` (credentials and network needed), which marks each uploaded run with a
``.wandb.synced`` file. An attempt killed and resumed leaves two folders of one W&B run id; the
resumed one holds the whole curve when it replayed it (:data:`REPLAYED`, written by
:func:`harness.training.loop.train`), and only it is uploaded: W&B would get the steps twice.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from harness.credentials import has_wandb_credentials
from harness.errors import AblateError

REPLAYED = "ablate-replayed.json"
"""The mark of an offline W&B folder into which a resumed attempt replayed the earlier attempts' curve."""
EMPTY_LOG_BYTES = 7
"""Size of a ``.wandb`` log that holds no record: W&B's header alone (``:W&B``, the key ``0xBEE1``,
a version byte)."""
SUMMARY_DIR = ".wandb-summary"

Rows = tuple[list[str], list[list[object]]]
"""A W&B table: its columns and rows (strict-JSON cells)."""


def summary_dir(results: Path, ablation: str, profile: str) -> Path:
    """The folder of the summary W&B run of a report: ``<results>/<ablation>/<profile>/.wandb-summary``."""
    return Path(results) / ablation / profile / SUMMARY_DIR


def log_summary_run(
    folder: Path,
    group: str,
    config: dict[str, object],
    tables: dict[str, Rows],
    figures: Sequence[Path],
    claims: list[list[str]],
    mode: str,
) -> Path:
    """Log one summary run in ``folder`` (group ``group``, job type ``summary``) in one step.

    The step holds ``tables``, ``figures`` (``figures/<stem>``) and ``claims`` (each verdict also as
    summary ``claim/<id>``); returns its W&B run folder. The previous summary goes once the new run
    has started (a failed ``wandb.init`` keeps it), so ``ablate sync`` never uploads stale
    comparisons.
    """
    import wandb

    stale = [*(p for p in (folder / "wandb").glob("*run-*") if not p.is_symlink()), folder / "data"]
    folder.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("WANDB_SILENT", "true")
    profile = group.split("/", 1)[1]
    run = wandb.init(
        dir=str(folder),
        project=os.environ.get("WANDB_PROJECT", "ablate"),
        mode=mode,
        group=group,
        job_type="summary",
        name=f"{group} summary",
        tags=["summary", profile[:64]],
        reinit="finish_previous",
        config=config,
    )
    for old in stale:
        shutil.rmtree(old, ignore_errors=True)
    # W&B stages each logged table under $WANDB_DATA_DIR until `wandb sync` uploads it: in the
    # summary folder, with the run, unless the user chose a data dir
    staging = not os.environ.get("WANDB_DATA_DIR")
    if staging:
        os.environ["WANDB_DATA_DIR"] = str(folder.resolve() / "data")
    try:
        # mixed types: a numeric column may hold "Infinity" (harness.encode)
        payload = {k: wandb.Table(columns=c, data=r, allow_mixed_types=True) for k, (c, r) in tables.items()}
        payload |= {f"figures/{Path(fig).stem}": wandb.Image(str(fig)) for fig in figures}
        if claims:
            payload["claims"] = wandb.Table(columns=["claim", "verdict", "evidence"], data=claims)
        run.log(payload)
        run.summary.update({f"claim/{cid}": verdict for cid, verdict, _ in claims})
        return Path(run.settings.sync_dir)
    finally:
        if staging:
            os.environ.pop("WANDB_DATA_DIR", None)
        wandb.finish()


def offline_runs(results: Path) -> list[Path]:
    """Every offline W&B run folder (``offline-run-*`` holding a ``.wandb`` log) under ``results``."""
    return sorted(p for p in Path(results).rglob("offline-run-*") if p.is_dir() and any(p.glob("*.wandb")))


def _wandb_id(run: Path) -> str:
    return run.name.split("-", 3)[-1]  # offline-run-<date>_<time>-<id>


def sync(results: Path, dry_run: bool = False, echo: Callable[[str], None] = print) -> int:
    """Upload the offline W&B runs under ``results`` with ``wandb sync`` (``dry_run``: list them).

    A folder waits while one of its ``.wandb`` logs has no ``.wandb.synced`` mark beside it. Two
    kinds of waiting folder are set aside and said in one line each (through ``echo``): the empty
    ones, every log no larger than :data:`EMPTY_LOG_BYTES` (W&B's header alone), and the superseded
    ones, whose W&B run id's latest non-empty folder (by name: date and time) is another one,
    holding :data:`REPLAYED`. Returns 0, or 1 when ``wandb sync`` failed.

    Raises:
        AblateError: ``results`` not a folder, or no W&B credentials (when runs wait, outside a dry
            run).
    """
    results = Path(results)
    if not results.is_dir():
        raise AblateError(f"--results-dir {results} is not a folder; pass the run store the runs were written to")
    found = offline_runs(results)
    empty = {p for p in found if all(f.stat().st_size <= EMPTY_LOG_BYTES for f in p.glob("*.wandb"))}
    latest = {_wandb_id(p): p for p in sorted(set(found) - empty, key=lambda p: p.name)}  # names sort by date, time
    waiting = [p for p in found if not all(f.with_suffix(".wandb.synced").exists() for f in p.glob("*.wandb"))]
    runs = [p for p in waiting if p not in empty]
    superseded = [p for p in runs if latest[_wandb_id(p)] != p and (latest[_wandb_id(p)] / REPLAYED).is_file()]
    if skipped := [p for p in waiting if p in empty]:
        echo(
            f"skipped {len(skipped)} empty offline W&B folder(s), e.g. {skipped[0].relative_to(results)}: "
            "an attempt killed before W&B wrote a record (its resumed attempt logs the whole curve)"
        )
    if superseded:
        echo(
            f"skipped {len(superseded)} offline W&B folder(s) of killed attempts, e.g. "
            f"{superseded[0].relative_to(results)}: the resumed attempt's folder of the same W&B run "
            "holds their curve"
        )
    runs = [p for p in runs if p not in superseded]
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
    # this interpreter's W&B, not whatever `wandb` is on PATH
    done = subprocess.run([sys.executable, "-m", "wandb", "sync", "--yes", *map(str, runs)], env=env)
    return 0 if done.returncode == 0 else 1
