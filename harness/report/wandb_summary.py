"""One W&B summary run per (ablation, profile): the comparison tables, the figures, the claims.

The training runs of a grid sit in W&B group ``<ablation>/<profile>`` (job type: the task; tags:
variant, ``seed:N``, task, profile; summary: the store's metrics and status). The summary run
joins that group with job type ``summary`` and logs, in one step:

- ``compare/<task>/<metric>``: every comparison table of :class:`~harness.analysis.comparisons.Analysis` as a
  ``wandb.Table``, the columns of ``Table.frame`` with its raw values (NaN written as null,
  +/-inf as the strings ``"Infinity"`` / ``"-Infinity"``: :mod:`harness.encode`);
- ``figures/<file stem>``: each PNG figure as a ``wandb.Image``;
- ``claims``: a table of claim, verdict and evidence; each verdict also as summary ``claim/<id>``.

Its folder is ``<results>/<ablation>/<profile>/.wandb-summary/`` (the store's reader skips dot
folders). Only the latest summary is kept there: a new one replaces the folder, so ``ablate
sync`` never uploads stale comparisons (one already uploaded stays in W&B as an older run).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from harness.analysis.claims import claim_verdict
from harness.analysis.comparisons import Analysis, analyse
from harness.analysis.guards import Guards, guards_of
from harness.analysis.table import Table
from harness.encode import json_safe
from harness.experiment import claims as claims_mod
from harness.experiment.selection import Selection
from harness.report.markdown import report_path

SUMMARY_DIR = ".wandb-summary"


def summary_dir(results: Path, ablation: str, profile: str) -> Path:
    return Path(results) / ablation / profile / SUMMARY_DIR


def table_key(table: Table) -> str:
    return f"compare/{table.task}/{table.metric}"


def _cell(value: Any) -> Any:
    """A strict-JSON cell (:func:`harness.encode.json_safe`): numpy scalars as Python numbers,
    NaN and pandas NA as None, +/-inf as ``"Infinity"`` / ``"-Infinity"``."""
    return json_safe(value)


def table_rows(table: Table) -> tuple[list[str], list[list[Any]]]:
    """The columns and rows logged for one comparison table."""
    frame = table.frame
    return [str(c) for c in frame.columns], [[_cell(v) for v in row] for row in frame.itertuples(index=False)]


def claim_rows(analysis: Analysis, guards: Guards | None = None) -> list[list[str]]:
    """``[claim id, verdict, evidence]`` for every claim the ablation tests (as in the report: a
    verdict waits for the controls that guard the claim). ``guards``: the report's, when it has
    evaluated them; None: evaluated from the same store here."""
    claims = claims_mod.load_claims()
    if guards is None:
        guards = guards_of(list(analysis.ablation.claims), analysis.results)
    rows = []
    for cid in analysis.ablation.claims:
        verdict, evidence = claim_verdict(claims.get(cid, {}), analysis, guards.get(cid, ()))
        rows.append([cid, verdict, "\n".join(evidence)])
    return rows


def store_profile(analysis: Analysis) -> str:
    """The profile the runs are stored under (``cpu+tuned`` for ``ablate run --tuned``)."""
    profiles = {r.profile for r in analysis.scan.records}
    return profiles.pop() if len(profiles) == 1 else analysis.profile


def log_summary(
    analysis: Analysis,
    figures: Sequence[Path] = (),
    mode: str = "offline",
    results: Path | None = None,
    guards: Guards | None = None,
) -> Path | None:
    """Log the summary run of one analysed ablation/profile; returns its W&B run folder.

    Args:
        analysis: :func:`harness.analysis.comparisons.analyse` of the ablation and profile.
        figures: PNG files to log (e.g. the report's ``reports/figures/<stem>-*.png``).
        mode: ``off`` (log nothing, return None), ``offline`` or ``online``.
        results: the run store (default ``analysis.results``); the run goes under it.
        guards: the controls guarding the claims, with their outcomes, as the report evaluated
            them (:func:`harness.analysis.guards.guards_of`); None: evaluated here.
    """
    if mode == "off":
        return None
    import wandb

    abl, profile = analysis.ablation, store_profile(analysis)
    folder = summary_dir(results or analysis.results, abl.name, profile)
    # only the latest summary waits for `ablate sync`; the previous one goes once a new run has
    # started (a failed wandb.init, e.g. --wandb online without a key, must not lose it)
    stale = [*(p for p in (folder / "wandb").glob("*run-*") if not p.is_symlink()), folder / "data"]
    folder.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("WANDB_SILENT", "true")
    claims = claim_rows(analysis, guards)
    run = wandb.init(
        dir=str(folder),
        project=os.environ.get("WANDB_PROJECT", "ablate"),
        mode=mode,
        group=f"{abl.name}/{profile}",
        job_type="summary",
        name=f"{abl.name}/{profile} summary",
        tags=["summary", profile[:64]],
        reinit="finish_previous",
        config={
            "ablation": abl.model_dump(mode="json"),
            "profile": profile,
            "runs": len(analysis.runs),
            "runs_ok": int((analysis.runs["status"] == "ok").sum()),
        },
    )
    for old in stale:
        shutil.rmtree(old, ignore_errors=True)
    try:
        with _staging_in(folder):
            payload: dict[str, Any] = {}
            for table in analysis.tables:
                columns, rows = table_rows(table)
                # mixed types: a numeric column may hold "Infinity" (harness.encode)
                payload[table_key(table)] = wandb.Table(columns=columns, data=rows, allow_mixed_types=True)
            for fig in figures:
                payload[f"figures/{Path(fig).stem}"] = wandb.Image(str(fig))
            if claims:
                payload["claims"] = wandb.Table(columns=["claim", "verdict", "evidence"], data=claims)
            run.log(payload)
        run.summary.update({f"claim/{cid}": verdict for cid, verdict, _ in claims})
        return Path(run.settings.sync_dir)
    finally:
        wandb.finish()


@contextmanager
def _staging_in(folder: Path) -> Iterator[None]:
    """W&B stages each logged table as an artifact file under ``$WANDB_DATA_DIR`` (default
    ``~/.local/share/wandb``) until ``wandb sync`` uploads it: keep those files in the summary
    folder, with the run, unless the user chose a data dir."""
    if os.environ.get("WANDB_DATA_DIR"):
        yield
        return
    os.environ["WANDB_DATA_DIR"] = str(folder.resolve() / "data")
    try:
        yield
    finally:
        os.environ.pop("WANDB_DATA_DIR", None)


def log_report(
    sel: Selection,
    results: Path,
    out: Path,
    mode: str = "offline",
    analysis: Analysis | None = None,
    guards: Guards | None = None,
) -> Path | None:
    """:func:`log_summary` of what ``ablate report`` wrote for the selection: its analysis
    (``analysis``, or the store read again when None), its controls' outcomes (``guards``, or
    evaluated again when None) and its PNG figures (``out/figures/<report stem>-*.png``)."""
    if mode == "off":
        return None

    analysis = analysis or analyse(sel, results)
    stem = report_path(sel.ablation, sel.profile, out).stem
    figures = sorted((Path(out) / "figures").glob(f"{stem}-*.png"))
    return log_summary(analysis, figures, mode, results, guards)
