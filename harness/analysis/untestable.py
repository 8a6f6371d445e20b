"""Comparisons that get no verdict, and the words that say why (:mod:`harness.analysis.verdicts`):
fewer than 2 seeds paired with the baseline (``too few pairs``); ``steps_to_target`` where neither
arm reached the target (censored at the step budget); a task whose baseline missed its convergence
target on most seeds, or a comparison beyond L where an arm never passed the task's gate
(``not learned``); a baseline at the metric's best value on every seed (``at ceiling``). Each marks the rows of a :class:`~harness.analysis.table.Table` the
statistics would otherwise have judged."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from harness.analysis import verdicts as vd
from harness.analysis.table import Table
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


def mark_not_learned(
    table: Table, unlearned: Unlearned | None, runs: pd.DataFrame, apply_gate: bool, planned: int
) -> None:
    """No verdict where the task was not learned: every comparison of a task whose baseline missed
    its target on most seeds reads ``not learned (k/n seeds reached target)``; a comparison beyond L
    where the variant (or the baseline) has no run that passed the gate reads ``not learned (0/n
    passed the gate)`` instead of ``too few pairs``."""
    if unlearned is not None:
        table.frame.loc[table.frame.index[1:], "verdict"] = vd.not_learned_target(*unlearned)
        return
    if not (apply_gate and metrics.beyond_training(table.metric)):
        return
    task_runs = runs[runs["task"] == table.task]
    passed = task_runs[task_runs["passed_gate"].astype(bool)].groupby("variant").size()
    ran = set(task_runs["variant"])
    base = table.frame["variant"].iloc[0]
    for i, variant in enumerate(table.frame["variant"]):
        if not i or variant not in ran:
            continue
        if passed.get(base, 0) == 0:
            table.frame.loc[i, "verdict"] = vd.not_learned_gate(0, planned, "baseline ")
        elif passed.get(variant, 0) == 0:
            table.frame.loc[i, "verdict"] = vd.not_learned_gate(0, planned)


_UNDECIDED_AT_CEILING = (
    vd.Kind.IDENTICAL,
    vd.Kind.EQUIVALENT,
    vd.Kind.INCONCLUSIVE,
    vd.Kind.UNDERPOWERED,
    vd.Kind.BETTER,
)


def mark_ceiling(table: Table, rows: pd.DataFrame) -> None:
    """No verdict from a task too easy at this scale: where the baseline scored the metric's best
    value (:func:`harness.experiment.metrics.best_value`, 1 for accuracy) on every seed, no variant
    can be better, and a variant that also reached it, or came within the smallest effect of
    interest, says nothing about the claim; such a comparison (identical, equivalent,
    inconclusive, underpowered) reads ``at ceiling (baseline 1 on all n seeds)``. ``worse`` stands:
    falling below a baseline at the ceiling is an effect the task did show. The seeds are those of
    each comparison's pairs, so n agrees with the table's n while a grid is unfinished."""
    if "verdict" not in table.frame:  # no variant beside the baseline has a value
        return
    base = table.frame["variant"].iloc[0]
    for i, (variant, verdict) in enumerate(zip(table.frame["variant"], table.frame["verdict"], strict=True)):
        if not i or not undecided_at_ceiling(verdict):
            continue
        n = seeds_at_ceiling(rows, table.task, table.metric, base, paired_with=variant)
        if n is not None:  # n counts the seeds of this comparison's pairs, as its n does
            table.frame.loc[table.frame.index[i], "verdict"] = vd.at_ceiling(metrics.best_value(table.metric), n)


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
    equivalent, inconclusive, underpowered; ``better`` cannot happen), as opposed to ``worse``."""
    return vd.kind(verdict) in _UNDECIDED_AT_CEILING


def mark_censored(table: Table, rows: pd.DataFrame) -> None:
    """``steps_to_target`` of a run that never reached its target is the step budget (censored):
    where neither the baseline nor the variant reached it, there is nothing to compare."""
    reached = (
        rows[(rows["task"] == table.task) & (rows["metric"] == metrics.TARGET_REACHED)]
        .groupby("variant")["value"]
        .max()
    )
    base = table.frame["variant"].iloc[0]
    for i, variant in enumerate(table.frame["variant"]):
        if i and reached.get(variant, 0) == 0 and reached.get(base, 0) == 0:
            table.frame.loc[i, "verdict"] = vd.CENSORED


def mark_too_few(table: Table) -> None:
    """No test, hence no verdict, for a variant with fewer than 2 seeds paired with the baseline."""
    if "n_pairs" not in table.frame:
        return
    few = table.frame["n_pairs"].fillna(0).astype(int) < 2
    few.iloc[0] = False  # the baseline row
    table.frame.loc[few, "verdict"] = vd.TOO_FEW
