"""A trend along an ordered axis (harness.analysis.trend): its verdict's error rate under the null stays
at alpha (benchmarks/trend_null.py at a small count; the full figure, 10,000+ experiments, is in
docs/statistics.md), the harness's own path (one slope per seed, the paired tests, the rule table) reads
the same as the benchmark's vectorised one, and a claim's trend evidence is decided from a store."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from scipy.stats import binomtest

from harness.analysis import trend
from harness.analysis import verdicts as vd
from harness.analysis.claims import claim_verdict
from harness.analysis.comparisons import analyse
from harness.experiment.ablation import load
from harness.experiment.selection import select
from helpers.fake_store import write_decl, write_runs
from helpers.mini_claims import claim_of

_SPEC = importlib.util.spec_from_file_location(
    "trend_null_benchmark", Path(__file__).resolve().parents[2] / "benchmarks" / "trend_null.py"
)
bench = sys.modules[_SPEC.name] = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(bench)


@pytest.mark.parametrize("shape", ["normal", "t3", "growing"])
def test_the_rate_of_a_direction_under_the_null_is_at_most_alpha(shape: str) -> None:
    sims = 3000
    r = bench.rates(sims, 8, 0.05, shape, np.random.default_rng(7))
    # an exact one-sided test that the rate exceeds alpha must not reject
    assert binomtest(round(r["direction"] * sims), sims, 0.05, alternative="greater").pvalue > 0.01, r


def test_the_harness_decides_a_trend_as_the_benchmark_does() -> None:
    """300 null experiments through trend.against_zero and the rule table: a direction only where both the
    t-test and the exact sign-flip test reject, never more often than the benchmark's count allows."""
    rng = np.random.default_rng(3)
    levels = [trend.Level(v, f"loss@x{int(v)}", "b", "a") for v in (1.0, 2.0, 4.0)]
    directions = 0
    for _ in range(300):
        y = rng.normal(0, 2, (8, 1)) + rng.normal(size=(8, 3))
        rows = pd.DataFrame(
            [
                {
                    "task": "t",
                    "metric": lv.metric,
                    "variant": arm,
                    "seed": s,
                    "value": float(y[s, i]) if arm == "b" else 0.0,
                }
                for i, lv in enumerate(levels)
                for arm in ("a", "b")
                for s in range(8)
            ]
        )
        per_seed = trend.slopes(rows, "t", levels, higher_is_better=True, log2=True)
        assert np.allclose(per_seed.to_numpy(), trend.slope_of(y, np.log2([1.0, 2.0, 4.0])))
        _, facts = trend.against_zero(per_seed, "a", "b", None, 0.05, True)
        verdict = vd.decide(facts)
        assert (vd.kind(verdict) in vd.DIRECTIONS) == (facts.p_adj < 0.05 and facts.p_perm_adj < 0.05)
        directions += vd.kind(verdict) in vd.DIRECTIONS
    assert binomtest(directions, 300, 0.05, alternative="greater").pvalue > 0.01


SEEDS = list(range(8))
GROWTH = 0.1 + np.random.default_rng(1).normal(0, 0.01, 8)  # per seed, the gap added per doubling


def _analysis(tmp: Path, gap):
    """write_decl's copy task (acc@x1, acc@x2, primary acc@x2, sesoi 0.05), 8 confirmatory seeds; learned
    is below sinusoidal by ``gap(seed, multiple)``."""
    path = write_decl(tmp / "decl", confirm={"seeds": SEEDS})
    decl = yaml.safe_load(path.read_text())
    decl["default_profile"] = "confirm"
    path.write_text(yaml.safe_dump(decl, sort_keys=False))

    def extra(variant: str, seed: int) -> dict[str, float]:
        cut = {m: gap(seed, m) if variant == "learned" else 0.0 for m in (1, 2)}
        return {"acc@x1": 0.9 - cut[1] + 0.001 * seed, "acc@x2": 0.8 - cut[2] + 0.001 * seed}

    write_runs(tmp / "results", path, "confirm", lambda v, s: 0.0, extra=extra)
    return analyse(select(load(str(path)), "confirm", check_data=False), tmp / "results")


TREND = {
    "task": "copy",
    "metric": "acc@x1",
    "variant": "learned",
    "expect": "worse",
    "trend": {
        "axis": "the length multiple",
        "unit": "doubling of the length",
        "levels": [1, 2],
        "log2": True,
        "metrics": ["acc@x1", "acc@x2"],
    },
}


def test_a_gap_that_grows_along_the_axis_reads_worse(tmp_path: Path) -> None:
    result = _analysis(tmp_path, lambda s, m: GROWTH[s] * np.log2(m) + 0.02)
    verdict, lines = claim_verdict(claim_of(evidence=[TREND]), result)
    assert verdict == "supported", lines
    slope = -np.mean(GROWTH)
    assert lines[0].startswith("copy `acc@x1`, learned vs sinusoidal along the length multiple: slope = ")
    assert f"slope = {slope:+.4g} per doubling of the length" in lines[0], lines[0]
    assert "→ worse; claim expects worse: **supported**" in lines[0]


def test_a_constant_gap_has_no_trend(tmp_path: Path) -> None:
    """learned 0.2 below at every length: a large difference, but no slope; the slope's CI lies inside the
    sesoi per doubling, so a claim that the gap grows reads no effect of that size, not supported."""
    result = _analysis(tmp_path, lambda s, m: 0.2)
    verdict, lines = claim_verdict(claim_of(evidence=[TREND]), result)
    assert "→ negligible (95% CI of Δ inside ±0.05)" in lines[0], lines[0]
    assert verdict == "no effect of that size (every comparison that decided lies inside ±0.05)"
