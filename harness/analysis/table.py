"""One comparison table: a task, a metric and a row per variant.

The unit that :mod:`harness.analysis.comparisons` builds, with the facts each row's verdict is decided from.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from harness.analysis import verdicts as vd


@dataclass
class Table:
    """One comparison: a task, a metric, and a row per variant (baseline first).

    With the facts each row's verdict is decided from.
    """

    task: str
    metric: str
    higher_is_better: bool
    family: str  # "primary (fixed design, Holm over k comparisons)" or "exploratory (BH)"
    frame: pd.DataFrame
    sesoi: float | None = None
    reference: str | None = None  # the variant of row 0 when it is not the ablation's baseline
    facts: dict[str, vd.Facts] = field(default_factory=dict)  # variant -> what its comparison established

    def name_primary(self, family: str, exploratory: Collection[str]) -> None:
        """Set :attr:`family` to the primary ``family`` (``fixed design, Holm over 2 comparisons``).

        Naming the ``exploratory`` variants the table shows apart from it.
        """
        apart = [v for v in self.frame["variant"] if v in exploratory]
        self.family = f"primary ({family}" + (
            f"; {', '.join(apart)}: exploratory, BH within the table)" if apart else ")"
        )

    def row(self, variant: str) -> dict[str, Any]:
        """The row of ``variant``, column by column (empty when the table has none)."""
        return next(iter(self.frame[self.frame["variant"] == variant].to_dict("records")), {})
