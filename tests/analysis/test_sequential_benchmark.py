"""benchmarks/sequential.py at a small count: the rule keeps the family's error rate on skewed, bimodal,
heavy-tailed and tied differences, over every verdict kind, and keeps its power; the benchmark's inputs
to the decision code are the comparison code's (harness.analysis.paired, harness.analysis.looks)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from harness.analysis import looks, paired
from harness.analysis import sequential as sq

_SPEC = importlib.util.spec_from_file_location(
    "sequential_benchmark", Path(__file__).resolve().parents[2] / "benchmarks" / "sequential.py"
)
bench = sys.modules[_SPEC.name] = importlib.util.module_from_spec(_SPEC)  # its dataclass looks itself up
_SPEC.loader.exec_module(bench)

OBF = sq.Design((8, 16, 24, 32), "obrien_fleming", 0.05)
POCOCK = sq.Design((8, 16, 24, 32), "pocock", 0.05)
NO_FUTILITY = sq.Design(OBF.looks, OBF.spending, OBF.alpha, futility=False)


@pytest.mark.parametrize(
    "design, dist, effects",
    [
        (OBF, "lognormal 1", (0, 0, 0, 0)),  # the t-test alone: 0.24
        (POCOCK, "lognormal 1", (0,)),  # the t-test alone: 0.15
        (NO_FUTILITY, "normal", (1, 1, 1, 1)),  # false equivalence at +sesoi; recycled levels gave 0.093
        (NO_FUTILITY, "lognormal 0.5", (0, 0, 1, 1)),
    ],
)
def test_the_family_wise_rate_over_every_verdict_kind_stays_at_alpha(design, dist, effects):
    r = bench.simulate(design, dist, effects, 1500, seed=11)
    assert r.interval[0] <= design.alpha, r


def test_the_rule_rejects_and_keeps_its_power_at_the_sesoi():
    null = bench.simulate(OBF, "normal", (0,), 2000, seed=3)
    assert null.rate > 0.02  # the rule does reject: a rule that never did would pass trivially
    at_sesoi = bench.simulate(OBF, "normal", (1,), 2000, seed=3)
    assert at_sesoi.power > 0.68 and at_sesoi.seeds < 29  # 0.74 at 10,000 experiments


def test_its_inputs_are_the_comparison_codes():
    """t, mean, SD and the bootstrap-t quantiles of one experiment, as the looks compute them."""
    rng = np.random.default_rng(5)
    d = bench.differences(rng, "lognormal 0.5", np.zeros(2), 1, 32) + np.array([0.9, -0.2])
    design = sq.Design((16, 32), "pocock", 0.05)
    t, n, mean, sd, boot, skew = bench.look_inputs(d, design, sesoi=10.0)  # every row bootstrapped
    for k, n_k in enumerate(design.looks):
        tests = [paired.paired_test(pd.Series(np.zeros(n_k)), pd.Series(d[0, :n_k, i]), True) for i in range(2)]
        assert t[0, k] == pytest.approx([x.t for x in tests]) and sd[0, k] == pytest.approx([x.sd_diff for x in tests])
        assert mean[0, k] == pytest.approx([x.delta for x in tests])
        ours = np.concatenate([looks._bootstrap(design, 2, k, x) for x in tests])
        np.testing.assert_allclose(boot[0, k], ours)
        assert skew[0, k] == pytest.approx(looks._pooled_skewness(tests))
