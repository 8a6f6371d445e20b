"""The statistics of repeated seeds, each the library's own (scipy, statsmodels).

The tests of one arm against another (descriptives, the paired t-test with the exact sign-flip test and TOST
equivalence), the power of the paired t-test and the seeds a verdict needs (:func:`seeds_for_verdict`, what
``ablate plan`` prints), and all variants at once (:func:`friedman`). A positive ``delta`` always means the
variant is better, whatever the metric's direction.

Only duplicate seeds raise (``ValueError``): fewer than 2 values or pairs give NaN statistics;
constant differences follow ``ttest_rel`` (non-zero: ``t = ±inf, p = 0``, a zero-width CI; zero:
``t = p = NaN``); an infinite value: docs/statistics.md, "Infinite values".
"""

from __future__ import annotations

import contextlib
import functools
import math
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.stats.power import TTestPower
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
    """One arm's values (:func:`describe`): how many, their mean and SD, and the t-interval of the mean."""

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
    """One arm against another on the seeds both have (:func:`paired_test`), oriented: > 0 means the variant is better.

    The mean difference and its t-interval, the paired t-test and the sign-flip test, the standardised effect
    ``d_z``, the probability of improvement, the wins, ties and losses, and the differences themselves.
    """

    n_pairs: int  # seeds with a value on both sides
    delta: float  # mean(variant - baseline), oriented: > 0 means variant better
    ci_low: float  # t-interval of delta (ttest_rel CI), oriented
    ci_high: float
    t: float  # oriented
    p: float  # two-sided paired t-test
    p_perm: float  # two-sided sign-flip permutation test on the differences
    d_z: float  # delta / sd_diff; ±inf when sd_diff = 0 and delta != 0
    sd_diff: float
    prob_improvement: float  # (wins + ties / 2) / n_pairs (not the unpaired common-language effect size)
    wins: int
    ties: int  # exactly equal values
    losses: int
    diffs: tuple[float, ...]  # oriented per-seed differences, in seed order
    non_finite: int = 0  # pairs with an infinite value: every statistic but delta and the counts is NaN


@quiet()
def paired_test(baseline: pd.Series, variant: pd.Series, higher_is_better: bool, confidence: float = 0.95) -> Paired:
    """Paired comparison on the seeds both series share (Series indexed by seed).

    ``p`` and CI by ``scipy.stats.ttest_rel``; ``p_perm`` by
    ``scipy.stats.permutation_test(permutation_type='samples')`` on the differences, exact up to 16 pairs (smallest
    two-sided p 2 / 2**n), seeded Monte Carlo above.

    Raises:
        ValueError: for duplicate seeds in either series.
    """
    for s in (baseline, variant):
        if s.index.has_duplicates:
            raise ValueError(f"duplicate seeds: {sorted(set(s.index[s.index.duplicated()]))}")
    both = pd.concat({"b": baseline, "v": variant}, axis=1).sort_index().dropna()
    b, v = both["b"].to_numpy(float), both["v"].to_numpy(float)
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
    """Equivalence p (two one-sided tests, margin ±sesoi) on paired differences.

    By ``statsmodels.stats.weightstats.ttost_paired``; NaN for fewer than 2 differences or an infinite one (or a
    ``sesoi`` not positive).
    """
    d = clean(diffs)
    if len(d) < 2 or not sesoi > 0 or not np.isfinite(d).all():
        return NAN
    with quiet():
        return float(ttost_paired(d, np.zeros_like(d), -sesoi, sesoi)[0])


# The power of the paired t-test over seeds (statsmodels ``TTestPower``)


@functools.lru_cache(maxsize=1024)
def _detectable_effect(n: int, alpha: float) -> float:
    return float(TTestPower().solve_power(effect_size=None, nobs=n, alpha=alpha, power=0.8))


def mde(n: int, sd_diff: float, alpha: float = 0.05) -> float:
    """Minimum detectable mean difference with ``n`` pairs at 80 % power; NaN for n < 2 or a NaN sd.

    ``TTestPower().solve_power(effect_size=None, ...)`` times ``sd_diff`` (0.996 SD at n=10, alpha 0.05, power 0.8).
    """
    if n < 2 or not np.isfinite(sd_diff):
        return NAN
    return _detectable_effect(int(n), float(alpha)) * float(sd_diff)


def power_at(effect: float, sd_diff: float, n: int, alpha: float = 0.05) -> float:
    """Power with ``n`` pairs to detect a mean difference ``effect`` at SD ``sd_diff``.

    ``TTestPower().power`` two-sided, as its two tails, since scipy's noncentral t gives NaN for the far lower tail
    at large effect / SD (below 1e-15: counted as 0). 1.0 for an SD of 0 and an effect; NaN for n < 2 or a NaN SD.
    """
    if n < 2 or not np.isfinite(sd_diff) or sd_diff < 0:
        return NAN
    if sd_diff == 0:
        return 1.0 if effect else NAN
    es, solver = abs(effect) / sd_diff, TTestPower()
    with warnings.catch_warnings():  # statsmodels warns about the far lower tail at large effects
        warnings.simplefilter("ignore")
        upper = float(solver.power(es, nobs=int(n), alpha=alpha / 2, alternative="larger"))
        lower = float(solver.power(es, nobs=int(n), alpha=alpha / 2, alternative="smaller"))
    return upper + (0.0 if math.isnan(lower) else lower)


def seeds_for_verdict(effect: float, sd_diff: float, alpha: float = 0.05, power: float = 0.8) -> int:
    """Seeds a direction needs: :func:`seeds_needed`, and at least :func:`sign_flip_min_seeds`.

    At least those, since the exact sign-flip test must reject too.

    Raises:
        ValueError: as :func:`seeds_needed`.
    """
    return max(seeds_needed(effect, sd_diff, alpha=alpha, power=power), sign_flip_min_seeds(alpha))


def seeds_needed(effect: float, sd_diff: float, alpha: float = 0.05, power: float = 0.8) -> int:
    """Pairs needed to detect ``effect`` with ``power`` (a two-sided paired t-test at ``alpha``).

    ``TTestPower().solve_power(nobs=None, ...)`` rounded up; where that root finder fails or is wrong (alpha about
    1e-4 and below), a search on the upper tail.

    Raises:
        ValueError: for ``effect`` 0, ``sd_diff`` not positive, alpha below 1e-100 (or not below 1), or no answer.
    """
    if effect == 0 or not sd_diff > 0:
        raise ValueError(f"need effect != 0 and sd_diff > 0, got {effect=} {sd_diff=}")
    es, solver = abs(effect) / sd_diff, TTestPower()
    if not 1e-100 <= alpha < 1:  # scipy's t quantiles break down far below (alpha 1e-300: 4 seeds)
        raise ValueError(f"alpha {alpha:.3g} is out of the range the power solver handles (1e-100 to 1)")
    for small in (2, 3):  # the root finder fails below 3 and scipy's nct.cdf gives NaN for
        # the far lower tail there: use the upper tail alone (the other is < 1e-6 at such es)
        if solver.power(es, nobs=small, alpha=alpha / 2, alternative="larger") >= power:
            return small
    with warnings.catch_warnings():  # statsmodels warns, then returns NaN, when its root finder fails
        warnings.simplefilter("ignore")
        n = solver.solve_power(effect_size=es, nobs=None, alpha=alpha, power=power)

        def upper(k: int) -> float:
            return float(solver.power(es, nobs=k, alpha=alpha / 2, alternative="larger"))

        failed = ValueError(
            f"the power solver did not converge (effect / SD {es:.3g}, alpha {alpha:.3g}, power {power:.3g})"
        )
        # a t-test needs at least the seeds of a z-test; fewer means scipy's t quantiles broke down
        z_floor = 0.9 * ((stats.norm.isf(alpha / 2) + stats.norm.ppf(power)) / es) ** 2 - 1
        n = float(np.ravel(n)[0])  # an array ([nan] or its last try) when the root finder failed
        k = math.ceil(n - 1e-3) if math.isfinite(n) else 0  # the root finder is good to ~1e-6 seeds
        if k > 3 and k >= z_floor and upper(k) >= power - 1e-3 * (1 - power) and not upper(k - 1) >= power:
            return k
        # at small alpha (about 1e-4 and below) the root finder stops at its bracket (500) or
        # returns a wrong root: search the upper tail alone, monotone in k (conservative by the
        # lower tail, negligible there)
        lo, hi = 3, 6
        while not upper(hi) >= power:
            if hi > 2**50 or math.isnan(upper(hi)) or upper(hi) < upper(lo) - 1e-9:
                raise failed
            lo, hi = hi, hi * 2
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if upper(mid) >= power else (mid, hi)
        if hi < z_floor:
            raise failed
        return hi


def sign_flip_min_seeds(alpha: float) -> int:
    """The fewest differing pairs m at which the exact sign-flip test can reach p < ``alpha``.

    Its smallest p is 2 / 2**m (6 at alpha 0.05, 8 at 0.05 / 6).
    """
    m = math.floor(math.log2(2 / alpha)) + 1
    return m if 2 / 2**m < alpha else m + 1  # guard the float at exact powers of two


# All variants at once: the Friedman test on the per-seed ranks and the Nemenyi critical difference
# of mean ranks (Demsar, JMLR 2006)


@dataclass(frozen=True)
class Friedman:
    """The Friedman test over variants (:func:`friedman`), its mean ranks and the Nemenyi critical difference."""

    statistic: float
    p: float
    n_seeds: int  # complete seeds used (the blocks, N)
    mean_ranks: pd.Series  # per variant; 1 = best
    k: int = 0  # variants (treatments); the test has k - 1 degrees of freedom
    cd: float = NAN  # Nemenyi critical difference of mean ranks at the call's alpha

    @property
    def df(self) -> int:
        """The test's degrees of freedom: ``k - 1``."""
        return self.k - 1


def nemenyi_cd(k: int, n: int, alpha: float = 0.05) -> float:
    """Nemenyi critical difference of mean ranks over ``n`` blocks (Demsar, JMLR 2006, sec. 3.2.2).

    ``CD = q_alpha * sqrt(k (k + 1) / (6 N))``, ``q_alpha`` the studentized range quantile / sqrt(2) (2.569 at k=4,
    alpha 0.05: Demsar's Table 5a). NaN for k < 2 or n < 1.
    """
    if k < 2 or n < 1:
        return NAN
    q = float(stats.studentized_range.ppf(1 - alpha, k, np.inf)) / math.sqrt(2)
    return q * math.sqrt(k * (k + 1) / (6 * n))


@quiet()
def friedman(table: pd.DataFrame, higher_is_better: bool = True, alpha: float = 0.05) -> Friedman:
    """Friedman test over variants (rows = seeds, columns = variants), complete seeds only.

    By ``scipy.stats.friedmanchisquare``; mean ranks 1 = best, ties averaged. Fewer than 3 variants or 2 complete
    seeds: NaN statistic, p and cd.
    """
    full = table.dropna()
    k = table.shape[1]
    ranks = stats.rankdata(-full.to_numpy(float) if higher_is_better else full.to_numpy(float), axis=1)
    mean_ranks = pd.Series(ranks.mean(axis=0) if len(full) else NAN, index=table.columns)
    if k < 3 or len(full) < 2:
        return Friedman(NAN, NAN, len(full), mean_ranks, k)
    res = stats.friedmanchisquare(*full.to_numpy(float).T)
    return Friedman(float(res.statistic), float(res.pvalue), len(full), mean_ranks, k, nemenyi_cd(k, len(full), alpha))


# The studentized bootstrap (bootstrap-t) of the mean of paired differences (docs/statistics.md,
# "Tests that hold without normality"): Hall (1992), The Bootstrap and Edgeworth Expansion, 3.5-3.6;
# Efron & Tibshirani (1993), An Introduction to the Bootstrap, ch. 12.

BOOTSTRAP_RESAMPLES = 1_999
"""Resamples of the bootstrap-t: its two-sided p is at least 2 / (B + 1) = 0.001, so a bound whose
nominal p is smaller cannot be crossed (the look then rejects nothing: conservative)."""
BOOTSTRAP_SEED = 20_260_105


@functools.lru_cache(maxsize=64)
def _resample_counts(n: int) -> np.ndarray:
    """How often each of n pairs is drawn in each resample, (n, B); fixed per n, so a verdict is reproducible."""
    rng = np.random.default_rng([BOOTSTRAP_SEED, n])
    counts = rng.multinomial(n, np.full(n, 1.0 / n), size=BOOTSTRAP_RESAMPLES).T.astype(float)
    counts.setflags(write=False)
    return counts


@quiet()
def bootstrap_t(d) -> np.ndarray:
    """The sorted bootstrap distribution of the studentized mean of each row of paired differences ``d``.

    ``T* = (mean* - mean) / se*``, (rows, n) -> (rows, B), by one matrix product per moment over the resample
    counts of :func:`_resample_counts`. A resample with no spread (se* = 0) gives ±inf by the sign of mean* - mean,
    0 when equal. Rows with a NaN or fewer than 3 pairs: all NaN.
    """
    d = np.atleast_2d(np.asarray(d, dtype=float))
    rows, n = d.shape
    if n < 3:
        return np.full((rows, BOOTSTRAP_RESAMPLES), NAN)
    counts = _resample_counts(n)
    mean = d.mean(axis=1, keepdims=True)
    centred = d - mean  # T* is invariant to a shift: centring keeps the sums of squares accurate
    m1 = centred @ counts / n
    var = np.maximum((centred * centred) @ counts - n * m1 * m1, 0.0) / (n - 1)
    se = np.sqrt(var / n)
    flat = se <= 1e-12 * (np.abs(centred).max(axis=1, keepdims=True) + 1e-300)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(flat, np.where(m1 == 0, 0.0, np.sign(m1) * np.inf), m1 / se)
    out[~np.isfinite(d).all(axis=1)] = NAN
    return np.sort(out, axis=1)


def bootstrap_quantiles(tstar: np.ndarray, probs) -> np.ndarray:
    """Quantiles of sorted bootstrap-t distributions ``tstar`` (rows, B) at ``probs`` (P,) -> (rows, P).

    The order statistic floor(p (B + 1)) below the median, B + 1 - floor((1 - p) (B + 1)) above (Efron & Tibshirani
    1993, 12.5; the outer one: the interval never narrower); -inf / +inf beyond what B resamples resolve (p < 1 /
    (B + 1)): no interval from so few resamples, so nothing is decided.
    """
    probs = np.asarray(probs, dtype=float)
    b = tstar.shape[1]
    tail = np.floor(np.minimum(probs, 1.0 - probs) * (b + 1) + 1e-9).astype(int)  # order statistic from the end
    k = np.where(probs < 0.5, tail - 1, b - tail)  # 0-based
    out = tstar[:, np.clip(k, 0, b - 1)]
    return np.where(tail >= 1, out, np.where(probs < 0.5, -np.inf, np.inf))
