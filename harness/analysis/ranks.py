"""All variants at once over seeds: the Friedman test on the per-seed ranks and the Nemenyi
critical difference of mean ranks (Demsar, JMLR 2006), by scipy."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from harness.analysis.paired import NAN, quiet


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
    """Nemenyi critical difference of mean ranks over ``n`` blocks (Demsar, JMLR 2006, sec. 3.2.2):
    ``CD = q_alpha * sqrt(k (k + 1) / (6 N))``, ``q_alpha`` the studentized range quantile / sqrt(2)
    (2.569 at k=4, alpha 0.05: Demsar's Table 5a). NaN for k < 2 or n < 1."""
    if k < 2 or n < 1:
        return NAN
    q = float(stats.studentized_range.ppf(1 - alpha, k, np.inf)) / math.sqrt(2)
    return q * math.sqrt(k * (k + 1) / (6 * n))


@quiet()
def friedman(table: pd.DataFrame, higher_is_better: bool = True, alpha: float = 0.05) -> Friedman:
    """Friedman test over variants (rows = seeds, columns = variants), complete seeds only, by
    ``scipy.stats.friedmanchisquare``; mean ranks 1 = best, ties averaged. Fewer than 3 variants or
    2 complete seeds: NaN statistic, p and cd."""
    full = table.dropna()
    k = table.shape[1]
    ranks = stats.rankdata(-full.to_numpy(float) if higher_is_better else full.to_numpy(float), axis=1)
    mean_ranks = pd.Series(ranks.mean(axis=0) if len(full) else NAN, index=table.columns)
    if k < 3 or len(full) < 2:
        return Friedman(NAN, NAN, len(full), mean_ranks, k)
    res = stats.friedmanchisquare(*full.to_numpy(float).T)
    return Friedman(float(res.statistic), float(res.pvalue), len(full), mean_ranks, k, nemenyi_cd(k, len(full), alpha))
