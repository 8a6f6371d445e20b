"""Reuse: a run another ablation already finished, copied into a grid instead of trained again.

A run id hashes everything that determines a run's numbers
(:meth:`~harness.experiment.grid.RunSpec.payload`), not the ablation or profile that asked for it,
so a run without a record that another ablation finished (``ok``, ``stalled`` or ``diverged``:
``failed`` and ``timeout`` may depend on the machine) is copied into this grid (:func:`adopt`)
instead of trained again. ``steps_to_target`` is not in the id: a run is reused only when the
source's convergence target (its record's ``target``, else the one its ablation declares today)
equals this grid's (:func:`find_reusable`).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.store.record import Record
from harness.store.runs import HISTORY, append_event, load_record, write_record
from harness.threshold import Threshold


def find_reusable(
    results: Path,
    run_id: str,
    own: Path,
    target: Threshold | None,
    declared: Callable[[Record], Threshold | None | str],
) -> Path | None:
    """The folder of a finished, reusable run with ``run_id`` elsewhere in the store, or None.

    Never a copy: the run that was trained. Reusable: a :attr:`~harness.errors.RunStatus.result`, no tuned parameters,
    and the convergence target ``target``: its record's, or for a record made before records held it,
    ``declared(record)`` (what its ablation declares today; ``"unknown"``: never reused).
    """
    for folder in sorted(Path(results).glob(f"*/*/{run_id}")):
        if folder == own or not folder.is_dir():
            continue
        rec, _ = load_record(folder)
        usable = rec is not None and rec.status.result and not rec.tuned_params and not rec.reused_from
        # a record's target is held even as null (none); a record made before targets does not say
        if usable and (rec.target if "target" in rec.model_fields_set else declared(rec)) == target:
            return folder
    return None


def adopt(source: Path, own: Path, target: Threshold | None, **fields: Any) -> Record:
    """Copy the finished run in ``source`` into ``own`` as the run of another grid.

    Returns:
        The new record: the source's numbers, timings, versions and commit, ``fields`` (the other
        grid's ablation, profile, variant and design fingerprint), ``target`` as its convergence
        target, and ``reused_from``: the source's ``<ablation>/<profile>/<run id>``.

    Raises:
        ValueError: ``source`` holds no finished record that can be read.
    """
    rec, problem = load_record(source)
    if rec is None:
        raise ValueError(f"{source}: {problem or 'no finished record'}")
    rec = rec.model_copy(update=fields | {"target": target, "reused_from": rec.where})
    own.mkdir(parents=True, exist_ok=True)
    if (source / HISTORY).is_file():
        shutil.copyfile(source / HISTORY, own / HISTORY)
    append_event(own, "reuse", source=rec.reused_from)
    write_record(own, rec)
    return rec
