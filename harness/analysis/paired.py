"""The tests of one arm against another over repeated seeds: descriptives, the paired t-test with
the exact sign-flip test and TOST equivalence, each the library's own (scipy, statsmodels). A
positive ``delta`` always means the variant is better, whatever the metric's direction.

Only duplicate seeds raise (``ValueError``): fewer than 2 values or pairs give NaN statistics;
constant differences follow ``ttest_rel`` (non-zero: ``t = ±inf, p = 0``, a zero-width CI; zero:
``t = p = NaN``); an infinite value: docs/statistics.md, "Infinite values".
"""

from __future__ import annotations

import contextlib
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.stats.weightstats import ttost_paired

NAN = float("nan")
EXACT_PERMUTATIONS = 2**16  # sign-flip test is exact for n <= 16 pairs, Monte Carlo above


@contextlib.contextmanager
def quiet():
    """Silence scipy's warnings on the degenerate inputs above (a context manager or a decorator)."""
    with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def clean(values) -> np.ndarray:
    """The values without NaNs."""
    x = np.asarray(values, dtype=float).ravel()
    return x[~np.isnan(x)]


@dataclass(frozen=True)
class Descriptives:
    n: int  # values used (NaNs dropped)
    mean: float
    sd: float  # ddof=1
    ci_low: float  # t-interval of the mean
    ci_high: float


@quiet()
def describe(values, confidence: float = 0.95) -> Descriptives:
    """Mean, SD (ddof=1) and t-interval of the mean (``scipy.stats.ttest_1samp`` CI); NaNs dropped."""
    x = clean(values)
    n = len(x)
    if n < 2 or not np.isfinite(x).all():  # an infinite value: the mean is ±inf (or NaN), no SD
        return Descriptives(n, float(x.mean()) if n else NAN, NAN, NAN, NAN)
    ci = stats.ttest_1samp(x, 0.0).confidence_interval(confidence)
    return Descriptives(n, float(x.mean()), float(x.std(ddof=1)), float(ci.low), float(ci.high))


@dataclass(frozen=True)
class Paired:
    n_pairs: int  # seeds with a value on both sides
    delta: float  # mean(variant - baseline), oriented: > 0 means variant better
    ci_low: float  # t-interval of delta (ttest_rel CI), oriented
    ci_high: float
    t: float  # oriented
    p: float  # two-sided paired t-test
    p_perm: float  # two-sided sign-flip permutation test on the differences
    d_z: float  # delta / sd_diff; ±inf when sd_diff = 0 and delta != 0
    sd_diff: float
    prob_improvement: float  # (wins + ties / 2) / n_pairs: share of seeds where the variant
    #                          is better, ties half (not the unpaired common-language effect size)
    wins: int
    ties: int  # exactly equal values
    losses: int
    diffs: tuple[float, ...]  # oriented per-seed differences, in seed order
    non_finite: int = 0  # pairs with an infinite value: every statistic but delta and the counts is NaN


def _pair(baseline: pd.Series, variant: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    for s in (baseline, variant):
        if s.index.has_duplicates:
            raise ValueError(f"duplicate seeds: {sorted(set(s.index[s.index.duplicated()]))}")
    both = pd.concat({"b": baseline, "v": variant}, axis=1).sort_index().dropna()
    return both["b"].to_numpy(float), both["v"].to_numpy(float)


@quiet()
def paired_test(baseline: pd.Series, variant: pd.Series, higher_is_better: bool, confidence: float = 0.95) -> Paired:
    """Paired comparison on the seeds both series share (Series indexed by seed): ``p`` and CI by
    ``scipy.stats.ttest_rel``; ``p_perm`` by ``scipy.stats.permutation_test(permutation_type='samples')``
    on the differences, exact up to 16 pairs (smallest two-sided p 2 / 2**n), seeded Monte Carlo above."""
    b, v = _pair(baseline, variant)
    sign = 1.0 if higher_is_better else -1.0
    d = sign * (v - b)  # inf - inf: NaN, a tie below
    n = len(d)
    wins, ties, losses = int((d > 0).sum()), int((v == b).sum()), int((d < 0).sum())
    prob = (wins + ties / 2) / n if n else NAN
    non_finite = int((~(np.isfinite(b) & np.isfinite(v))).sum())
    if n < 2 or non_finite:
        return Paired(n, float(d.mean()) if n else NAN, *[NAN] * 7, prob, wins, ties, losses, tuple(d), non_finite)
    res = stats.ttest_rel(sign * v, sign * b)
    ci = res.confidence_interval(confidence)
    rng = np.random.default_rng(0)
    perm = stats.permutation_test((d,), np.mean, permutation_type="samples", n_resamples=EXACT_PERMUTATIONS, rng=rng)
    sd = float(d.std(ddof=1))
    d_z = float(np.float64(d.mean()) / sd)
    stat = (float(ci.low), float(ci.high), float(res.statistic), float(res.pvalue), float(perm.pvalue))
    return Paired(n, float(d.mean()), *stat, d_z, sd, prob, wins, ties, losses, tuple(d))


def tost_paired(diffs, sesoi: float) -> float:
    """Equivalence p (two one-sided tests, margin ±sesoi) on paired differences, by
    ``statsmodels.stats.weightstats.ttost_paired``; NaN for fewer than 2 differences or an infinite one."""
    d = clean(diffs)
    if len(d) < 2 or not sesoi > 0 or not np.isfinite(d).all():
        return NAN
    with quiet():
        return float(ttost_paired(d, np.zeros_like(d), -sesoi, sesoi)[0])
