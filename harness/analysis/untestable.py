"""The facts that leave a comparison without a verdict.

A baseline that did not learn, an arm below the gate, a baseline at the ceiling, ``steps_to_target`` censored
(docs/statistics.md, "A baseline that did not learn, a task too easy").
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from harness.errors import TRAINED
from harness.experiment import metrics
from harness.experiment.ablation import Ablation
from harness.store.record import Record


class Unlearned(NamedTuple):
    """A baseline (or a reproduction's reference) that reached its task's convergence target on too few seeds.

    On ``reached`` seeds, not more than half of the ``planned`` ones; ``run``: the seeds it has a run of.
    """

    reached: int
    planned: int
    run: int

    @property
    def not_run(self) -> int:
        """The planned seeds it has no run of."""
        return self.planned - self.run


def unlearned_tasks(abl: Ablation, rows: pd.DataFrame, planned: int) -> dict[str, Unlearned]:
    """An :class:`Unlearned` for every task with a convergence target whose baseline did not learn it."""
    base = abl.baseline_label
    return {t: u for t, e in abl.tasks.items() if e.target is not None and (u := unlearned(rows, t, base, planned))}


def unlearned(rows: pd.DataFrame, task: str, variant: str, planned: int) -> Unlearned | None:
    """An :class:`Unlearned` when ``variant``'s runs of ``task`` reached the target on at most half the seeds.

    In the tidy ``rows``: the target reached (``target_reached`` = 1) on at most half of the ``planned`` seeds;
    else None.
    """
    mine = rows[(rows["task"] == task) & (rows["variant"] == variant)]
    target = mine[mine["metric"] == metrics.TARGET_REACHED]
    reached = int(target.loc[target["value"] >= 1, "seed"].nunique())
    return None if learned(reached, planned) else Unlearned(reached, planned, int(mine["seed"].nunique()))


def learned(reached: int, planned: int) -> bool:
    """A task is learned when its target was reached on more than half of the planned seeds."""
    return 2 * reached > planned


def passed_gate(abl: Ablation, r: Record) -> bool:
    """Whether a run finished and passed its task's gate (if it has one)."""
    gate = abl.tasks[r.task].gate if r.task in abl.tasks else None
    return r.status.trained and (gate is None or gate.passes(r.metric(gate.metric)))


def gated_out(runs: pd.DataFrame, task: str, metric: str, apply_gate: bool) -> set[str]:
    """The ids of the runs of ``task`` that a comparison of ``metric`` leaves out for the task's gate.

    Those that trained but did not pass it, when the profile applies it (``apply_gate``) and ``metric`` lies beyond L.
    """
    if not (apply_gate and metrics.beyond_training(metric)):
        return set()
    mine = runs[runs["task"] == task]
    return set(mine.loc[mine["status"].isin(TRAINED) & ~mine["passed_gate"], "run_id"])


def below_gate(runs: pd.DataFrame, task: str, metric: str, variant: str, base: str, apply_gate: bool) -> str | None:
    """Whose runs of a comparison beyond L never passed the task's gate.

    ``"baseline "``, ``""`` (the variant's), or None (both arms have a run that passed, or no gate applies).
    """
    if not (apply_gate and metrics.beyond_training(metric)):
        return None
    task_runs = runs[runs["task"] == task]
    passed = task_runs[task_runs["passed_gate"].astype(bool)].groupby("variant").size()
    if passed.get(base, 0) == 0:
        return "baseline "
    return "" if passed.get(variant, 0) == 0 else None


def seeds_at_ceiling(rows: pd.DataFrame, task: str, metric: str, variant: str, paired_with: str) -> int | None:
    """The number of seeds of ``variant`` when it scored ``metric``'s best value on every one of them, else None.

    At least 2, in the tidy ``rows``, counting only the seeds ``paired_with`` has too.
    """
    best = metrics.best_value(metric)
    if best is None:
        return None
    on = rows[(rows["task"] == task) & (rows["metric"] == metric)]
    mine = on[(on["variant"] == variant) & on["seed"].isin(on.loc[on["variant"] == paired_with, "seed"])]
    values = mine["value"].to_numpy(dtype=float)
    if values.size < 2 or not np.all(np.abs(values - best) <= 1e-12):
        return None
    return int(values.size)


def censored(rows: pd.DataFrame, task: str, variant: str, base: str) -> bool:
    """Whether neither ``variant`` nor ``base`` reached the task's target (``steps_to_target`` censored)."""
    on = rows[(rows["task"] == task) & (rows["metric"] == metrics.TARGET_REACHED)]
    reached = on.groupby("variant")["value"].max()
    return bool(reached.get(variant, 0) == 0 and reached.get(base, 0) == 0)
