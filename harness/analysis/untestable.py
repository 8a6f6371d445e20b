"""The facts that leave a comparison without a verdict (docs/statistics.md, "A baseline that did not
learn, a task too easy"): a task whose baseline missed its convergence target on most seeds, an arm
that never passed the gate, a baseline at the metric's best value, ``steps_to_target`` censored at
the step budget. The verdicts they give: :mod:`harness.analysis.verdicts`."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from harness.analysis import verdicts as vd
from harness.experiment import metrics
from harness.experiment.ablation import Ablation


class Unlearned(NamedTuple):
    """A baseline (or a reproduction's reference) that did not learn its task: it reached the
    convergence target on ``reached`` seeds, not more than half of the ``planned`` ones; ``run``:
    the seeds it has a finished run of (fewer than ``planned`` while the grid is unfinished, the
    seeds not run counting as not reached)."""

    reached: int
    planned: int
    run: int

    @property
    def not_run(self) -> int:
        return self.planned - self.run


def unlearned_tasks(abl: Ablation, rows: pd.DataFrame, planned: int) -> dict[str, Unlearned]:
    """An :class:`Unlearned` for every task with a convergence target whose baseline reached it
    (per-run metric ``target_reached`` = 1) on ``k`` seeds, not more than half of ``planned``: at
    such a scale the task was not learned, and no comparison on it gets a verdict (docs/statistics.md).
    A baseline run that did not finish, or carries no ``target_reached``, did not reach the target."""
    out = {}
    for task, entry in abl.tasks.items():
        if entry.target is None:
            continue
        reached = seeds_at_target(rows, task, abl.baseline_label)
        if not learned(reached, planned):
            out[task] = Unlearned(reached, planned, seeds_run(rows, task, abl.baseline_label))
    return out


def seeds_run(rows: pd.DataFrame, task: str, variant: str) -> int:
    """Seeds of which ``variant`` has a finished run of ``task`` (ok, diverged or failed) in the tidy ``rows``."""
    return int(rows.loc[(rows["task"] == task) & (rows["variant"] == variant), "seed"].nunique())


def seeds_at_target(rows: pd.DataFrame, task: str, variant: str) -> int:
    """Seeds on which ``variant``'s run of ``task`` reached the convergence target (per-run metric
    ``target_reached`` = 1) in the tidy ``rows``; a run without the metric did not."""
    runs = rows[(rows["task"] == task) & (rows["variant"] == variant) & (rows["metric"] == metrics.TARGET_REACHED)]
    return int(runs.loc[runs["value"] >= 1, "seed"].nunique())


def learned(reached: int, planned: int) -> bool:
    """The gating rule: a task is learned when its target was reached on most (more than half) of the
    planned seeds."""
    return 2 * reached > planned


def below_gate(runs: pd.DataFrame, task: str, metric: str, variant: str, base: str, apply_gate: bool) -> str | None:
    """Whose runs of a comparison beyond L never passed the task's gate: ``"baseline "``, ``""``
    (the variant's), or None (both arms have a run that passed, or no gate applies)."""
    if not (apply_gate and metrics.beyond_training(metric)):
        return None
    task_runs = runs[runs["task"] == task]
    if variant not in set(task_runs["variant"]):
        return None
    passed = task_runs[task_runs["passed_gate"].astype(bool)].groupby("variant").size()
    if passed.get(base, 0) == 0:
        return "baseline "
    return "" if passed.get(variant, 0) == 0 else None


def seeds_at_ceiling(
    rows: pd.DataFrame, task: str, metric: str, variant: str, paired_with: str | None = None
) -> int | None:
    """The number of seeds of ``variant`` when it scored ``metric``'s best value on every one of them
    (at least 2) in the tidy ``rows``, else None (also for a metric without a best value).
    ``paired_with``: count only the seeds on which that variant has a value too (the pairs of one
    comparison, so that the count agrees with the comparison's n while a grid is unfinished)."""
    best = metrics.best_value(metric)
    if best is None:
        return None
    on = rows[(rows["task"] == task) & (rows["metric"] == metric)]
    mine = on[on["variant"] == variant]
    if paired_with is not None:
        mine = mine[mine["seed"].isin(on.loc[on["variant"] == paired_with, "seed"])]
    values = mine["value"].to_numpy(dtype=float)
    if values.size < 2 or not np.all(np.abs(values - best) <= 1e-12):
        return None
    return int(values.size)


def undecided_at_ceiling(verdict: object) -> bool:
    """Whether a comparison verdict says nothing when its baseline is at the ceiling (identical,
    equivalent, inconclusive; ``better`` cannot happen), as opposed to ``worse``."""
    return vd.kind(verdict) in (vd.Kind.IDENTICAL, vd.Kind.EQUIVALENT, vd.Kind.INCONCLUSIVE, vd.Kind.BETTER)


def censored(rows: pd.DataFrame, task: str, variant: str, base: str) -> bool:
    """Whether neither ``variant`` nor ``base`` reached the task's target: ``steps_to_target`` is
    then the step budget for both (censored), nothing to compare."""
    reached = (
        rows[(rows["task"] == task) & (rows["metric"] == metrics.TARGET_REACHED)].groupby("variant")["value"].max()
    )
    return bool(reached.get(variant, 0) == 0 and reached.get(base, 0) == 0)
