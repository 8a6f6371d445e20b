"""Group-sequential design of a confirmatory profile: alpha spending, boundaries, and the decision rule.

Alpha spending, boundaries for the paired t statistic at each look, and the decision rule that carries a Holm
family over every verdict kind across looks, each verdict read off one interval (the hull of the t's repeated CI
and the studentized bootstrap's) with a skew guard; step by step, its proof and what it does not do:
docs/sequential.md (the normal-case bounds they are checked against: tests/analysis/test_sequential.py).

Sources: Lan & DeMets (1983), Biometrika 70(3): alpha spending (:func:`spent`; R gsDesign's
``sfLDOF``, ``sfLDPocock``). Jennison & Turnbull (2000), *Group Sequential Methods with Applications
to Clinical Trials*: the canonical joint distribution (ch. 3), t-tests with unknown variance (3.8),
repeated CIs (ch. 9), conditional power (ch. 10). Maurer & Bretz (2013), Statistics in
Biopharmaceutical Research 5(4): Holm across looks, a rejected hypothesis passing its level on.
Shaffer (1986), JASA 81: Holm over logically related hypotheses. Hall (1992), *The Bootstrap and
Edgeworth Expansion*: the bootstrap-t's skew correction. Bahadur & Savage (1956), Ann. Math. Stat. 27:
no test of a mean holds for every distribution (hence the skew guard).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
from scipy import stats

from harness.analysis import paired

SPENDING = {
    "obrien_fleming": lambda alpha, t: 2.0 - 2.0 * stats.norm.cdf(stats.norm.isf(alpha / 2) / np.sqrt(t)),
    "pocock": lambda alpha, t: alpha * np.log1p((np.e - 1.0) * t),
}
"""The alpha-spending functions a ``sequential:`` block may name (Lan & DeMets 1983): name -> cumulative alpha
spent at information fractions ``t`` (an array).

The names are :data:`harness.experiment.declaration.SPENDING_FUNCTIONS` (a test checks they agree); this module
imports nothing of the harness above the statistics.
"""

N_PATHS = 2**19
"""Simulated null paths of the paired t statistic behind :func:`t_bounds` (Monte Carlo SE of a
crossing probability p is sqrt(p / N_PATHS): 1.4e-4 at p = 0.01)."""
SIM_SEED = 20_000_531
FUTILITY_POWER = 0.10
"""The conditional power below which an open comparison stops for futility (docs/sequential.md)."""

OPEN, BETTER, WORSE, EQUIVALENT, FUTILE = 0, 1, -1, 2, 3
"""The outcome codes of :class:`Decisions`."""


def spent(spending: str, alpha: float, fractions) -> np.ndarray:
    """Cumulative alpha spent at information ``fractions`` (seeds at the look / at the last, in (0, 1]).

    O'Brien-Fleming-like ``2 - 2 Phi(z_{1-alpha/2} / sqrt(t))``, Pocock-like ``alpha ln(1 + (e - 1) t)``.

    Raises:
        ValueError: for an unknown ``spending`` name.
    """
    if spending not in SPENDING:
        raise ValueError(f"unknown spending function {spending!r}; choose one of {', '.join(SPENDING)}")
    return SPENDING[spending](alpha, np.asarray(fractions, dtype=float))


@functools.lru_cache(maxsize=8)
def _null_t(looks: tuple[int, ...]) -> np.ndarray:
    """|paired t| at each look of :data:`N_PATHS` null paths of standard normal differences, (N_PATHS, K)."""
    rng = np.random.default_rng(SIM_SEED)
    n = np.asarray(looks)
    out = np.empty((N_PATHS, len(looks)))
    chunk = max(1, 2**21 // looks[-1])
    for start in range(0, N_PATHS, chunk):
        x = rng.standard_normal((min(chunk, N_PATHS - start), looks[-1]))
        s, ss = np.cumsum(x, axis=1)[:, n - 1], np.cumsum(x * x, axis=1)[:, n - 1]
        mean = s / n
        out[start : start + len(x)] = np.abs(mean) / np.sqrt((ss - n * mean**2) / (n - 1) / n)
    return out


@functools.lru_cache(maxsize=256)
def t_bounds(looks: tuple[int, ...], alpha: float, spending: str) -> np.ndarray:
    """Two-sided bounds for |paired t| at each look, spending ``alpha`` in total.

    ``looks``: pairs at each look, increasing; the first at least 2 (how: docs/sequential.md, "The decision rule",
    step 1). An infinite bound: no alpha left to spend at that look.
    """
    n = np.asarray(looks, dtype=float)
    target = spent(spending, alpha, n / n[-1]) * N_PATHS
    paths = _null_t(tuple(looks))
    out = np.empty(len(looks))
    out[0] = stats.t.isf(target[0] / N_PATHS / 2, looks[0] - 1)
    alive = paths[:, 0] < out[0]
    for k in range(1, len(looks)):
        vals = np.sort(paths[alive, k])[::-1]  # descending
        m = int(round(target[k] - (N_PATHS - alive.sum())))  # crossings still to spend
        out[k] = np.inf if m <= 0 else (0.0 if m >= len(vals) else (vals[m - 1] + vals[m]) / 2)
        alive &= paths[:, k] < out[k]
    out.setflags(write=False)  # cached: shared by every caller
    return out


@dataclass(frozen=True)
class Design:
    """A profile's ``sequential:`` block, resolved.

    Pairs at each look, the spending function, the family's total two-sided level, and whether open comparisons
    may stop for futility.
    """

    looks: tuple[int, ...]
    spending: str
    alpha: float
    futility: bool = True

    def p_table(self, m: int) -> np.ndarray:
        """The two-sided nominal p of each look's t bound (:func:`t_bounds`), at its own degrees of freedom.

        At level ``alpha / j`` for j = 1..m remaining Holm members, (m, K): a comparison with fewer pairs than the
        look (a failed run) is judged on this p.
        """
        levels = [min(self.alpha / j, 0.999) for j in range(1, m + 1)]
        return 2.0 * stats.t.sf([t_bounds(self.looks, a, self.spending) for a in levels], np.asarray(self.looks) - 1)


SKEW_LIMIT = 1 / np.sqrt(32)
"""The skew guard: at a look of n pairs, a family whose pooled sample skewness exceeds ``SKEW_LIMIT * sqrt(n)``
in size (0.5 at 8 pairs, 1 at 32) has the end of each interval on the side of the skew widened by
:func:`skew_margin` (docs/statistics.md, "Tests that hold without normality")."""
SKEW_MIN_VALUES = 16
"""The fewest pooled differences (pairs x members) from which the guard reads a skewness: at a look with fewer
(8 pairs of a single comparison), both ends are widened."""
SKEW_COVERED = 6.2
"""The skewness the guard's margin is built for: a centred lognormal with sigma 1 (6.18), the most skewed
differences benchmarks/sequential.py draws."""


def skew_margin(bound, n):
    """What the skew guard adds to a |t| bound at n pairs: the t quantile's shift at skewness :data:`SKEW_COVERED`.

    The one-term Edgeworth expansion of the one-sample t statistic, P(T <= x) = Phi(x) + g (2x^2 + 1) phi(x) /
    (6 sqrt(n)) + O(1/n) (Hall 1992, section 2.6), moves the quantile at x by g (2x^2 + 1) / (6 sqrt(n)). Arrays
    broadcast; the same shape.
    """
    return SKEW_COVERED * (2 * np.square(bound) + 1) / (6 * np.sqrt(n))


def bootstrap_inputs(design: Design, m: int, k: int, tstar: np.ndarray) -> np.ndarray:
    """The bootstrap-t quantiles :func:`decide` reads at look ``k``, (rows, 2, m).

    From the sorted bootstrap-t distributions ``tstar`` (rows, B) of :func:`harness.analysis.paired.bootstrap_t`,
    read at (2, m) probabilities: [lower, upper] x j = 1..m remaining Holm members of a family of ``m``, from the
    nominal two-sided p of the look's bound at level alpha / j.
    """
    p = design.p_table(m)[:, k]
    probs = np.stack([p / 2, 1 - p / 2])
    return paired.bootstrap_quantiles(tstar, probs.ravel()).reshape(len(tstar), *probs.shape)


def pooled_skewness(residuals: np.ndarray) -> np.ndarray:
    """The sample skewness (moment estimator, g1) of the residuals pooled over a family, (S, N) -> (S,).

    The residuals: each member's differences minus its own mean, so that the members' shifts do not count as skew.
    """
    r = np.asarray(residuals, dtype=float)
    m2, m3 = (r**2).mean(axis=1), (r**3).mean(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(m2 > 0, m3 / m2**1.5, 0.0)


@dataclass(frozen=True)
class Decisions:
    """What the sequential rule decided for each comparison of each experiment, each (S, m).

    At the look it stopped at (or the latest), its Holm level L and the interval that decides every kind of
    verdict, of coverage 1 - L: the hull of the paired t's repeated CI (|t| bound ``bound``) and the bootstrap-t's.
    """

    outcome: np.ndarray  # OPEN, BETTER, WORSE, EQUIVALENT or FUTILE
    look: np.ndarray  # index of the look at which it stopped; -1 while open
    level: np.ndarray  # its Holm level (alpha / remaining members) when it stopped or now
    bound: np.ndarray  # the |t| bound of that look and level
    rci_low: np.ndarray  # the deciding interval at that look
    rci_high: np.ndarray
    skewed: np.ndarray  # the skew guard's margin held a verdict back at that look (the pooled skewness, else NaN)
    margin_low: np.ndarray  # what the skew guard added to the bound of the interval's lower end (0: nothing)
    margin_high: np.ndarray  # and of its upper end
    resolved: np.ndarray  # a direction and within ±sesoi at once: both of its nulls rejected, its level passed on


@np.errstate(invalid="ignore", divide="ignore")  # no test (NaN) where there are fewer than 2 pairs
def decide(design: Design, t, n, delta, sd, boot, sesoi=None, skew=None) -> Decisions:
    """Replay the looks of a family of paired comparisons and decide each at the last look given.

    Vectorised over experiments (docs/sequential.md, "The decision rule"). ``t, n, delta, sd``: per (experiment,
    look reached, member), (S, K' <= K, m) (NaN: no test).

    Args:
        design: the profile's design.
        t: oriented paired t.
        n: pairs.
        delta: mean difference.
        sd: SD of differences.
        boot: (S, K', m, 2, m), the bootstrap-t quantiles of :func:`bootstrap_inputs` (NaN: that interval decides
            nothing).
        sesoi: per member (m,), or None (no equivalence, no futility).
        skew: the family's pooled skewness per look (S, K'), None: read as 0 (the guard then widens only a look
            with too few differences to show a skew).
    """
    t, n, delta, sd, boot = (np.asarray(a, dtype=float) for a in (t, n, delta, sd, boot))
    s_count, k_count, m = t.shape
    skew = np.zeros((s_count, k_count)) if skew is None else np.asarray(skew, dtype=float)
    last = len(design.looks) - 1
    p_dir = design.p_table(m)
    outcome = np.zeros((s_count, m), dtype=np.int8)
    look = np.full((s_count, m), -1)
    resolved = np.zeros((s_count, m), dtype=bool)
    kept = tuple(np.full((s_count, m), np.nan) for _ in range(7))  # level, bound, low, high, skewed, margins
    sesoi = None if sesoi is None else np.asarray(sesoi, dtype=float)
    rows = np.arange(s_count)[:, None]
    for k in range(k_count):
        se = sd[:, k] / np.sqrt(n[:, k])
        limit = SKEW_LIMIT * np.sqrt(design.looks[k])
        blind = design.looks[k] * m < SKEW_MIN_VALUES
        # right skew: a sample that missed the long right tail underestimates the mean, so the upper end widens
        right, left = ((skew[:, k] > limit) | blind)[:, None], ((skew[:, k] < -limit) | blind)[:, None]  # (S, 1)
        while True:  # Holm within the look: a member whose two nulls are both rejected passes its level on
            j = np.maximum(m - resolved.sum(axis=1), 1)  # (S,)
            q = boot[:, k][rows, np.arange(m), :, (j - 1)[:, None]]  # (S, m, 2)
            q = np.where(np.isnan(q), np.array([-np.inf, np.inf]), q)  # no bootstrap: an infinite interval
            level, c, plain_low, plain_high = _interval(design.alpha, j, p_dir[j - 1, k], n[:, k], delta[:, k], se, q)
            margin = skew_margin(c, n[:, k])
            margins = (np.where(left, margin, 0.0), np.where(right, margin, 0.0))
            wide_low, wide_high = delta[:, k] - (c + margins[0]) * se, delta[:, k] + (c + margins[1]) * se
            low, high = np.minimum(plain_low, wide_low), np.maximum(plain_high, wide_high)
            is_open = outcome == OPEN
            better, worse = is_open & (low > 0), is_open & (high < 0)
            within = np.zeros_like(better) if sesoi is None else is_open & (low > -sesoi) & (high < sesoi)
            plain = is_open & ((plain_low > 0) | (plain_high < 0))
            if sesoi is not None:
                plain |= is_open & (plain_low > -sesoi) & (plain_high < sesoi)
            stop = better | worse | within
            guard = np.where(plain & ~stop, skew[:, k][:, None], np.nan)  # held back by the skew guard
            now = (level, c, low, high, guard, *margins)
            for value, into in zip(now, kept):  # a stopping member's deciding interval, an open one's latest
                into[is_open] = value[is_open]
            outcome[better], outcome[worse] = BETTER, WORSE
            outcome[within & ~better & ~worse] = EQUIVALENT
            look[stop] = k
            passes = (better | worse) & within
            resolved |= passes
            if not passes.any():
                break
        if sesoi is None or not design.futility or k >= last:
            continue
        j = np.maximum(m - resolved.sum(axis=1), 1)
        c_end = stats.norm.isf(p_dir[j - 1, last] / 2)[:, None]
        power = _conditional_power(design.looks[k], design.looks[-1], t[:, k], sd[:, k], sesoi, c_end)
        futile = (outcome == OPEN) & (power < FUTILITY_POWER)
        outcome[futile], look[futile] = FUTILE, k
    return Decisions(outcome, look, *kept, resolved)


def _interval(alpha: float, j, p_cut, n, delta, se, q) -> tuple[np.ndarray, ...]:
    """Level alpha / j, the |t| bound of nominal p ``p_cut`` at n - 1 degrees of freedom, and the deciding hull.

    The hull of delta -+ bound x se and the bootstrap-t interval [delta - q_upper x se, delta - q_lower x se]
    (``q``: (S, m, 2) quantiles), each (S, m).
    """
    c = stats.t.isf(p_cut[:, None] / 2, n - 1)  # under decide's errstate
    below, above = np.maximum(c, q[:, :, 1]), np.maximum(c, -q[:, :, 0])
    return np.broadcast_to((alpha / j)[:, None], c.shape), c, delta - below * se, delta + above * se


def _conditional_power(n_k: int, n_end: int, t, sd, sesoi, c_end) -> np.ndarray:
    """Probability of crossing the last look's bound ``c_end`` (as a z) from look k (``n_k`` pairs, |t| observed).

    Were the true effect the sesoi in the observed direction: the score as Brownian motion with drift (J&T section
    10.2), interim crossings ignored (a lower bound).
    """
    theta = sesoi / sd  # standardised effect per pair
    gap = n_end - n_k
    return stats.norm.cdf((np.abs(t) * np.sqrt(n_k) + theta * gap - c_end * np.sqrt(n_end)) / np.sqrt(gap))
