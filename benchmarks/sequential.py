"""Does the group-sequential rule keep the family-wise error rate, and what does it buy?

Simulates paired experiments and sends each through the decision code a sequential profile uses
(:func:`harness.analysis.sequential.decide`, its bounds from :func:`~harness.analysis.sequential.t_bounds`):

- null: every comparison's true difference is 0; the family-wise false-positive rate (a ``better``
  or ``worse`` anywhere in the family) must not exceed alpha beyond its 95 % Clopper-Pearson
  interval (the interval's lower end at or below alpha);
- effects of 0.5x, 1x and 2x the smallest effect of interest (every comparison of the family): the
  power (share of comparisons declared in the right direction), wrong-direction and ``equivalent``
  rates, and the mean seeds run, against the fixed 8-seed design (one look at 8 seeds through the
  same code: the t-test at the Holm level with the exact sign-flip check).

Each experiment is a family of m comparisons of variants against one shared baseline (so the
comparisons are correlated, 0.5 between two differences): per seed, the baseline's value is
standard normal noise and each variant's is its effect plus noise of the scenario's distribution
(normal; Student t with 3 df, scaled to unit variance: heavy-tailed; a centred exponential: skewed).
The smallest effect of interest is ``D_Z_AT_SESOI`` x the SD of a difference (sqrt 2).

Statistics per look: the paired t of the first n seeds (cumulative sums), and the sign-flip p
(:func:`sign_flip_p`: as the comparison code computes it, exact up to 16 pairs, 2^16 random sign
patterns above), computed only where the t-test's nominal p is at or below the most lenient bound
of the look (elsewhere no rule can reject, so the check cannot matter).

    python benchmarks/sequential.py                      # 20,000 null experiments per scenario (minutes)
    python benchmarks/sequential.py --experiments 2000 --power-experiments 500   # a quick look
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.analysis import sequential as sq  # noqa: E402

DISTRIBUTIONS = ("normal", "t3", "skewed")
D_Z_AT_SESOI = 0.5
"""The smallest effect of interest as a standardised paired effect (delta / SD of a difference)."""
SD_DIFF = np.sqrt(2.0)
EXACT_PATTERNS = 2**16
"""As the comparison code (harness.analysis.paired.EXACT_PERMUTATIONS): exact up to 16 pairs."""


def noise(rng: np.random.Generator, dist: str, shape: tuple[int, ...]) -> np.ndarray:
    """Unit-variance noise of ``dist``, mean 0."""
    if dist == "normal":
        return rng.standard_normal(shape)
    if dist == "t3":
        return rng.standard_t(3, shape) / np.sqrt(3.0)
    if dist == "skewed":
        return rng.exponential(1.0, shape) - 1.0
    raise ValueError(dist)


def differences(rng: np.random.Generator, dist: str, s: int, m: int, n: int, effect: float) -> np.ndarray:
    """Paired differences (S, n, m): m variants against one baseline, ``effect`` the true mean difference."""
    base = rng.standard_normal((s, n, 1))
    return effect + noise(rng, dist, (s, n, m)) - base


def _patterns(n: int, count: int, rng: np.random.Generator) -> tuple[np.ndarray, bool]:
    """Sign patterns (R, n): all 2^n of them when that is at most ``count`` (exact), else ``count``
    random ones; and whether they are all of them."""
    if 2**n <= count:
        return np.array(list(itertools.product((1.0, -1.0), repeat=n))), True
    return rng.choice((1.0, -1.0), size=(count, n)), False


def _share(d: np.ndarray, pats: np.ndarray, exact: bool) -> np.ndarray:
    """The sign-flip p of each row of ``d`` over ``pats``: with random patterns, (hits + 1) / (R + 1)
    as scipy's permutation_test counts them."""
    observed = np.abs(d.sum(axis=1))
    hits = np.empty(len(d))
    step = max(1, 2**23 // len(pats))  # rows per block: at most 64 MiB of flipped sums
    for start in range(0, len(d), step):
        flipped = np.abs(d[start : start + step] @ pats.T)
        hits[start : start + step] = (flipped >= observed[start : start + step, None] * (1 - 1e-14)).sum(axis=1)
    return hits / len(pats) if exact else (hits + 1) / (len(pats) + 1)


def sign_flip_p(d: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Two-sided sign-flip p of the mean of each row of ``d`` (rows, n), as the comparison code's
    ``scipy.stats.permutation_test`` gives it: exact up to 16 pairs (all 2^n patterns), else
    2^16 random patterns. A first pass over 2^12 patterns settles the rows whose p is clearly
    large (above 0.05); only the others take the full count."""
    if len(d) == 0:
        return np.empty(0)
    rough = _share(d, *_patterns(d.shape[1], 2**12, rng))
    out = rough.copy()
    fine = rough <= 0.05
    if fine.any() and 2 ** d.shape[1] > 2**12:
        out[fine] = _share(d[fine], *_patterns(d.shape[1], EXACT_PATTERNS, rng))
    return out


def look_statistics(d: np.ndarray, design: sq.Design, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """t, n, sign-flip p, mean and SD of the differences at each look, each (S, K, m)."""
    s, _, m = d.shape
    looks = np.array(design.looks)
    csum, csq = np.cumsum(d, axis=1)[:, looks - 1], np.cumsum(d * d, axis=1)[:, looks - 1]
    n = looks[None, :, None].astype(float)
    mean = csum / n
    sd = np.sqrt(np.maximum(csq - n * mean**2, 0.0) / (n - 1))
    t = mean / (sd / np.sqrt(n))
    p = 2 * stats.t.sf(np.abs(t), n - 1)
    lenient = design.p_table(1)[0]  # the bound at the full alpha: the most any member is tested at
    p_sign = np.ones_like(t)
    for k, n_k in enumerate(design.looks):
        where = p[:, k, :] <= lenient[k]
        if where.any():
            rows = np.moveaxis(d[:, :n_k, :], 2, 1)[where]  # (rows, n_k)
            p_sign[:, k, :][where] = sign_flip_p(rows, rng)
    return t, np.broadcast_to(n, t.shape), p_sign, mean, sd


@dataclass
class Result:
    family_error: float  # share of experiments with a wrong declaration (any direction under the null)
    interval: tuple[float, float]
    power: float  # share of comparisons declared in the true direction
    wrong_direction: float
    equivalent: float
    seeds: float  # mean seeds run (the last look any arm of the family ran)


def simulate(design: sq.Design, dist: str, m: int, ratio: float, count: int, seed: int) -> Result:
    """``count`` experiments of a family of ``m`` comparisons at ``ratio`` x the sesoi (0: the null)."""
    rng = np.random.default_rng(seed)
    sesoi = D_Z_AT_SESOI * SD_DIFF
    d = differences(rng, dist, count, m, design.looks[-1], ratio * sesoi)
    dec = sq.decide(design, *look_statistics(d, design, rng), np.full(m, sesoi))
    directed = np.isin(dec.outcome, (sq.BETTER, sq.WORSE))
    right = dec.outcome == sq.BETTER
    wrong = (directed & ~right) if ratio > 0 else directed
    errors = int(wrong.any(axis=1).sum())
    low, high = proportion_confint(errors, count, alpha=0.05, method="beta")
    stopped = np.where(dec.look >= 0, dec.look, len(design.looks) - 1)
    seeds = np.array(design.looks)[stopped.max(axis=1)]
    return Result(
        errors / count,
        (float(low), float(high)),
        float(right.mean()) if ratio > 0 else float("nan"),
        float((directed & ~right).mean()) if ratio > 0 else float(directed.mean()),
        float((dec.outcome == sq.EQUIVALENT).mean()),
        float(seeds.mean()),
    )


def null_table(designs: dict[str, sq.Design], families: list[int], count: int, seed: int) -> tuple[list[str], bool]:
    lines = [
        "| design | differences | m | family-wise false positives | 95 % interval | at or below alpha |",
        "|---|---|---|---|---|---|",
    ]
    ok = True
    for (label, design), dist, m in itertools.product(designs.items(), DISTRIBUTIONS, families):
        r = simulate(design, dist, m, 0.0, count, seed)
        keeps = r.interval[0] <= design.alpha
        ok &= keeps
        lines.append(
            f"| {label} | {dist} | {m} | {r.family_error:.4f} | [{r.interval[0]:.4f}, {r.interval[1]:.4f}] | "
            f"{'yes' if keeps else '**no**'} |"
        )
    return lines, ok


def power_table(designs: dict[str, sq.Design], families: list[int], count: int, seed: int) -> list[str]:
    lines = [
        "| design | differences | m | effect (x sesoi) | power | wrong direction | equivalent | mean seeds |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for (label, design), dist, m, ratio in itertools.product(designs.items(), DISTRIBUTIONS, families, (0.5, 1, 2)):
        r = simulate(design, dist, m, ratio, count, seed)
        lines.append(
            f"| {label} | {dist} | {m} | {ratio:g} | {r.power:.3f} | {r.wrong_direction:.4f} | {r.equivalent:.3f} | "
            f"{r.seeds:.1f} |"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiments", type=int, default=20_000, help="null experiments per scenario")
    parser.add_argument("--power-experiments", type=int, default=4_000, help="experiments per scenario with an effect")
    parser.add_argument("--looks", default="8,16,24,32")
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--families", default="1,2,4,6", help="family sizes m")
    parser.add_argument("--power-families", default="1,4", help="family sizes of the power table")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    looks = tuple(int(x) for x in args.looks.split(","))
    designs = {
        f"O'Brien-Fleming {looks}": sq.Design(looks, "obrien_fleming", args.alpha),
        f"Pocock {looks}": sq.Design(looks, "pocock", args.alpha),
        "fixed (8,)": sq.Design((8,), "obrien_fleming", args.alpha),
    }
    started = time.perf_counter()
    families = [int(x) for x in args.families.split(",")]
    null, ok = null_table(designs, families, args.experiments, args.seed)
    power = power_table(
        designs, [int(x) for x in args.power_families.split(",")], args.power_experiments, args.seed + 1
    )
    print(
        f"alpha {args.alpha:g}; {args.experiments:,} null experiments per scenario, {args.power_experiments:,} with an "
        f"effect; smallest effect d_z {D_Z_AT_SESOI}\n"
    )
    print("\n".join(null), "\n")
    print("\n".join(power), "\n")
    print(f"{time.perf_counter() - started:.0f} s; family-wise rate kept: {'yes' if ok else 'NO'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
