"""One comparison table: a task, a metric and a row per variant; the unit that
:mod:`harness.analysis.comparisons` builds and the passes of :mod:`harness.analysis.holm`,
:mod:`harness.analysis.primary_power` and :mod:`harness.analysis.untestable` mark."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd


@dataclass
class Table:
    """One comparison: a task, a metric, and a row per variant (baseline first)."""

    task: str
    metric: str
    higher_is_better: bool
    family: str  # "primary (Holm over k comparisons)" or "exploratory (BH)"
    frame: pd.DataFrame
    sesoi: float | None = None
    reference: str | None = None  # the variant of row 0 when it is not the ablation's baseline
