"""Whether each run finished, as a result: the outcome tables (a run that diverged or raised is
an outcome of its variant, compared by the exact McNemar test), the reasons runs did not finish,
and the cost columns every comparison table carries."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pandas as pd

from harness.analysis import stats
from harness.analysis import verdicts as vd
from harness.analysis.table import Table
from harness.experiment import metrics
from harness.experiment.ablation import Ablation


def add_cost(frame: pd.DataFrame, task_runs: pd.DataFrame) -> None:
    """The cost columns of a table: parameters and median wall time per run, per variant (the
    median: a worker's first run also pays for its start-up, which would weigh on one variant's mean)."""
    params = task_runs.groupby("variant")["n_params"].first()
    walls = task_runs.groupby("variant")["wall_time_s"].median()
    frame["n_params"] = [params.get(v, np.nan) for v in frame["variant"]]
    frame["wall_time_s"] = [walls.get(v, np.nan) for v in frame["variant"]]


def why_not_finished(statuses: list[Any], reasons: list[Any]) -> list[tuple[str, int]]:
    """``("status: reason", count)`` of the runs that did not finish, most common first; the
    reason is cut before the last finite loss, which differs per run."""
    texts = [f"{st}: {str(r or '')[:90].split(' (last finite')[0]}" for st, r in zip(statuses, reasons) if st != "ok"]
    return Counter(texts).most_common()


def outcome_tables(
    abl: Ablation, runs: pd.DataFrame, confirmatory: bool, alpha: float, planned: int, named: set[str]
) -> list[Table]:
    """Per task where some run did not finish (or, in ``named``, a claim names ``finished``): whether each run finished, variant against baseline,
    paired by seed, by the exact McNemar test (:func:`harness.analysis.stats.outcome_compare`). A run that
    diverged or raised is an outcome of its variant (an fp16 overflow, a NaN from a fully masked
    row), not a missing value: this table is where it is compared."""
    out = []
    for task in abl.tasks:
        sub = runs[runs["task"] == task]
        # a claim reads this table even when every run finished
        if (
            sub.empty
            or ((sub["status"] == "ok").all() and task not in named)
            or abl.baseline_label not in set(sub["variant"])
        ):
            continue
        data = pd.DataFrame(
            {"variant": sub["variant"], "seed": sub["seed"], "value": (sub["status"] == "ok").astype(float)}
        )
        facts: dict[str, vd.Facts] = {}
        frame = stats.outcome_compare(
            data, baseline=abl.baseline_label, alpha=alpha, confirmatory=confirmatory, facts=facts
        )
        order = [abl.baseline_label] + [abl.label(v) for v in abl.variants() if abl.label(v) != abl.baseline_label]
        frame = frame.set_index("variant").reindex([v for v in order if v in set(frame["variant"])]).reset_index()
        frame["below_gate"], frame["not_ok"] = 0, 0
        frame["planned"] = planned
        add_cost(frame, sub)
        hib = metrics.higher_is_better(metrics.OUTCOME)
        out.append(Table(task, metrics.OUTCOME, hib, "outcome (exact McNemar, BH)", frame, facts=facts))
    return out
