"""benchmarks/sequential.py at a small count: the family-wise error rate of the sequential rule stays at
alpha on null experiments, and it beats the fixed 8-seed design on power. Its sign-flip p is the
real comparison's (harness.analysis.paired)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from harness.analysis import paired
from harness.analysis import sequential as sq

_SPEC = importlib.util.spec_from_file_location(
    "sequential_benchmark", Path(__file__).resolve().parents[2] / "benchmarks" / "sequential.py"
)
bench = sys.modules[_SPEC.name] = importlib.util.module_from_spec(_SPEC)  # its dataclass looks itself up
_SPEC.loader.exec_module(bench)

DESIGN = sq.Design((8, 16, 24, 32), "obrien_fleming", 0.05)


@pytest.mark.parametrize("dist, m", [("normal", 1), ("t3", 3), ("skewed", 6)])
def test_the_family_wise_rate_stays_at_alpha_under_the_null(dist, m):
    r = bench.simulate(DESIGN, dist, m, 0.0, 3000, seed=11)
    assert r.interval[0] <= DESIGN.alpha, r
    assert r.family_error > 0.01  # the rule does reject: a rule that never did would pass trivially


def test_the_design_has_more_power_than_the_fixed_one_and_stops_early_on_large_effects():
    fixed = sq.Design((8,), "obrien_fleming", 0.05)
    at_sesoi, fixed_at_sesoi = (
        bench.simulate(DESIGN, "normal", 1, 1, 2000, 3),
        bench.simulate(fixed, "normal", 1, 1, 2000, 3),
    )
    assert at_sesoi.power > fixed_at_sesoi.power + 0.3
    assert bench.simulate(DESIGN, "normal", 1, 2, 2000, 3).seeds < 24  # most stop by look 2


@pytest.mark.parametrize("n", [6, 8, 12])
def test_its_sign_flip_p_is_the_comparisons(n):
    rng = np.random.default_rng(n)
    d = rng.normal(0.4, 1, (5, n))
    ours = bench.sign_flip_p(d, rng)
    real = [paired.paired_test(pd.Series(np.zeros(n)), pd.Series(row), True).p_perm for row in d]
    assert ours == pytest.approx(real, abs=1e-12)
