"""The trend test's error rate under the null (docs/statistics.md, "Trends along an axis"): simulated
experiments in which the paired difference has no slope along the axis, each decided as the harness
decides a trend (harness/analysis/trend.py): per seed the least-squares slope of the difference on log2
of the level, then a direction only where the paired t-test and the exact sign-flip test both reject at
alpha. The rate of a direction must stay at or below alpha.

Each simulated experiment: ``--seeds`` seeds, levels 1, 2, 4 (the length multiples of pe_extrapolation);
per seed a random offset (the arms differ by a constant, which has no slope) plus noise at each level,
from one of three shapes: normal; Student t with 3 degrees of freedom (heavy tails); normal with an SD
that grows 4x from the first level to the last (the spread beyond L grows with the length).

Usage: python benchmarks/trend_null.py [--sims 10000] [--seeds 8] [--alpha 0.05] [--json]
Prints, per noise shape, the rate of a direction with its exact (Clopper-Pearson) 95 % CI, and the
t-test's rate alone.
"""

from __future__ import annotations

import argparse
import itertools
import json

import numpy as np
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from harness.analysis.trend import slope_of

LEVELS = np.log2([1.0, 2.0, 4.0])


def _noise(shape: str, rng: np.random.Generator, size: tuple[int, int, int]) -> np.ndarray:
    if shape == "normal":
        return rng.normal(size=size)
    if shape == "t3":
        return rng.standard_t(3, size=size)
    return rng.normal(size=size) * np.array([1.0, 2.0, 4.0])  # "growing": the SD grows along the axis


def rates(sims: int, seeds: int, alpha: float, shape: str, rng: np.random.Generator) -> dict[str, float]:
    """The share of ``sims`` null experiments that read a direction (both tests), and the t-test's alone."""
    offsets = rng.normal(0, 2.0, size=(sims, seeds, 1))
    y = offsets + _noise(shape, rng, (sims, seeds, len(LEVELS)))
    slopes = slope_of(y, LEVELS)  # (sims, seeds)
    p_t = stats.ttest_1samp(slopes, 0.0, axis=1).pvalue
    signs = np.array(list(itertools.product([1.0, -1.0], repeat=seeds)))  # every sign pattern: exact
    observed = np.abs(slopes.mean(axis=1))
    p_perm = np.empty(sims)
    for start in range(0, sims, 500):
        chunk = slopes[start : start + 500]
        flipped = np.abs(chunk @ signs.T) / seeds  # (chunk, patterns)
        p_perm[start : start + 500] = (flipped >= observed[start : start + 500, None] - 1e-12).mean(axis=1)
    both = (p_t < alpha) & (p_perm < alpha)
    return {"direction": float(both.mean()), "t_test_alone": float((p_t < alpha).mean())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sims", type=int, default=10_000)
    ap.add_argument("--seeds", type=int, default=8)
    ap.add_argument("--alpha", type=float, default=0.05)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    rng = np.random.default_rng(20261205)
    out = {}
    for shape in ("normal", "t3", "growing"):
        r = rates(args.sims, args.seeds, args.alpha, shape, rng)
        k = round(r["direction"] * args.sims)
        low, high = proportion_confint(k, args.sims, alpha=0.05, method="beta")
        out[shape] = {**r, "ci": [float(low), float(high)], "sims": args.sims, "seeds": args.seeds}
    if args.json:
        print(json.dumps(out, indent=2))
        return
    for shape, r in out.items():
        print(
            f"{shape:8s} {args.sims} null experiments, {args.seeds} seeds, levels 1, 2, 4 (log2): a direction in "
            f"{r['direction']:.4f} (95% CI [{r['ci'][0]:.4f}, {r['ci'][1]:.4f}]), t-test alone {r['t_test_alone']:.4f}"
        )


if __name__ == "__main__":
    main()
