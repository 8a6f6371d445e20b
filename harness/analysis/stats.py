"""Statistics over repeated seeds: thin wrappers over scipy and statsmodels.

Every test, interval and power calculation is the library's own; only one-line quantities are
written here (d_z, wins/ties/losses). Orientation is fixed once: a positive ``delta`` always
means the variant is better, whatever the metric's direction (``higher_is_better``).

Degenerate input never raises: fewer than 2 values (or pairs) gives NaN statistics. Constant
paired differences follow scipy's ``ttest_rel``: all equal and non-zero give ``t = ±inf, p = 0``
with a zero-width CI; all zero give ``t = p = NaN``. Invalid input (duplicate seeds, unknown
baseline) raises ``ValueError``.

Does not do: mixed models, bootstrap intervals (percentile bootstrap undercovers at n <= 10),
corrections across several ``compare`` calls (collect the raw ``p`` and call ``adjust``).
"""

from __future__ import annotations

import contextlib
import functools
import math
import warnings
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.stats.meta_analysis import effectsize_smd
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.power import TTestPower
from statsmodels.stats.weightstats import ttost_paired

from harness.analysis import verdicts as vd

NAN = float("nan")
EXACT_PERMUTATIONS = 2**16  # sign-flip test is exact for n <= 16 pairs, Monte Carlo above


@contextlib.contextmanager
def _quiet():
    """Silence scipy's precision / divide warnings on the documented degenerate inputs."""
    with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def _clean(values) -> tuple[np.ndarray, int]:
    x = np.asarray(values, dtype=float).ravel()
    keep = ~np.isnan(x)
    return x[keep], int((~keep).sum())


@dataclass(frozen=True)
class Descriptives:
    n: int  # values used (NaNs dropped)
    n_nan: int  # NaNs dropped
    mean: float
    sd: float  # ddof=1
    ci_low: float  # t-interval of the mean
    ci_high: float


def describe(values, confidence: float = 0.95) -> Descriptives:
    """Mean, SD (ddof=1) and t-interval of the mean (``scipy.stats.ttest_1samp`` CI).

    NaNs are dropped and counted. n=1 gives NaN sd and CI; n=0 NaN everything.
    """
    x, n_nan = _clean(values)
    n = len(x)
    if n < 2:
        return Descriptives(n, n_nan, float(x.mean()) if n else NAN, NAN, NAN, NAN)
    with _quiet():
        ci = stats.ttest_1samp(x, 0.0).confidence_interval(confidence)
    return Descriptives(n, n_nan, float(x.mean()), float(x.std(ddof=1)), float(ci.low), float(ci.high))


@dataclass(frozen=True)
class Paired:
    n_pairs: int
    n_dropped: int  # seeds missing on either side, or NaN on either side
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


def _pair(baseline: pd.Series, variant: pd.Series) -> tuple[np.ndarray, np.ndarray, int]:
    for s in (baseline, variant):
        if s.index.has_duplicates:
            raise ValueError(f"duplicate seeds: {sorted(set(s.index[s.index.duplicated()]))}")
    both = pd.concat({"b": baseline, "v": variant}, axis=1, join="outer").sort_index()
    ok = both.notna().all(axis=1)
    return both["b"][ok].to_numpy(float), both["v"][ok].to_numpy(float), int((~ok).sum())


def paired_test(baseline: pd.Series, variant: pd.Series, higher_is_better: bool, confidence: float = 0.95) -> Paired:
    """Paired comparison on the seeds both series share (Series indexed by seed).

    ``p`` from ``scipy.stats.ttest_rel``, CI from its ``confidence_interval``; ``p_perm`` from
    ``scipy.stats.permutation_test(permutation_type='samples')`` on the differences, exact up
    to 16 pairs (minimum two-sided p is 2 / 2**n: 0.0625 at n=5), seeded Monte Carlo above.
    """
    b, v, dropped = _pair(baseline, variant)
    sign = 1.0 if higher_is_better else -1.0
    d = sign * (v - b)
    n = len(d)
    wins, ties, losses = int((d > 0).sum()), int((d == 0).sum()), int((d < 0).sum())
    prob = (wins + ties / 2) / n if n else NAN
    if n < 2:
        delta = float(d.mean()) if n else NAN
        return Paired(n, dropped, delta, NAN, NAN, NAN, NAN, NAN, NAN, NAN, prob, wins, ties, losses, tuple(d))
    with _quiet():
        res = stats.ttest_rel(sign * v, sign * b)
        ci = res.confidence_interval(confidence)
        perm = stats.permutation_test(
            (d,),
            np.mean,
            permutation_type="samples",
            axis=-1,
            vectorized=True,
            n_resamples=EXACT_PERMUTATIONS,
            rng=np.random.default_rng(0),
        )
        sd = float(d.std(ddof=1))
        d_z = float(np.float64(d.mean()) / sd)
    return Paired(
        n,
        dropped,
        float(d.mean()),
        float(ci.low),
        float(ci.high),
        float(res.statistic),
        float(res.pvalue),
        float(perm.pvalue),
        d_z,
        sd,
        prob,
        wins,
        ties,
        losses,
        tuple(d),
    )


@dataclass(frozen=True)
class Welch:
    n_baseline: int
    n_variant: int
    delta: float  # mean(variant) - mean(baseline), oriented
    ci_low: float  # Welch t-interval of delta, oriented
    ci_high: float
    t: float
    df: float  # Welch-Satterthwaite
    p: float  # two-sided Welch t-test
    hedges_g: float  # bias-corrected standardised mean difference, oriented
    p_mannwhitney: float  # two-sided Mann-Whitney U


def welch_test(baseline, variant, higher_is_better: bool, confidence: float = 0.95) -> Welch:
    """Unpaired comparison: ``scipy.stats.ttest_ind(equal_var=False)`` with its CI,
    Hedges' g from ``statsmodels.stats.meta_analysis.effectsize_smd`` (pooled SD, correction
    J = 1 - 3 / (4 (n1 + n2) - 9); Hedges 1981), ``scipy.stats.mannwhitneyu``. NaNs dropped.
    """
    sign = 1.0 if higher_is_better else -1.0
    a, _ = _clean(baseline)
    b, _ = _clean(variant)
    if len(a) < 2 or len(b) < 2:
        delta = sign * (b.mean() - a.mean()) if len(a) and len(b) else NAN
        return Welch(len(a), len(b), float(delta), NAN, NAN, NAN, NAN, NAN, NAN, NAN)
    a, b = sign * a, sign * b
    with _quiet():
        res = stats.ttest_ind(b, a, equal_var=False)
        ci = res.confidence_interval(confidence)
        g, _ = effectsize_smd(b.mean(), b.std(ddof=1), len(b), a.mean(), a.std(ddof=1), len(a))
        mw = stats.mannwhitneyu(b, a, alternative="two-sided")
    return Welch(
        len(a),
        len(b),
        float(b.mean() - a.mean()),
        float(ci.low),
        float(ci.high),
        float(res.statistic),
        float(res.df),
        float(res.pvalue),
        float(g),
        float(mw.pvalue),
    )


class Adjusted(NamedTuple):
    p_adj: np.ndarray  # same shape as the input; NaN where the input was NaN
    family_size: int  # number of non-NaN p-values adjusted together


def adjust(pvalues, method: str = "holm") -> Adjusted:
    """Multiplicity adjustment by ``statsmodels.stats.multitest.multipletests``.

    ``method`` is always passed explicitly: statsmodels' own default is Holm-Sidak ("hs").
    Use "holm" for confirmatory families, "fdr_bh" for exploratory ones. NaN p-values are
    skipped: they stay NaN and do not count in the family. To correct across several slices
    or metrics, collect the raw ``p`` column of several ``compare`` outputs and call this once.
    """
    p = np.asarray(pvalues, dtype=float)
    out = np.full(p.shape, NAN)
    ok = ~np.isnan(p)
    if ok.sum() == 1:  # every method is the identity for a family of one; skipping it also
        out[ok] = p[ok]  # avoids the gc.collect() that statsmodels' Holm runs on every call
    elif ok.any():
        out[ok] = multipletests(p[ok], method=method)[1]
    return Adjusted(out, int(ok.sum()))


@functools.lru_cache(maxsize=1024)
def _detectable_effect(n: int, alpha: float, power: float) -> float:
    return float(TTestPower().solve_power(effect_size=None, nobs=n, alpha=alpha, power=power))


def mde(n: int, sd_diff: float, alpha: float = 0.05, power: float = 0.8) -> float:
    """Minimum detectable mean difference of a two-sided paired t-test with ``n`` pairs:
    ``TTestPower().solve_power(effect_size=None, ...)`` (standardised, d_z) times ``sd_diff``.
    About 0.996 SD at n=10, alpha 0.05, power 0.8. NaN for n < 2 or a NaN sd.
    """
    if n < 2 or not np.isfinite(sd_diff):
        return NAN
    return _detectable_effect(int(n), float(alpha), float(power)) * float(sd_diff)


def seeds_needed(effect: float, sd_diff: float, alpha: float = 0.05, power: float = 0.8) -> int:
    """Pairs (seeds) a two-sided paired t-test needs to detect ``effect`` with ``power``:
    ``TTestPower().solve_power(nobs=None, ...)``, rounded up. The inverse of ``mde``. Where that
    root finder fails or is wrong (alpha about 1e-4 and below), a search on the upper tail.

    Raises:
        ValueError: if ``effect`` is 0 or ``sd_diff`` is not positive, alpha is below 1e-100,
            or no answer can be found.
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


def tost_paired(diffs, sesoi: float) -> float:
    """Equivalence p (two one-sided tests, margin ±sesoi) on paired differences, by
    ``statsmodels.stats.weightstats.ttost_paired``. Equivalent at level alpha iff p < alpha.
    NaN for fewer than 2 differences.
    """
    d, _ = _clean(diffs)
    if len(d) < 2 or not sesoi > 0:
        return NAN
    with _quiet():
        return float(ttost_paired(d, np.zeros_like(d), -sesoi, sesoi)[0])


def sign_flip_min_seeds(alpha: float) -> int:
    """The fewest differing pairs m at which the exact two-sided sign-flip test can reach
    p < ``alpha``: its smallest p is 2 / 2**m (all signs alike), so m = floor(log2(2 / alpha)) + 1
    (6 at alpha 0.05, 8 at 0.05 / 6)."""
    m = math.floor(math.log2(2 / alpha)) + 1
    return m if 2 / 2**m < alpha else m + 1  # guard the float at exact powers of two


def verdict(
    p_adj: float,
    ci_low: float,
    ci_high: float,
    *,
    perm_p_adj: float,
    sesoi: float | None = None,
    tost_p: float = NAN,
    alpha: float = 0.05,
    confirmatory: bool = True,
    mde: float = NAN,
) -> str:
    """One short word for a comparison, in this order. Every p here is adjusted within the
    comparison's family (the same family and method for the t-test, the sign-flip test and TOST).

    - ``"pilot"``: not a confirmatory run; no claim is made.
    - ``"better"`` / ``"worse"``: the paired t-test **and** the exact sign-flip test both reject
      (``p_adj < alpha`` and ``perm_p_adj < alpha``); sign of the CI midpoint (= delta). This
      wins over equivalence: a significant effect smaller than sesoi still reads "better".
      Requiring both keeps a direction from resting on the t-test's normal model where the
      distribution-free test disagrees: with ties or few pairs (differences [0.1] x 5 + [0] x 3:
      t-test p 0.011, exact p 0.0625) and with outliers. The exact test's smallest two-sided p
      is 2 / 2**m with m non-zero differences (0.0078 at 8 seeds, 0.25 at 3), so in a Holm
      family of k a direction needs at least :func:`sign_flip_min_seeds` ``(alpha / k)`` seeds
      that differ (6 at k = 1, 8 at k = 6).
    - ``"equivalent (±sesoi)"``: TOST p < alpha.
    - ``"inconclusive (t-test only: exact sign-flip p adj x)"``: the t-test rejects, the exact
      test does not, and equivalence is not shown.
    - ``"inconclusive (MDE x.xxx)"``: otherwise; MDE omitted when unknown (n < 2).
    """
    if not confirmatory:
        return vd.PILOT
    if p_adj < alpha and perm_p_adj < alpha:
        return vd.direction((ci_low + ci_high) / 2 > 0)
    if sesoi is not None and tost_p < alpha:
        return vd.equivalent(sesoi)
    if p_adj < alpha:
        return vd.inconclusive(perm_p_adj=perm_p_adj)
    return vd.inconclusive(mde=mde if np.isfinite(mde) else None)


class Family(NamedTuple):
    p_adj: np.ndarray  # adjusted t-test p; NaN where p is NaN
    p_perm_adj: np.ndarray  # adjusted sign-flip p, over the same members
    p_tost_adj: np.ndarray  # adjusted TOST p, over the same members
    mde: np.ndarray  # MDE at alpha / size, the level of the family's first Holm step
    size: int  # members: comparisons with a defined t-test p


def adjust_family(p, p_perm, p_tost, n_pairs, sd_diff, method: str, alpha: float = 0.05) -> Family:
    """Adjust every p printed or judged for one family of comparisons, and size the MDE for it.

    The members are the comparisons whose t-test ``p`` is defined; their sign-flip p and TOST p
    are adjusted by the same ``method`` over the same members (a comparison whose t-test is
    undefined, e.g. no pair differs, is in none of the three), so that a verdict reads three p
    of one family (:func:`verdict`). The MDE of each member is :func:`mde` at ``alpha / size``.

    Args:
        p, p_perm, p_tost: raw p per comparison (NaN: undefined / no TOST).
        n_pairs, sd_diff: per comparison, for the MDE.
        method: a ``multipletests`` method ("holm", "fdr_bh").
    """
    p = np.asarray(p, dtype=float)
    member = ~np.isnan(p)
    adj, size = adjust(p, method)
    perm = adjust(np.where(member, np.asarray(p_perm, dtype=float), NAN), method).p_adj
    tost = adjust(np.where(member, np.asarray(p_tost, dtype=float), NAN), method).p_adj
    m_de = np.array([mde(int(n), float(sd), alpha / max(size, 1)) for n, sd in zip(n_pairs, sd_diff)], dtype=float)
    return Family(adj, perm, tost, m_de, size)


@dataclass(frozen=True)
class Friedman:
    statistic: float
    p: float
    n_seeds: int  # complete seeds used (the blocks, N)
    mean_ranks: pd.Series  # per variant; 1 = best
    k: int = 0  # variants (treatments); the test has k - 1 degrees of freedom
    cd: float = NAN  # Nemenyi critical difference of mean ranks at the call's alpha

    @property
    def df(self) -> int:
        return self.k - 1


def nemenyi_cd(k: int, n: int, alpha: float = 0.05) -> float:
    """Nemenyi critical difference of mean ranks (Demsar, JMLR 2006, sec. 3.2.2):
    ``CD = q_alpha * sqrt(k (k + 1) / (6 N))`` with ``q_alpha`` the studentized range quantile
    ``scipy.stats.studentized_range.ppf(1 - alpha, k, inf) / sqrt(2)`` (2.569 at k=4, alpha
    0.05: Demsar's Table 5a). Two variants whose mean ranks over ``n`` blocks differ by more
    than CD differ at level ``alpha``. NaN for k < 2 or n < 1.
    """
    if k < 2 or n < 1:
        return NAN
    q = float(stats.studentized_range.ppf(1 - alpha, k, np.inf)) / math.sqrt(2)
    return q * math.sqrt(k * (k + 1) / (6 * n))


def friedman(table: pd.DataFrame, higher_is_better: bool = True, alpha: float = 0.05) -> Friedman:
    """Friedman test over variants (rows = seeds, columns = variants), complete seeds only:
    ``scipy.stats.friedmanchisquare``; mean ranks by ``scipy.stats.rankdata`` (1 = best,
    ties averaged); ``cd`` by :func:`nemenyi_cd` at ``alpha``. Fewer than 3 variants or 2
    complete seeds gives NaN statistic, p and cd.
    """
    full = table.dropna()
    k = table.shape[1]
    ranks = stats.rankdata(-full.to_numpy(float) if higher_is_better else full.to_numpy(float), axis=1)
    mean_ranks = pd.Series(ranks.mean(axis=0) if len(full) else NAN, index=table.columns)
    if k < 3 or len(full) < 2:
        return Friedman(NAN, NAN, len(full), mean_ranks, k)
    with _quiet():
        res = stats.friedmanchisquare(*full.to_numpy(float).T)
    return Friedman(float(res.statistic), float(res.pvalue), len(full), mean_ranks, k, nemenyi_cd(k, len(full), alpha))


COLUMNS = [
    "variant",
    "n",
    "mean",
    "sd",
    "ci_low",
    "ci_high",
    "n_pairs",
    "delta",
    "delta_ci_low",
    "delta_ci_high",
    "wins",
    "ties",
    "losses",
    "d_z",
    "sd_diff",
    "prob_improvement",
    "t",
    "p",
    "p_perm",
    "p_adj",
    "p_perm_adj",
    "family_size",
    "p_tost",
    "p_tost_adj",
    "mde",
    "verdict",
]


def compare(
    df: pd.DataFrame,
    *,
    baseline: str,
    higher_is_better: bool,
    sesoi: float | None = None,
    alpha: float = 0.05,
    confidence: float = 0.95,
    confirmatory: bool = True,
    p_adjust: str = "holm",
) -> pd.DataFrame:
    """Every variant against the baseline, paired by seed, for one metric in one slice.

    Args:
        df: tidy rows with columns ``variant``, ``seed``, ``value``; one row per (variant, seed).
        baseline: the variant the others are compared with.
        higher_is_better: direction of the metric; ``delta > 0`` always means better.
        sesoi: smallest effect size of interest (metric units); enables the TOST equivalence.
        alpha, confidence: test level; level of the t-intervals.
        confirmatory: False gives the verdict ``"pilot"`` for every variant.
        p_adjust: ``multipletests`` method, applied within this call's family (all variants vs
            the baseline with a defined ``p``) to ``p`` (-> ``p_adj``), to the sign-flip p
            ``p_perm`` (-> ``p_perm_adj``) and to the TOST p ``p_tost`` (-> ``p_tost_adj``).

    Returns:
        One row per variant, baseline first (descriptives only, verdict ``"baseline"``), then the
        others in order of appearance, with the columns of ``COLUMNS``. ``mde`` is the minimum
        detectable delta at 80 % power with the observed sd of differences and alpha divided by
        the family size (the first, strictest Holm step). To adjust across several slices,
        re-run :func:`adjust_family` on the concatenated rows (as ``analysis`` does for the
        primary comparisons).

    Raises:
        ValueError: missing columns, duplicate (variant, seed) rows or an unknown baseline.
    """
    missing = {"variant", "seed", "value"} - set(df.columns)
    if missing:
        raise ValueError(f"compare needs columns variant, seed, value; missing {sorted(missing)}")
    if df.duplicated(["variant", "seed"]).any():
        raise ValueError("duplicate (variant, seed) rows; select one metric and one slice first")
    names = list(pd.unique(df["variant"]))
    if baseline not in names:
        raise ValueError(f"baseline {baseline!r} not among variants {names}")
    names = [baseline] + [v for v in names if v != baseline]
    series = {v: g.set_index("seed")["value"].astype(float) for v, g in df.groupby("variant")}

    rows = [vars(describe(series[baseline], confidence)) | {"variant": baseline}]
    tests = [paired_test(series[baseline], series[v], higher_is_better, confidence) for v in names[1:]]
    tost = [tost_paired(t.diffs, sesoi) if sesoi else NAN for t in tests]
    fam = adjust_family(
        [t.p for t in tests],
        [t.p_perm for t in tests],
        tost,
        [t.n_pairs for t in tests],
        [t.sd_diff for t in tests],
        p_adjust,
        alpha,
    )
    for i, (v, t) in enumerate(zip(names[1:], tests)):
        rows.append(
            vars(describe(series[v], confidence))
            | {
                "variant": v,
                "n_pairs": t.n_pairs,
                "delta": t.delta,
                "delta_ci_low": t.ci_low,
                "delta_ci_high": t.ci_high,
                "wins": t.wins,
                "ties": t.ties,
                "losses": t.losses,
                "d_z": t.d_z,
                "sd_diff": t.sd_diff,
                "prob_improvement": t.prob_improvement,
                "t": t.t,
                "p": t.p,
                "p_perm": t.p_perm,
                "p_adj": fam.p_adj[i],
                "p_perm_adj": fam.p_perm_adj[i],
                "family_size": fam.size,
                "p_tost": tost[i],
                "p_tost_adj": fam.p_tost_adj[i],
                "mde": fam.mde[i],
                "verdict": verdict(
                    fam.p_adj[i],
                    t.ci_low,
                    t.ci_high,
                    perm_p_adj=fam.p_perm_adj[i],
                    sesoi=sesoi,
                    tost_p=fam.p_tost_adj[i],
                    alpha=alpha,
                    confirmatory=confirmatory,
                    mde=fam.mde[i],
                ),
            }
        )
    rows[0]["verdict"] = vd.BASELINE
    for r in rows[1:]:  # no pair differs: no spread, no test; say so rather than "inconclusive"
        if confirmatory and r["n_pairs"] >= 2 and r["ties"] == r["n_pairs"]:
            r["verdict"] = vd.identical(r["n_pairs"])
    out = {c: [r.get(c, NAN) for r in rows] for c in COLUMNS}
    for c in ("n", "n_pairs", "wins", "ties", "losses", "family_size"):
        out[c] = pd.array(out[c], dtype="Int64")  # NA on the baseline row
    return pd.DataFrame(out)


def outcome_compare(df: pd.DataFrame, *, baseline: str, alpha: float = 0.05, confirmatory: bool = True) -> pd.DataFrame:
    """Every variant against the baseline on a binary outcome per run (1 = the run finished, 0 =
    it diverged, raised or timed out), paired by seed.

    The test is the exact McNemar test (``statsmodels.stats.contingency_tables.mcnemar`` with
    ``exact=True``): a binomial test on the discordant pairs, which is also the exact sign-flip
    test of the paired 0/1 differences. With every pair concordant (no discordant pair) there is
    nothing to test: p = 1 and the verdict says the outcome was the same in all pairs. P-values
    are adjusted with Benjamini-Hochberg within the call (an exploratory family). The smallest
    attainable two-sided p with n discordant pairs is 2 * 0.5**n (8 pairs: 0.0078).

    Args:
        df: columns ``variant``, ``seed``, ``value`` (0 or 1); one row per (variant, seed).

    Returns:
        :func:`compare`'s columns; ``mean`` is the fraction of runs that finished, ``delta`` the
        mean paired difference (+ = the variant finished more often), ``p`` and ``p_perm`` the
        exact McNemar p.
    """
    from statsmodels.stats.contingency_tables import mcnemar

    frame = compare(
        df, baseline=baseline, higher_is_better=True, alpha=alpha, confirmatory=confirmatory, p_adjust="fdr_bh"
    )
    pvals = []
    for i in range(1, len(frame)):
        wins, losses = int(frame.loc[i, "wins"] or 0), int(frame.loc[i, "losses"] or 0)
        pvals.append(float(mcnemar([[0, wins], [losses, 0]], exact=True).pvalue) if wins + losses else 1.0)
    if not pvals:
        return frame
    p_adj, m = adjust(pvals, "fdr_bh")
    for i, (p, pa) in enumerate(zip(pvals, p_adj), start=1):
        frame.loc[i, ["p", "p_perm", "p_adj", "p_perm_adj", "t", "p_tost", "p_tost_adj", "mde"]] = [
            p,
            p,
            pa,
            pa,
            NAN,
            NAN,
            NAN,
            NAN,
        ]
        frame.loc[i, "family_size"] = m
        n = int(frame.loc[i, "n_pairs"] or 0)
        if not confirmatory:
            frame.loc[i, "verdict"] = vd.PILOT
        elif pa < alpha:
            frame.loc[i, "verdict"] = vd.direction(frame.loc[i, "delta"] > 0)
        elif frame.loc[i, "wins"] + frame.loc[i, "losses"] == 0:
            frame.loc[i, "verdict"] = vd.same_outcome(n)
        else:
            frame.loc[i, "verdict"] = vd.inconclusive()
    return frame
