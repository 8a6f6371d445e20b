"""Display of a comparison table: a bounded metric's descriptive CI stays within its bounds."""

from __future__ import annotations

import math

import pandas as pd

from harness.analysis import verdicts as vd
from harness.analysis.table import Table
from harness.report.tables import bounds, formatted


def _table(metric: str, hib: bool, low: float, high: float) -> Table:
    frame = pd.DataFrame(
        [
            {"variant": "a", "verdict": vd.BASELINE, "n": 3, "mean": 0.99, "sd": 0.01, "ci_low": low, "ci_high": high},
            {
                "variant": "b",
                "n": 3,
                "mean": 0.5,
                "ci_low": 0.4,
                "ci_high": 0.6,
                "delta": 0.1,
                "delta_ci_low": -0.2,
                "delta_ci_high": 1.3,
            },
        ]
    )
    return Table("copy", metric, hib, "primary", frame, None)


def test_an_accuracy_ci_is_clipped_to_0_1_and_delta_is_not():
    """[0.9553, 1.01] read past the best value an accuracy can take; the CI of Δ is a difference."""
    assert bounds("acc@x1", True) == (0.0, 1.0) and bounds("exact@x2", True) == (0.0, 1.0)
    rows = formatted(_table("acc@x1", True, 0.9553, 1.01))
    assert rows.loc[0, "95% CI"] == "[0.9553, 1]"
    assert rows.loc[1, "95% CI of Δ"] == "[-0.2, 1.3]"
    assert formatted(_table("acc@x1", True, -0.05, 0.3)).loc[0, "95% CI"] == "[0, 0.3]"


def test_an_unbounded_metric_is_left_alone():
    assert bounds("loss@x1", False) == (None, None)
    assert formatted(_table("loss@x1", False, -0.5, 1.01)).loc[0, "95% CI"] == "[-0.5, 1.01]"
    assert formatted(_table("acc@x1", True, math.nan, math.nan)).loc[0, "95% CI"] == "[–, –]"
