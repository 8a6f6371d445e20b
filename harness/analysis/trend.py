"""A trend along an ordered axis (docs/statistics.md, "Trends along an axis"): the slope of a paired difference.

A claim whose words name a condition that grows ("especially in deeper stacks", "beyond the training length", "as
heads get fewer") is tested by the slope of the paired difference along that axis. Per seed, the difference between
the two arms at each level of the axis (oriented: + = the variant better) is regressed on the level (or its log2);
the slopes, one per seed, are tested against 0 as the paired comparisons are (the t-test and the exact sign-flip
test, both needed for a direction), and decided by the same rules (:data:`harness.analysis.verdicts.RULES`):
``better`` means the variant's advantage grows along the axis, ``worse`` that it shrinks (its disadvantage grows).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from harness.analysis import stats, untestable
from harness.analysis import verdicts as vd
from harness.analysis.table import Table
from harness.experiment import metrics
from harness.experiment.ablation import Ablation
from harness.experiment.claims import Evidence
from harness.experiment.declaration import Profile


@dataclass(frozen=True)
class Level:
    """One level of the axis: its value, and the metric and arms compared there."""

    value: float
    metric: str
    variant: str
    against: str


def slopes(rows: pd.DataFrame, task: str, levels: Sequence[Level], higher_is_better: bool, log2: bool) -> pd.Series:
    """Per seed (the index), the least-squares slope of the oriented difference ``variant - against`` on the level.

    The difference: + = the variant better; ``log2``: on log2 of the level; over the seeds with a value at every
    level; ``rows``: tidy metric rows (task, metric, variant, seed, value).
    """
    sign = 1.0 if higher_is_better else -1.0
    on = rows[rows["task"] == task]
    diffs = {}
    for lv in levels:
        at = on[on["metric"] == lv.metric]
        v = at[at["variant"] == lv.variant].set_index("seed")["value"].astype(float)
        b = at[at["variant"] == lv.against].set_index("seed")["value"].astype(float)
        diffs[lv.value] = sign * (v - b)
    frame = pd.DataFrame(diffs).dropna()
    x = np.array([np.log2(v) if log2 else v for v in frame.columns], dtype=float)
    return pd.Series(slope_of(frame.to_numpy(float), x), index=frame.index, dtype=float)


def slope_of(y: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The least-squares slope of each row of ``y`` (seeds x levels) on ``x`` (levels)."""
    xc = x - x.mean()
    return (y - y.mean(axis=-1, keepdims=True)) @ xc / float(xc @ xc)


def against_zero(
    per_seed: pd.Series, base: str, variant: str, sesoi: float | None, alpha: float, confirmatory: bool, **context
) -> tuple[pd.DataFrame, vd.Facts]:
    """The slopes tested against 0 as every comparison is (:func:`harness.analysis.stats.compare`), a family of one.

    The rows of ``base`` (0 at each seed) and ``variant`` (``delta``: the mean slope; ``verdict``: decided), and
    the variant's :class:`~harness.analysis.verdicts.Facts`; TOST at ±``sesoi`` per unit of the axis;
    ``context``: the other facts (learning, gate, planned).
    """
    seeds = list(per_seed.index) or [-1]  # no seed with a value at every level: no pair, too few pairs
    values = pd.DataFrame({"variant": [base] * len(seeds) + [variant] * len(seeds), "seed": seeds * 2})
    values["value"] = [0.0] * len(seeds) + list(per_seed.reindex(seeds))
    facts: dict[str, vd.Facts] = {}
    how = {"sesoi": sesoi, "alpha": alpha, "confirmatory": confirmatory, "facts": facts}
    frame = stats.compare(values, baseline=base, higher_is_better=True, **how)
    ci = (float(frame.loc[1, "delta_ci_low"]), float(frame.loc[1, "delta_ci_high"]))
    decided = replace(facts[variant], delta_ci=ci, **context)
    frame.loc[1, "verdict"] = vd.decide(decided)
    return frame, decided


def levels(abl: Ablation, ev: Evidence) -> list[Level]:
    """The levels of an evidence entry's trend: the metric and arms compared at each."""
    tr, base = ev.trend, ev.against or abl.baseline_label
    n = len(tr.levels)
    metrics_ = tr.metrics or [ev.metric] * n
    variants, against = tr.variants or [ev.variant] * n, tr.against or [base] * n
    return [Level(*lv) for lv in zip(tr.levels, metrics_, variants, against)]


def table(
    ev: Evidence,
    abl: Ablation,
    settings: Profile,
    all_runs: pd.DataFrame,
    rows: pd.DataFrame,
    unlearned: untestable.Unlearned | None,
    planned: int,
    alpha: float,
) -> Table | None:
    """The slope of ``ev``'s paired difference along its axis against 0: a one-row table, its own family.

    Decided by :data:`~harness.analysis.verdicts.RULES` with the facts of every comparison (``unlearned``: the
    task's baseline did not learn; the gate beyond L); ``all_runs`` and ``rows``: an analysis's runs and tidy rows
    (:class:`harness.analysis.comparisons.Analysis`); None without a run of each arm.
    """
    points, task = levels(abl, ev), ev.task
    runs = all_runs[all_runs["task"] == task]
    arms = {lv.variant for lv in points} | {lv.against for lv in points}
    if not arms <= set(runs["variant"]):
        return None
    # as every comparison beyond L: runs below the task's gate are left out, at every level of a trend beyond L
    gated = set().union(*(untestable.gated_out(runs, task, lv.metric, settings.apply_gate) for lv in points))
    rows = rows[~rows["run_id"].isin(gated)]
    hib = metrics.higher_is_better(points[0].metric)
    per_seed = slopes(rows, task, points, hib, ev.trend.log2)
    entry = abl.tasks[task]

    def stem(metric: str) -> str:  # acc@x2 -> acc: the primary's sesoi holds for its metric at every length
        return (metrics.length_of(metric) or (metric, 1))[0]

    sesoi = entry.primary.sesoi if {stem(lv.metric) for lv in points} == {stem(entry.primary.metric)} else None
    confirmatory = settings.confirmatory
    gate = [
        untestable.below_gate(all_runs, task, lv.metric, lv.variant, lv.against, confirmatory and settings.apply_gate)
        for lv in points
    ]
    base = f"{points[0].against} (no trend)"
    frame, decided = against_zero(
        per_seed,
        base,
        ev.variant,
        sesoi,
        alpha,
        confirmatory,
        unlearned=unlearned if confirmatory else None,
        below_gate=next((g for g in gate if g is not None), None),
        planned=planned,
    )
    axis = (
        f"slope along {ev.trend.axis} ({'log2 ' if ev.trend.log2 else ''}{', '.join(f'{lv.value:g}' for lv in points)})"
    )
    return Table(
        task, ev.metric, True, f"{axis}, its own family", frame, sesoi, reference=base, facts={ev.variant: decided}
    )
