"""Runs that another ablation already made: the same run id is the same computation.

A run id hashes everything that determines a run's numbers (:meth:`harness.experiment.grid.RunSpec.payload`),
not the ablation or profile that asked for it, so the baseline of one ablation is often, to the
bit, a run of another (``qkv_sharing``'s separate projections at seed 0 are ``head_split_control``'s
correct split at seed 0). :func:`adopt` copies such a finished run into the grid that needs it
(``reused_from`` in the record, a ``reuse`` event in ``events.jsonl``) instead of training it again.

One number is not in the id: ``steps_to_target`` depends on the ablation's convergence target, so
a run is reused only when the source's target (its record's ``target``, else the one its ablation
declares today) equals this grid's. Only outcomes that are results (``ok``, ``diverged``) are
reused; ``failed`` and ``timeout`` may depend on the machine.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from harness.execution.locks import append_event
from harness.experiment import ablation as ablation_mod
from harness.store.record import Record
from harness.store.runs import load_record, write_record

REUSABLE = ("ok", "diverged")


def target_of(spec_target: Any) -> dict[str, Any] | None:
    """A :class:`~harness.experiment.ablation.Threshold` (or None) as the plain dict records hold."""
    return spec_target.model_dump(mode="json") if spec_target is not None else None


def _source_target(rec: Record) -> dict[str, Any] | None | str:
    """The target the source run was measured against; ``"unknown"`` when it cannot be told."""
    if "target" in rec:
        return rec.target
    try:
        entry = ablation_mod.load(rec.ablation).tasks.get(rec.task)
    except Exception:  # noqa: BLE001  a source ablation that no longer loads is simply not reused
        return "unknown"
    return target_of(entry.target) if entry is not None else "unknown"


def find(results: Path, run_id: str, own: Path, target: dict[str, Any] | None) -> Path | None:
    """The folder of a finished, reusable run with ``run_id`` elsewhere in the store (never a copy:
    the run that was trained), or None."""
    for folder in sorted(Path(results).glob(f"*/*/{run_id}")):
        if folder == own or not folder.is_dir():
            continue
        rec, _ = load_record(folder)
        usable = rec is not None and rec.status in REUSABLE and not rec.tuned_params and not rec.reused_from
        if usable and _source_target(rec) == target:
            return folder
    return None


def adopt(spec: Any, source: Path, own: Path, target: dict[str, Any] | None) -> Record:
    """Copy the finished run in ``source`` into ``own`` as ``spec``'s run; returns the new record:
    the source's numbers, timings, versions and commit, ``spec``'s ablation, profile and variant,
    and ``reused_from``: the source's ``<ablation>/<profile>/<run id>``."""
    rec, problem = load_record(source)
    if rec is None:
        raise ValueError(f"{source}: {problem or 'no finished record'}")
    origin = rec.where
    rec = rec.model_copy(
        update={
            "ablation": spec.ablation,
            "profile": spec.profile,
            "variant": spec.variant,
            "variant_label": spec.variant_label,
            "target": target,
            "reused_from": origin,
        }
    )
    own.mkdir(parents=True, exist_ok=True)
    if (source / "history.csv").is_file():
        shutil.copyfile(source / "history.csv", own / "history.csv")
    append_event(own, "reuse", source=origin)
    write_record(own, rec)
    return rec
