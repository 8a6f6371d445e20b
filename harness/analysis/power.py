"""Power of the two-sided paired t-test over seeds (statsmodels ``TTestPower``), and the seeds a
verdict needs (:func:`seeds_for_verdict`, what ``ablate plan`` prints)."""

from __future__ import annotations

import functools
import math
import warnings

import numpy as np
from scipy import stats
from statsmodels.stats.power import TTestPower

from harness.analysis.paired import NAN


@functools.lru_cache(maxsize=1024)
def _detectable_effect(n: int, alpha: float, power: float) -> float:
    return float(TTestPower().solve_power(effect_size=None, nobs=n, alpha=alpha, power=power))


def mde(n: int, sd_diff: float, alpha: float = 0.05, power: float = 0.8) -> float:
    """Minimum detectable mean difference with ``n`` pairs: ``TTestPower().solve_power(effect_size=None,
    ...)`` times ``sd_diff`` (0.996 SD at n=10, alpha 0.05, power 0.8); NaN for n < 2 or a NaN sd."""
    if n < 2 or not np.isfinite(sd_diff):
        return NAN
    return _detectable_effect(int(n), float(alpha), float(power)) * float(sd_diff)


def power_at(effect: float, sd_diff: float, n: int, alpha: float = 0.05) -> float:
    """Power with ``n`` pairs to detect a mean difference ``effect`` at SD ``sd_diff``: ``TTestPower().power``
    two-sided, as its two tails, since scipy's noncentral t gives NaN for the far lower tail at large
    effect / SD (below 1e-15: counted as 0). 1.0 for an SD of 0 and an effect; NaN for n < 2 or a NaN SD."""
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
    """Seeds a direction needs: :func:`seeds_needed`, and at least :func:`sign_flip_min_seeds`, since
    the exact sign-flip test must reject too. Raises ValueError as :func:`seeds_needed`."""
    return max(seeds_needed(effect, sd_diff, alpha=alpha, power=power), sign_flip_min_seeds(alpha))


def seeds_needed(effect: float, sd_diff: float, alpha: float = 0.05, power: float = 0.8) -> int:
    """Pairs needed to detect ``effect`` with ``power``: ``TTestPower().solve_power(nobs=None, ...)``
    rounded up; where that root finder fails or is wrong (alpha about 1e-4 and below), a search on the
    upper tail. Raises ValueError for ``effect`` 0, ``sd_diff`` not positive, alpha below 1e-100, or no answer."""
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
    """The fewest differing pairs m at which the exact sign-flip test can reach p < ``alpha``: its
    smallest p is 2 / 2**m (6 at alpha 0.05, 8 at 0.05 / 6)."""
    m = math.floor(math.log2(2 / alpha)) + 1
    return m if 2 / 2**m < alpha else m + 1  # guard the float at exact powers of two
